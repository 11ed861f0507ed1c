package gateway_test

import (
	"context"
	"testing"

	"github.com/openclaw/occ/internal/gateway"
	"github.com/openclaw/occ/internal/gateway/gatewaytest"
	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
)

// Client overhead: each pair makes the same RPC on the same connection, once through the
// Client (argument checks, deadline, retry loop, error decoding, response translation) and
// once as a bare generated grpc-go stub call. The emulator keeps sandboxes in memory here so
// the apiserver's latency does not drown the difference.

func benchClient(b *testing.B) (*gateway.Client, pb.OpenShellClient, string, string) {
	b.Helper()
	emu := gatewaytest.StartT(b, gatewaytest.Options{})
	c, err := gateway.Dial(context.Background(), gateway.Config{Endpoint: emu.Addr(), InsecureTransport: gateway.InsecureTransportNetworkPolicy})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	ws, sb := "bench", "sb-bench"
	if _, err := c.CreateWorkspace(ctx, ws, nil); err != nil {
		b.Fatal(err)
	}
	req := gateway.CreateSandboxRequest{Workspace: ws, Name: sb, Spec: &pb.SandboxSpec{LogLevel: "info", Command: []string{"sleep", "infinity"}}, RevisionUUID: gateway.NewRequestID()}
	if _, err := c.CreateSandbox(ctx, req); err != nil {
		b.Fatal(err)
	}
	return c, pb.NewOpenShellClient(c.Conn()), ws, sb
}

func BenchmarkHealthClient(b *testing.B) {
	c, _, _, _ := benchClient(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Health(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHealthRaw(b *testing.B) {
	_, raw, _, _ := benchClient(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := raw.Health(ctx, &pb.HealthRequest{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetSandboxClient(b *testing.B) {
	c, _, ws, sb := benchClient(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.GetSandbox(ctx, ws, sb); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGetSandboxRaw(b *testing.B) {
	_, raw, ws, sb := benchClient(b)
	ctx := context.Background()
	req := &pb.GetSandboxRequest{Name: sb, WorkspaceScope: &pb.WorkspaceSelector{Selection: &pb.WorkspaceSelector_Workspace{Workspace: ws}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := raw.GetSandbox(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}
