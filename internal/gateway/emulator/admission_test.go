package emulator

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
)

// A driver retries CreateSandbox with the same request_id: the gateway replays the original
// success with the openshell-replayed header and creates nothing new.
func TestCreateSandboxReplay(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s)
	ctx := ctxT(t)
	id := rid()
	req := &pb.CreateSandboxRequest{Name: "box", Spec: minimalSpec(), RequestId: id,
		ServiceExposures: []*pb.SandboxServiceExposure{{Service: "app", TargetPort: 8080, AuthorizationMode: pb.ServiceAuthorizationMode_SERVICE_AUTHORIZATION_MODE_STRIP}}}
	var hdr metadata.MD
	first, err := c.CreateSandbox(ctx, req, grpc.Header(&hdr))
	mustNot(t, err)
	if hdr.Get(ReplayedHeader) != nil {
		t.Fatalf("a first execution must not carry %s", ReplayedHeader)
	}
	if first.GetServiceUrls()["app"] == "" {
		t.Fatalf("create must return the service URL, got %v", first.GetServiceUrls())
	}
	// The request_id is compared case-insensitively.
	retry := proto.Clone(req).(*pb.CreateSandboxRequest)
	retry.RequestId = strings.ToUpper(id)
	second, err := c.CreateSandbox(ctx, retry, grpc.Header(&hdr))
	mustNot(t, err)
	if got := hdr.Get(ReplayedHeader); len(got) != 1 || got[0] != "true" {
		t.Fatalf("replay header = %v, want [true]", got)
	}
	if second.GetSandbox().GetMetadata().GetId() != first.GetSandbox().GetMetadata().GetId() {
		t.Fatalf("replay returned another sandbox")
	}
	// Unconfirmed upstream detail, emulated by default: a replay carries no service_urls.
	if len(second.GetServiceUrls()) != 0 {
		t.Fatalf("replay service_urls = %v, want none", second.GetServiceUrls())
	}
	calls := s.Journal().Method("CreateSandbox")
	if len(calls) != 2 || calls[0].Replayed || !calls[1].Replayed {
		t.Fatalf("journal = %+v, want one execution and one replay", calls)
	}
}

// Same request_id, different payload: refused with REQUEST_ID_PAYLOAD_MISMATCH; map order in
// the payload does not count as a difference.
func TestReplayPayloadMismatch(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s)
	ctx := ctxT(t)
	id := rid()
	req := &pb.CreateSandboxRequest{Name: "box", Spec: minimalSpec(), RequestId: id, Labels: map[string]string{"a": "1", "b": "2", "c": "3"}}
	_, err := c.CreateSandbox(ctx, req)
	mustNot(t, err)
	same := proto.Clone(req).(*pb.CreateSandboxRequest)
	same.Labels = map[string]string{"c": "3", "b": "2", "a": "1"}
	if _, err := c.CreateSandbox(ctx, same); err != nil {
		t.Fatalf("a reordered map is the same payload: %v", err)
	}
	changed := proto.Clone(req).(*pb.CreateSandboxRequest)
	changed.Spec.Command = []string{"/bin/other"}
	_, err = c.CreateSandbox(ctx, changed)
	st := wantReason(t, err, codes.FailedPrecondition, ReasonRequestIDPayloadMismatch)
	if st.Message() != MsgRequestIDPayloadMismatch {
		t.Fatalf("message %q", st.Message())
	}
}

// An attempt that errored (here ALREADY_EXISTS) leaves an unresolved claim: every retry with
// that request_id is REQUEST_OUTCOME_UNCERTAIN, and the claim never expires.
func TestReplayOutcomeUncertainAfterError(t *testing.T) {
	clock := NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := StartT(t, Options{Clock: clock.Now})
	c := dial(t, s)
	ctx := ctxT(t)
	createSandbox(ctx, t, c, DefaultWorkspace, "taken")
	req := &pb.CreateSandboxRequest{Name: "taken", Spec: minimalSpec(), RequestId: rid()}
	_, err := c.CreateSandbox(ctx, req)
	wantCode(t, err, codes.AlreadyExists)
	_, err = c.CreateSandbox(ctx, req)
	st := wantReason(t, err, codes.FailedPrecondition, ReasonRequestOutcomeUncertain)
	if st.Message() != MsgRequestOutcomeUncertain {
		t.Fatalf("message %q", st.Message())
	}
	clock.Advance(30 * 24 * time.Hour)
	_, err = c.CreateSandbox(ctx, req)
	wantReason(t, err, codes.FailedPrecondition, ReasonRequestOutcomeUncertain)
}

