package gateway_test

import (
	"context"
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/occ/internal/gateway"
	"github.com/openclaw/occ/internal/gateway/emulator"
	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
)

// The pinned Gateway (OpenShell v0.1.3-pre.2) drops its in-flight requests shortly after it
// starts: the connection closes without an answer. These tests put the emulator in that state
// for a window of its (fake) clock and check that occ's first calls ride it out.

// startupWindow is how long the emulated Gateway drops connections after it starts.
const startupWindow = 10 * time.Second

// patientRetry keeps retrying far longer than any test waits for the window to close, so the
// moment the test closes it is never a race with the client giving up.
var patientRetry = gateway.RetryPolicy{InitialBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond, MaxAttempts: 100000}

// droppingGateway starts an emulator whose clock stands still and that drops, after executing
// it, every call of method (every method when empty) until the test advances the clock past
// the startup window.
func droppingGateway(t *testing.T, method string) (*target, *emulator.FakeClock) {
	t.Helper()
	clock := emulator.NewFakeClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	tg := newTarget(t, emulator.Options{Clock: clock.Now, Faults: []emulator.Fault{
		{Method: method, Kind: emulator.FaultDropConnection, Window: startupWindow, AfterCommit: true},
	}})
	tg.emulatorOnly(t, "makes the emulator drop its connections after start")
	return tg, clock
}

// rideOut runs call while the gateway drops connections, lets n calls of method be dropped,
// closes the window and returns call's result.
func rideOut(t *testing.T, tg *target, clock *emulator.FakeClock, method string, n int, call func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- call() }()
	waitForCalls(t, tg.emu, method, n)
	clock.Advance(startupWindow)
	return <-done
}

// dropped counts the journaled calls of method that the startup fault dropped.
func dropped(emu *emulator.Server, method string) int {
	n := 0
	for _, c := range emu.Journal().Method(method) {
		if c.Fault == emulator.FaultDropConnection {
			n++
		}
	}
	return n
}

// `occ dev up`'s Health check and the first call of every `occ sandbox` command: Health is
// retried over the dropped connections until the Gateway answers.
func TestConformanceStartupDropsHealthIsRetried(t *testing.T) {
	tg, clock := droppingGateway(t, "")
	c := tg.client(t, func(cfg *gateway.Config) { cfg.Retry = patientRetry })
	ctx := testContext(t)
	var h *gateway.Health
	err := rideOut(t, tg, clock, "Health", 3, func() error {
		var err error
		h, err = c.Health(ctx)
		return err
	})
	if err != nil || !h.Healthy() {
		t.Fatalf("Health across the startup drops = %+v, %v; want HEALTHY", h, err)
	}
	calls := tg.emu.Journal().Method("Health")
	if n := dropped(tg.emu, "Health"); n < 3 || n != len(calls)-1 || calls[len(calls)-1].Fault != emulator.FaultNone {
		t.Fatalf("Health calls = %+v, want the dropped ones and then one answered", calls)
	}
}

// `occ sandbox provision` right after `occ dev up`: the Gateway creates the sandbox and drops
// the connection, again and again; every retry carries the revision's request_id, so the
// Gateway answers each with the replay of the first success and exactly one sandbox exists.
func TestConformanceStartupDropsCreateSandboxReplays(t *testing.T) {
	tg, clock := droppingGateway(t, "CreateSandbox")
	c := tg.client(t, func(cfg *gateway.Config) { cfg.Retry = patientRetry })
	ctx := testContext(t)
	ws := tg.workspace(t, c)
	req := sandboxRequest(ws, "sb-startup")
	var res *gateway.CreateSandboxResult
	err := rideOut(t, tg, clock, "CreateSandbox", 3, func() error {
		var err error
		res, err = c.CreateSandbox(ctx, req)
		return err
	})
	if err != nil {
		t.Fatalf("CreateSandbox across the startup drops: %v", err)
	}
	if !res.Created || !res.Replayed || res.RequestID != req.RevisionUUID {
		t.Fatalf("result = %+v, want created through the replay of the revision UUID %s", res, req.RevisionUUID)
	}
	calls := tg.emu.Journal().Method("CreateSandbox")
	for _, call := range calls {
		if id := call.Request.(*pb.CreateSandboxRequest).GetRequestId(); id != req.RevisionUUID {
			t.Fatalf("a retry used request_id %s, want the revision UUID %s on every attempt", id, req.RevisionUUID)
		}
	}
	last := calls[len(calls)-1]
	if dropped(tg.emu, "CreateSandbox") != len(calls)-1 || !last.Replayed {
		t.Fatalf("CreateSandbox calls = %+v, want dropped attempts and then an answered replay", calls)
	}
	assertOneSandbox(t, tg, c, ws, "sb-startup", res.Sandbox.ID)
}

