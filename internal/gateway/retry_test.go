package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/openclaw/occ/internal/gateway/emulator"
	"github.com/openclaw/occ/internal/gateway/openshellv1"
)

// A mutation sent without a request_id has no replay to fall back on: after the Gateway drops
// the connection it is reported, not sent a second time, while the same mutation carrying a
// request_id is retried and answered by the replay.
func TestMutationWithoutRequestIDIsNotRetried(t *testing.T) {
	emu := emulator.StartT(t, emulator.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Dial(ctx, Config{Endpoint: emu.Addr(), InsecureTransport: InsecureTransportNetworkPolicy,
		Retry: RetryPolicy{InitialBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond, MaxAttempts: 4}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	drop := emulator.Fault{Method: "CreateWorkspace", Kind: emulator.FaultDropConnection, AfterCommit: true}

	emu.Inject(drop)
	_, res, err := invoke(ctx, c, "CreateWorkspace", &openshellv1.CreateWorkspaceRequest{Name: "team-once"}, callOptions{}, c.rpc.CreateWorkspace)
	if !IsUnavailable(err) || res.attempts != 1 {
		t.Fatalf("CreateWorkspace without a request_id = %v after %d attempts, want UNAVAILABLE after 1", err, res.attempts)
	}
	if n := len(emu.Journal().Method("CreateWorkspace")); n != 1 {
		t.Fatalf("the gateway saw %d CreateWorkspace calls, want 1", n)
	}

	emu.Inject(drop)
	req := &openshellv1.CreateWorkspaceRequest{Name: "team-twice", RequestId: NewRequestID()}
	_, res, err = invoke(ctx, c, "CreateWorkspace", req, callOptions{replay: true}, c.rpc.CreateWorkspace)
	if err != nil || res.attempts != 2 || !res.replayed {
		t.Fatalf("CreateWorkspace with a request_id = %v after %d attempts (replayed %v), want the replay on attempt 2", err, res.attempts, res.replayed)
	}
}

// Which requests may be sent again after an unknown outcome.
func TestRepeatable(t *testing.T) {
	cases := []struct {
		method string
		req    any
		want   bool
	}{
		{"Health", &openshellv1.HealthRequest{}, true},
		{"GetSandbox", &openshellv1.GetSandboxRequest{Name: "sb"}, true},
		{"DeleteSandbox", &openshellv1.DeleteSandboxRequest{Name: "sb"}, true},
		{"CreateSandbox", &openshellv1.CreateSandboxRequest{Name: "sb", RequestId: NewRequestID()}, true},
		{"CreateSandbox", &openshellv1.CreateSandboxRequest{Name: "sb"}, false},
		{"DeleteWorkspace", &openshellv1.DeleteWorkspaceRequest{Name: "w", AllowMissing: true}, false},
		{"RotateProviderCredential", &openshellv1.RotateProviderCredentialRequest{Provider: "p"}, false},
		{"ExposeService", &openshellv1.ExposeServiceRequest{Sandbox: "sb"}, false},
	}
	for _, tc := range cases {
		if got := repeatable(tc.method, tc.req); got != tc.want {
			t.Errorf("repeatable(%s, %v) = %v, want %v", tc.method, tc.req, got, tc.want)
		}
	}
	// Every read of the service is repeatable without a request_id.
	methods := openshellv1.File_openshell_proto.Services().ByName("OpenShell").Methods()
	for i := range methods.Len() {
		name := string(methods.Get(i).Name())
		if name == "Health" || strings.HasPrefix(name, "Get") || strings.HasPrefix(name, "List") {
			if !repeatable(name, nil) {
				t.Errorf("read %s is not repeatable", name)
			}
		}
	}
}

// A stream the gateway cancelled while the caller still waits is retried; the caller's own
// cancellation is not.
func TestRetryableCancelledByThePeer(t *testing.T) {
	if !retryable(context.Background(), &Error{Code: codes.Canceled}) {
		t.Fatal("a stream cancelled by the gateway should be retried")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if retryable(ctx, &Error{Code: codes.Canceled}) {
		t.Fatal("the caller's own cancellation must not be retried")
	}
}
