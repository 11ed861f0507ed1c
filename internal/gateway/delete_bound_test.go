package gateway

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/openclaw/occ/internal/gateway/openshellv1"
)

// stuckDeleteGateway acknowledges a sandbox delete but never finishes it, like a Harness Pod
// stuck on a finalizer.
type stuckDeleteGateway struct {
	openshellv1.UnimplementedOpenShellServer
}

func (stuckDeleteGateway) DeleteSandbox(context.Context, *openshellv1.DeleteSandboxRequest) (*openshellv1.DeleteSandboxResponse, error) {
	return &openshellv1.DeleteSandboxResponse{Outcome: OutcomeAccepted, SandboxId: "id-1"}, nil
}

func (stuckDeleteGateway) GetSandbox(_ context.Context, req *openshellv1.GetSandboxRequest) (*openshellv1.SandboxResponse, error) {
	return &openshellv1.SandboxResponse{Sandbox: &openshellv1.Sandbox{
		Metadata: &openshellv1.ObjectMeta{Id: "id-1", Name: req.GetName()},
		Status:   &openshellv1.SandboxStatus{Phase: SandboxPhaseDeleting},
	}}, nil
}

// A sandbox that is still DELETING when DeleteSandbox's own bound expires is reported as the
// gateway being unavailable (retry the delete later), not as the caller's cancellation.
func TestDeleteSandboxBoundExpires(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	openshellv1.RegisterOpenShellServer(srv, stuckDeleteGateway{})
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	c, err := Dial(context.Background(), Config{Endpoint: lis.Addr().String(), InsecureTransport: InsecureTransportNetworkPolicy, RequestTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	c.deleteBound = 1500 * time.Millisecond

	_, err = c.DeleteSandbox(context.Background(), "w", "sb")
	var te *DeleteTimeoutError
	if !errors.As(err, &te) || !IsUnavailable(err) || te.Bound != 1500*time.Millisecond {
		t.Fatalf("DeleteSandbox of a stuck sandbox = %v, want a DeleteTimeoutError after 1.5s", err)
	}
	if !strings.Contains(err.Error(), "OpenShell DeleteSandbox sb: the sandbox was not gone within 1.5s") || !strings.Contains(err.Error(), "retry the delete") {
		t.Fatalf("error %q does not say what timed out and what to do", err)
	}
}