// The Gateway created the sandbox but stopped before recording the success, so the retry of
// the same request_id is refused as REQUEST_OUTCOME_UNCERTAIN. CreateSandbox reads the
// sandbox instead of trying another id and returns it as existing (for the caller to verify).
func TestConformanceStartupDropCreateSandboxUncertain(t *testing.T) {
	tg := newTarget(t, emulator.Options{})
	tg.emulatorOnly(t, "drops a connection after an unrecorded commit")
	c := tg.client(t, fastRetry)
	ctx := testContext(t)
	ws := tg.workspace(t, c)
	tg.emu.Inject(emulator.Fault{Method: "CreateSandbox", Kind: emulator.FaultDropConnection, AfterCommit: true, OutcomeUnrecorded: true})
	req := sandboxRequest(ws, "sb-uncertain")
	res, err := c.CreateSandbox(ctx, req)
	if err != nil {
		t.Fatalf("CreateSandbox after an unrecorded commit: %v", err)
	}
	if res.Created || res.Sandbox == nil {
		t.Fatalf("result = %+v, want the existing sandbox (Created=false)", res)
	}
	calls := tg.emu.Journal().Method("CreateSandbox")
	if len(calls) != 2 || calls[0].Fault != emulator.FaultDropConnection {
		t.Fatalf("CreateSandbox calls = %+v, want the dropped one and one refused retry", calls)
	}
	for _, call := range calls {
		if id := call.Request.(*pb.CreateSandboxRequest).GetRequestId(); id != req.RevisionUUID {
			t.Fatalf("request_id %s was sent, want only the revision UUID %s", id, req.RevisionUUID)
		}
	}
	assertOneSandbox(t, tg, c, ws, "sb-uncertain", res.Sandbox.ID)
}

// A caller's bound (the startup timeout) ends before the next retry could start: the call
// returns the Gateway's failure at once instead of sleeping into the deadline.
func TestConformanceRetryStopsAtTheCallersDeadline(t *testing.T) {
	tg := newTarget(t, emulator.Options{})
	tg.emulatorOnly(t, "keeps dropping connections")
	c := tg.client(t, func(cfg *gateway.Config) {
		cfg.Retry = gateway.RetryPolicy{InitialBackoff: time.Hour, MaxBackoff: time.Hour, MaxAttempts: 5}
	})
	tg.emu.Inject(emulator.Fault{Method: "Health", Kind: emulator.FaultDropConnection, Count: -1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := c.Health(ctx)
	var gerr *gateway.Error
	if !gateway.IsUnavailable(err) || !errors.As(err, &gerr) || gerr.Attempts != 1 || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Health = %v, want the dropped connection's UNAVAILABLE after 1 attempt, not the deadline", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the call waited for the caller's deadline")
	}
	if n := len(tg.emu.Journal().Method("Health")); n != 1 {
		t.Fatalf("gateway saw %d Health calls, want 1", n)
	}
}

// assertOneSandbox checks that the gateway holds exactly the sandbox id under name and that
// exactly one Harness Pod exists for it.
func assertOneSandbox(t *testing.T, tg *target, c *gateway.Client, ws, name, id string) {
	t.Helper()
	ctx := testContext(t)
	sb, err := c.GetSandbox(ctx, ws, name)
	if err != nil || sb.ID != id {
		t.Fatalf("GetSandbox = %+v, %v; want the one sandbox %s", sb, err, id)
	}
	pods, err := tg.kube.CoreV1().Pods(ws).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("Harness Pods in %s = %d (%v), want exactly 1", ws, len(pods.Items), err)
	}
	if _, err := c.DeleteSandbox(ctx, ws, name); err != nil {
		t.Fatalf("DeleteSandbox: %v", err)
	}
}
