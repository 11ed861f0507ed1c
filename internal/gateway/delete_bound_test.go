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

// pastDeadline is a caller's context whose deadline has passed but whose timer has not fired
// yet: Err is still nil, as on a busy machine.
type pastDeadline struct {
	context.Context
	at time.Time
}

func (c pastDeadline) Deadline() (time.Time, bool) { return c.at, true }

// A call can fail on DeleteSandbox's bound before the bound's timer has fired (gRPC refuses to
// send once the deadline has passed by the clock): past the bound's end, the error is still
// the bound's, unless the caller's own context ended or its deadline came first.
func TestDeleteBoundIsReachedByTheClockBeforeItsTimer(t *testing.T) {
	sent := errors.New("rpc error: code = DeadlineExceeded desc = context deadline exceeded")
	// The bound's own timer is an hour away: only the clock can say the bound was reached.
	bound, cancel := context.WithTimeoutCause(context.Background(), time.Hour, errDeleteBound)
	defer cancel()
	ended := time.Now().Add(-time.Millisecond)
	cancelled, stop := context.WithCancel(context.Background())
	stop()
	for _, tc := range []struct {
		name    string
		caller  context.Context
		end     time.Time
		timeout bool
	}{
		{"past the end, the caller still running", context.Background(), ended, true},
		{"past the end, the caller's later deadline not reached", pastDeadline{context.Background(), ended.Add(time.Hour)}, ended, true},
		{"past the end, the caller cancelled", cancelled, ended, false},
		{"past the end, the caller's own deadline first", pastDeadline{context.Background(), ended.Add(-time.Millisecond)}, ended, false},
		{"before the end", context.Background(), time.Now().Add(time.Hour), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := deleteBoundError(tc.caller, bound, tc.end, "sb", 1500*time.Millisecond, sent)
			var te *DeleteTimeoutError
			if got := errors.As(err, &te); got != tc.timeout {
				t.Fatalf("deleteBoundError = %v, a DeleteTimeoutError: %v, want %v", err, got, tc.timeout)
			}
			if !tc.timeout && err != sent {
				t.Fatalf("deleteBoundError = %v, want the call's own error passed through", err)
			}
		})
	}
}
