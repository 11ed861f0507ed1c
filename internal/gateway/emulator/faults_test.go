package emulator

import (
	"context"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"

	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
)

// The gateway commits CreateSandbox but the response is lost: the client sees UNAVAILABLE, the
// sandbox exists, and a retry with the same request_id replays instead of creating a duplicate.
func TestFaultDropResponseAfterCommit(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s)
	ctx := ctxT(t)
	s.Inject(Fault{Method: "CreateSandbox", Kind: FaultDropResponse})
	req := &pb.CreateSandboxRequest{Name: "box", Spec: minimalSpec(), RequestId: rid()}
	_, err := c.CreateSandbox(ctx, req)
	wantCode(t, err, codes.Unavailable)
	if _, ok := s.SandboxID(DefaultWorkspace, "box"); !ok {
		t.Fatal("the dropped create was not committed")
	}
	resp, err := c.CreateSandbox(ctx, req)
	mustNot(t, err)
	calls := s.Journal().Method("CreateSandbox")
	if len(calls) != 2 || calls[0].Fault != FaultDropResponse || calls[0].Code != codes.Unavailable || !calls[1].Replayed {
		t.Fatalf("journal = %+v", calls)
	}
	id, _ := s.SandboxID(DefaultWorkspace, "box")
	if resp.GetSandbox().GetMetadata().GetId() != id {
		t.Fatal("the retry answered with another sandbox")
	}
}

// The lost response can also surface as the client's own deadline.
func TestFaultDropResponseDeadline(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s)
	s.Inject(Fault{Method: "CreateWorkspace", Kind: FaultDropResponse, Code: codes.DeadlineExceeded})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := c.CreateWorkspace(ctx, &pb.CreateWorkspaceRequest{Name: "team-d", RequestId: rid()})
	wantCode(t, err, codes.DeadlineExceeded)
	got, err := c.GetWorkspace(ctxT(t), &pb.GetWorkspaceRequest{Name: "team-d"})
	mustNot(t, err)
	if got.GetWorkspace().GetStatus().GetPhase() != pb.WorkspacePhase_WORKSPACE_PHASE_ACTIVE {
		t.Fatalf("workspace = %v", got.GetWorkspace())
	}
}

// UNAVAILABLE and RESOURCE_EXHAUSTED faults refuse before anything executes, for Count calls
// of the named method only.
func TestFaultRefusalsAreCountLimited(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s)
	ctx := ctxT(t)
	s.Inject(Fault{Method: "CreateWorkspace", Kind: FaultUnavailable, Count: 2})
	s.Inject(Fault{Method: "CreateWorkspace", Kind: FaultResourceExhausted})
	req := &pb.CreateWorkspaceRequest{Name: "team-e", RequestId: rid()}
	for i := 0; i < 2; i++ {
		_, err := c.CreateWorkspace(ctx, req)
		st := wantReason(t, err, codes.Unavailable, ReasonGatewayNotReady)
		var retry *errdetails.RetryInfo
		for _, d := range st.Details() {
			if r, ok := d.(*errdetails.RetryInfo); ok {
				retry = r
			}
		}
		if retry == nil {
			t.Fatal("UNAVAILABLE carries no RetryInfo")
		}
	}
	// Another method is not affected by the queued faults.
	if _, err := c.Health(ctx, &pb.HealthRequest{}); err != nil {
		t.Fatalf("Health: %v", err)
	}
	_, err := c.CreateWorkspace(ctx, req)
	st := wantCode(t, err, codes.ResourceExhausted)
	if st.Message() != "gRPC rate limit exceeded" {
		t.Fatalf("message %q", st.Message())
	}
	_, err = c.GetWorkspace(ctx, &pb.GetWorkspaceRequest{Name: "team-e"})
	wantCode(t, err, codes.NotFound)
	if s.Admissions() != 0 {
		t.Fatal("refused calls were admitted")
	}
	// The faults are used up: the same request now executes once.
	_, err = c.CreateWorkspace(ctx, req)
	mustNot(t, err)
}

// Latency past the client's deadline ends the call with nothing executed.
func TestFaultLatency(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s)
	s.Inject(Fault{Method: "CreateWorkspace", Kind: FaultLatency, Delay: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.CreateWorkspace(ctx, &pb.CreateWorkspaceRequest{Name: "team-f"})
	wantCode(t, err, codes.DeadlineExceeded)
	_, err = c.GetWorkspace(ctxT(t), &pb.GetWorkspaceRequest{Name: "team-f"})
	wantCode(t, err, codes.NotFound)

	s.Inject(Fault{Method: "Health", Kind: FaultLatency, Delay: 50 * time.Millisecond})
	start := time.Now()
	_, err = c.Health(ctxT(t), &pb.HealthRequest{})
	mustNot(t, err)
	if time.Since(start) < 50*time.Millisecond {
		t.Fatal("the latency fault did not delay the call")
	}
}

// The journal tells reads from mutations, so a test can prove a client refused bad input
// before sending anything that could change the gateway.
func TestJournalMutations(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s)
	ctx := ctxT(t)
	_, _ = c.Health(ctx, &pb.HealthRequest{})
	_, _ = c.GetWorkspace(ctx, &pb.GetWorkspaceRequest{Name: "x"})
	if m := s.Journal().Mutations(); len(m) != 0 {
		t.Fatalf("reads journaled as mutations: %+v", m)
	}
	_, _ = c.DeleteWorkspace(ctx, &pb.DeleteWorkspaceRequest{Name: "x", AllowMissing: true})
	m := s.Journal().Mutations()
	if len(m) != 1 || m[0].Method != "DeleteWorkspace" || m[0].Request.(*pb.DeleteWorkspaceRequest).GetName() != "x" {
		t.Fatalf("mutations = %+v", m)
	}
	if len(s.Journal().Calls()) != 3 {
		t.Fatalf("calls = %d, want 3", len(s.Journal().Calls()))
	}
}