// A recorded success replays for 24 h; after that the same request_id is a new request and
// executes again (here: the name is taken, so ALREADY_EXISTS).
func TestReplayWindowExpires(t *testing.T) {
	clock := NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := StartT(t, Options{Clock: clock.Now})
	c := dial(t, s)
	ctx := ctxT(t)
	req := &pb.CreateSandboxRequest{Name: "box", Spec: minimalSpec(), RequestId: rid()}
	_, err := c.CreateSandbox(ctx, req)
	mustNot(t, err)
	clock.Advance(ReplayWindow - time.Second)
	if _, err := c.CreateSandbox(ctx, req); err != nil {
		t.Fatalf("replay inside the window: %v", err)
	}
	clock.Advance(time.Second)
	_, err = c.CreateSandbox(ctx, req)
	wantCode(t, err, codes.AlreadyExists)
}

// The replayed success no longer matches the world: the sandbox was deleted (and recreated
// under the same name), or the gateway key rotated. The request is not executed again.
func TestReplayUnavailable(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s)
	ctx := ctxT(t)
	req := &pb.CreateSandboxRequest{Name: "box", Spec: minimalSpec(), RequestId: rid()}
	_, err := c.CreateSandbox(ctx, req)
	mustNot(t, err)
	_, err = c.DeleteSandbox(ctx, &pb.DeleteSandboxRequest{Name: "box"})
	mustNot(t, err)
	createSandbox(ctx, t, c, DefaultWorkspace, "box")
	_, err = c.CreateSandbox(ctx, req)
	st := wantReason(t, err, codes.FailedPrecondition, ReasonRequestReplayUnavailable)
	if st.Message() != MsgRequestReplayUnavailable {
		t.Fatalf("message %q", st.Message())
	}

	req2 := &pb.CreateSandboxRequest{Name: "box-2", Spec: minimalSpec(), RequestId: rid()}
	_, err = c.CreateSandbox(ctx, req2)
	mustNot(t, err)
	s.RotateReplayKey()
	_, err = c.CreateSandbox(ctx, req2)
	wantReason(t, err, codes.FailedPrecondition, ReasonRequestReplayUnavailable)
	// Workspace methods fingerprint without key material and survive a rotation.
	wreq := &pb.CreateWorkspaceRequest{Name: "team-k", RequestId: rid()}
	_, err = c.CreateWorkspace(ctx, wreq)
	mustNot(t, err)
	s.RotateReplayKey()
	if _, err := c.CreateWorkspace(ctx, wreq); err != nil {
		t.Fatalf("workspace replay after key rotation: %v", err)
	}
}

// A gateway without readable key material refuses request_id on protected methods before any
// work; without a request_id the call runs normally.
func TestReplayNeedsKeyMaterial(t *testing.T) {
	s := StartT(t, Options{NoReplayKeyMaterial: true})
	c := dial(t, s)
	ctx := ctxT(t)
	_, err := c.CreateSandbox(ctx, &pb.CreateSandboxRequest{Name: "box", Spec: minimalSpec(), RequestId: rid()})
	st := wantReason(t, err, codes.FailedPrecondition, ReasonRequestReplayUnavailable)
	if st.Message() != MsgReplayKeyUnavailable {
		t.Fatalf("message %q", st.Message())
	}
	if _, ok := s.SandboxID(DefaultWorkspace, "box"); ok {
		t.Fatal("the refused create made a sandbox")
	}
	createWorkspace(ctx, t, c, "team-n") // plain SHA-256: unaffected
	if _, err := c.CreateSandbox(ctx, &pb.CreateSandboxRequest{Name: "box", Spec: minimalSpec()}); err != nil {
		t.Fatalf("create without request_id: %v", err)
	}
}

