package emulator

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
)

// BenchmarkGetSandbox measures one GetSandbox round trip through the emulator (in memory) over
// real loopback gRPC: the floor any client benchmark against the emulator sits on.
func BenchmarkGetSandbox(b *testing.B) {
	s, err := Start(Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	conn, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	c := pb.NewOpenShellClient(conn)
	ctx := context.Background()
	if _, err := c.CreateSandbox(ctx, &pb.CreateSandboxRequest{Name: "box", Spec: minimalSpec()}); err != nil {
		b.Fatal(err)
	}
	req := &pb.GetSandboxRequest{Name: "box"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.GetSandbox(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCreateSandboxAdmitted measures an admitted CreateSandbox (request_id fingerprint,
// admission record) followed by its delete. The clock moves a day per iteration so the
// admission store stays at the gateway's bounded size instead of growing with b.N.
func BenchmarkCreateSandboxAdmitted(b *testing.B) {
	clock := NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := Start(Options{Clock: clock.Now})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	conn, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	c := pb.NewOpenShellClient(conn)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.CreateSandbox(ctx, &pb.CreateSandboxRequest{Name: "box", Spec: minimalSpec(), RequestId: rid()}); err != nil {
			b.Fatal(err)
		}
		if _, err := c.DeleteSandbox(ctx, &pb.DeleteSandboxRequest{Name: "box"}); err != nil {
			b.Fatal(err)
		}
		clock.Advance(ReplayWindow)
	}
}