// The pinned Gateway's startup defect: a call in flight when it drops its connections gets no
// answer at all. The client sees the connection close (UNAVAILABLE from its own transport, not
// a status the server sent), and the next call opens a new connection and is served.
func TestFaultDropConnection(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s)
	ctx := ctxT(t)
	s.Inject(Fault{Method: "Health", Kind: FaultDropConnection})
	_, err := c.Health(ctx, &pb.HealthRequest{})
	st := wantCode(t, err, codes.Unavailable)
	if st.Message() == errConnectionDropped.Error() || len(st.Details()) != 0 {
		t.Fatalf("the client received a status from the server (%q), not a closed connection", st.Message())
	}
	if _, err := c.Health(ctx, &pb.HealthRequest{}); err != nil {
		t.Fatalf("Health on a new connection: %v", err)
	}
	calls := s.Journal().Method("Health")
	if len(calls) != 2 || calls[0].Fault != FaultDropConnection || calls[0].Code != codes.Unavailable || calls[1].Code != codes.OK {
		t.Fatalf("journal = %+v", calls)
	}

	// Without AfterCommit the call is dropped before it executes.
	s.Inject(Fault{Method: "CreateWorkspace", Kind: FaultDropConnection})
	_, err = c.CreateWorkspace(ctx, &pb.CreateWorkspaceRequest{Name: "team-g", RequestId: rid()})
	wantCode(t, err, codes.Unavailable)
	_, err = c.GetWorkspace(ctx, &pb.GetWorkspaceRequest{Name: "team-g"})
	wantCode(t, err, codes.NotFound)
}

// The Gateway drops its connections for a window after it starts: every call inside the window
// is dropped, whatever its method and however many there are, and none after it.
func TestFaultDropConnectionWindow(t *testing.T) {
	clock := NewFakeClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	s := StartT(t, Options{Clock: clock.Now})
	c := dial(t, s)
	ctx := ctxT(t)
	s.Inject(Fault{Kind: FaultDropConnection, Window: 10 * time.Second})
	for range 3 {
		_, err := c.Health(ctx, &pb.HealthRequest{})
		wantCode(t, err, codes.Unavailable)
	}
	_, err := c.GetWorkspace(ctx, &pb.GetWorkspaceRequest{Name: DefaultWorkspace})
	wantCode(t, err, codes.Unavailable)
	clock.Advance(9 * time.Second)
	_, err = c.Health(ctx, &pb.HealthRequest{})
	wantCode(t, err, codes.Unavailable)

	clock.Advance(time.Second)
	if _, err := c.Health(ctx, &pb.HealthRequest{}); err != nil {
		t.Fatalf("Health after the window: %v", err)
	}
	if _, err := c.GetWorkspace(ctx, &pb.GetWorkspaceRequest{Name: DefaultWorkspace}); err != nil {
		t.Fatalf("GetWorkspace after the window: %v", err)
	}
	dropped := 0
	for _, call := range s.Journal().Calls() {
		if call.Fault == FaultDropConnection {
			dropped++
		}
	}
	if dropped != 5 {
		t.Fatalf("%d calls were dropped, want the 5 inside the window", dropped)
	}
}

// A request the Gateway had already served when it dropped the connection: the change exists,
// and the same request_id sent again is answered by the replay of that success.
func TestFaultDropConnectionAfterCommit(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s)
	ctx := ctxT(t)
	s.Inject(Fault{Method: "CreateSandbox", Kind: FaultDropConnection, AfterCommit: true})
	req := &pb.CreateSandboxRequest{Name: "box", Spec: minimalSpec(), RequestId: rid()}
	_, err := c.CreateSandbox(ctx, req)
	wantCode(t, err, codes.Unavailable)
	id, ok := s.SandboxID(DefaultWorkspace, "box")
	if !ok {
		t.Fatal("the call dropped after commit created no sandbox")
	}
	resp, err := c.CreateSandbox(ctx, req)
	mustNot(t, err)
	if resp.GetSandbox().GetMetadata().GetId() != id {
		t.Fatal("the retry answered with another sandbox")
	}
	calls := s.Journal().Method("CreateSandbox")
	if len(calls) != 2 || calls[0].Fault != FaultDropConnection || !calls[1].Replayed {
		t.Fatalf("journal = %+v", calls)
	}
}

// The Gateway stopped after it created the sandbox but before it recorded the success: the
// sandbox exists, and the same request_id is refused as REQUEST_OUTCOME_UNCERTAIN.
func TestFaultDropConnectionOutcomeUnrecorded(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s)
	ctx := ctxT(t)
	s.Inject(Fault{Method: "CreateSandbox", Kind: FaultDropConnection, AfterCommit: true, OutcomeUnrecorded: true})
	req := &pb.CreateSandboxRequest{Name: "box", Spec: minimalSpec(), RequestId: rid()}
	_, err := c.CreateSandbox(ctx, req)
	wantCode(t, err, codes.Unavailable)
	if _, ok := s.SandboxID(DefaultWorkspace, "box"); !ok {
		t.Fatal("the call dropped after commit created no sandbox")
	}
	_, err = c.CreateSandbox(ctx, req)
	wantReason(t, err, codes.FailedPrecondition, ReasonRequestOutcomeUncertain)
}
