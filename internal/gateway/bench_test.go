package gateway_test

import (
	"context"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/gateway"
	"github.com/openclaw/occ/internal/gateway/emulator"
	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
)

// Client overhead: each pair makes the same RPC on the same connection, once through the
// Client (argument checks, deadline, retry loop, error decoding, response translation) and
// once as a bare generated grpc-go stub call. The emulator keeps sandboxes in memory here so
// the apiserver's latency does not drown the difference.

func benchClient(b *testing.B) (*gateway.Client, pb.OpenShellClient, string, string) {
	b.Helper()
	emu := emulator.StartT(b, emulator.Options{})
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

// BenchmarkOverheadInterleaved alternates client and bare calls inside one loop and reports
// both latencies and their ratio. On a shared, loaded machine the separate benchmarks above
// drift with the neighbours' load; interleaving exposes both paths to the same load, so the
// ratio stays meaningful.
func BenchmarkOverheadInterleaved(b *testing.B) {
	c, raw, ws, sb := benchClient(b)
	ctx := context.Background()
	getReq := &pb.GetSandboxRequest{Name: sb, WorkspaceScope: &pb.WorkspaceSelector{Selection: &pb.WorkspaceSelector_Workspace{Workspace: ws}}}
	var clientHealth, rawHealth, clientGet, rawGet time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		if _, err := c.Health(ctx); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := raw.Health(ctx, &pb.HealthRequest{}); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if _, err := c.GetSandbox(ctx, ws, sb); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		if _, err := raw.GetSandbox(ctx, getReq); err != nil {
			b.Fatal(err)
		}
		t4 := time.Now()
		clientHealth += t1.Sub(t0)
		rawHealth += t2.Sub(t1)
		clientGet += t3.Sub(t2)
		rawGet += t4.Sub(t3)
		n++
	}
	per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(n) }
	b.ReportMetric(per(clientHealth), "health-client-ns")
	b.ReportMetric(per(rawHealth), "health-raw-ns")
	b.ReportMetric(per(clientHealth)/per(rawHealth), "health-ratio")
	b.ReportMetric(per(clientGet), "get-client-ns")
	b.ReportMetric(per(rawGet), "get-raw-ns")
	b.ReportMetric(per(clientGet)/per(rawGet), "get-ratio")
}

// BenchmarkHealthAfterDroppedConnection is one Health call whose first attempt loses its
// connection, as during the pinned Gateway's startup defect: the cost of riding out one drop
// (the reconnect and the retry), with the default retry policy's first backoff included.
func BenchmarkHealthAfterDroppedConnection(b *testing.B) {
	emu := emulator.StartT(b, emulator.Options{})
	c, err := gateway.Dial(context.Background(), gateway.Config{Endpoint: emu.Addr(), InsecureTransport: gateway.InsecureTransportNetworkPolicy})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		emu.Inject(emulator.Fault{Method: "Health", Kind: emulator.FaultDropConnection})
		if _, err := c.Health(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