// Malformed request ids are refused before admission.
func TestRequestIDValidation(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s)
	ctx := ctxT(t)
	for _, id := range []string{"abc", "00000000-0000-0000-0000-000000000000", "0123456789abcdef0123456789abcdef", "{0f8b2a4e-1c2d-4e5f-8a9b-0c1d2e3f4a5b}"} {
		_, err := c.CreateSandbox(ctx, &pb.CreateSandboxRequest{Name: "box", Spec: minimalSpec(), RequestId: id})
		st := wantReason(t, err, codes.InvalidArgument, ReasonInvalidArgument)
		if st.Message() != MsgRequestIDInvalid {
			t.Fatalf("%q: message %q", id, st.Message())
		}
	}
	if s.Admissions() != 0 {
		t.Fatalf("refused ids were admitted: %d", s.Admissions())
	}
}

// A caller holding the limit of admissions (unresolved ones included) is refused with the
// admission-limit RESOURCE_EXHAUSTED; expired successes are pruned to make room.
func TestAdmissionLimit(t *testing.T) {
	clock := NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := StartT(t, Options{AdmissionLimit: 3, Clock: clock.Now})
	c := dial(t, s)
	ctx := ctxT(t)
	for i := 0; i < 2; i++ {
		createSandbox(ctx, t, c, DefaultWorkspace, fmt.Sprintf("box-%d", i))
	}
	// An errored attempt also holds an admission.
	_, err := c.CreateSandbox(ctx, &pb.CreateSandboxRequest{Name: "box-0", Spec: minimalSpec(), RequestId: rid()})
	wantCode(t, err, codes.AlreadyExists)

	_, err = c.CreateSandbox(ctx, &pb.CreateSandboxRequest{Name: "box-9", Spec: minimalSpec(), RequestId: rid()})
	st := wantCode(t, err, codes.ResourceExhausted)
	if !strings.HasPrefix(st.Message(), MsgAdmissionLimitPrefix) || !strings.Contains(st.Message(), "limit of 3 durable request admissions") {
		t.Fatalf("message %q", st.Message())
	}
	if reasonOf(st) != "" {
		t.Fatalf("the admission limit carries no ErrorInfo upstream, got %q", reasonOf(st))
	}
	if _, ok := s.SandboxID(DefaultWorkspace, "box-9"); ok {
		t.Fatal("the refused create made a sandbox")
	}
	// Calls without request_id are not admitted, so the limit does not apply.
	if _, err := c.CreateSandbox(ctx, &pb.CreateSandboxRequest{Name: "box-8", Spec: minimalSpec()}); err != nil {
		t.Fatalf("create without request_id: %v", err)
	}
	// The two successes expire; the unresolved claim stays, leaving room for two more.
	clock.Advance(ReplayWindow)
	for i := 10; i < 12; i++ {
		createSandbox(ctx, t, c, DefaultWorkspace, fmt.Sprintf("box-%d", i))
	}
	_, err = c.CreateSandbox(ctx, &pb.CreateSandboxRequest{Name: "box-12", Spec: minimalSpec(), RequestId: rid()})
	wantCode(t, err, codes.ResourceExhausted)
}

// The default limit is the gateway's 1000, and its message carries the number the driver's
// refusal quotes.
func TestAdmissionLimitDefault(t *testing.T) {
	s := StartT(t, Options{})
	if s.opts.AdmissionLimit != 1000 {
		t.Fatalf("default admission limit = %d", s.opts.AdmissionLimit)
	}
	if msg := admissionLimitMessage(s.opts.AdmissionLimit); !strings.Contains(msg, "limit of 1000 durable request admissions") {
		t.Fatalf("message %q", msg)
	}
}

// Admissions are per caller: another bearer token has its own budget.
func TestAdmissionLimitPerCaller(t *testing.T) {
	s := StartT(t, Options{AdmissionLimit: 1})
	ctx := ctxT(t)
	a := dial(t, s)
	createSandbox(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer alice"), t, a, DefaultWorkspace, "box-a")
	_, err := a.CreateSandbox(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer alice"), &pb.CreateSandboxRequest{Name: "box-x", Spec: minimalSpec(), RequestId: rid()})
	wantCode(t, err, codes.ResourceExhausted)
	createSandbox(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer bob"), t, a, DefaultWorkspace, "box-b")
}
