package emulator

import (
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"

	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
)

// An operator creates a workspace with ownership labels and reads it back ACTIVE.
func TestWorkspaceCreateGet(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s)
	ctx := ctxT(t)
	resp, err := c.CreateWorkspace(ctx, &pb.CreateWorkspaceRequest{Name: "team-a", Labels: map[string]string{"app.kubernetes.io/managed-by": "openclaw-enterprise"}, RequestId: rid()})
	mustNot(t, err)
	got, err := c.GetWorkspace(ctx, &pb.GetWorkspaceRequest{Name: "team-a"})
	mustNot(t, err)
	ws := got.GetWorkspace()
	if ws.GetStatus().GetPhase() != pb.WorkspacePhase_WORKSPACE_PHASE_ACTIVE {
		t.Fatalf("phase = %v, want ACTIVE", ws.GetStatus().GetPhase())
	}
	if ws.GetMetadata().GetId() == "" || ws.GetMetadata().GetId() != resp.GetWorkspace().GetMetadata().GetId() {
		t.Fatalf("id %q does not match the created %q", ws.GetMetadata().GetId(), resp.GetWorkspace().GetMetadata().GetId())
	}
	if ws.GetMetadata().GetLabels()["app.kubernetes.io/managed-by"] != "openclaw-enterprise" {
		t.Fatalf("labels lost: %v", ws.GetMetadata().GetLabels())
	}
	_, err = c.GetWorkspace(ctx, &pb.GetWorkspaceRequest{Name: "absent"})
	wantCode(t, err, codes.NotFound)
	_, err = c.CreateWorkspace(ctx, &pb.CreateWorkspaceRequest{Name: "team-a", RequestId: rid()})
	wantCode(t, err, codes.AlreadyExists)
}

// Names the gateway cannot join into one DNS label are refused with BadRequest on "name".
func TestWorkspaceNameRules(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s)
	ctx := ctxT(t)
	for _, name := range []string{"", "twenty-characters-xx", "Upper", "a--b", "-lead", "trail-", "under_score"} {
		_, err := c.CreateWorkspace(ctx, &pb.CreateWorkspaceRequest{Name: name})
		st := wantReason(t, err, codes.InvalidArgument, ReasonInvalidArgument)
		var field string
		for _, d := range st.Details() {
			if br, ok := d.(*errdetails.BadRequest); ok && len(br.GetFieldViolations()) > 0 {
				field = br.GetFieldViolations()[0].GetField()
			}
		}
		if field != "name" {
			t.Fatalf("name %q: BadRequest field = %q, want name", name, field)
		}
	}
	if _, err := c.CreateWorkspace(ctx, &pb.CreateWorkspaceRequest{Name: "nineteen-chars-abcd"}); err != nil {
		t.Fatalf("a 19-character name must be accepted: %v", err)
	}
	if n := len(s.Journal().Mutations()); n != 8 {
		t.Fatalf("journal holds %d mutations, want 8", n)
	}
}

// Deleting a workspace that still holds a sandbox is refused, leaves it TERMINATING (no new
// sandboxes), and succeeds once it is empty; deleting it again is ALREADY_ABSENT or NOT_FOUND.
func TestWorkspaceDeleteLifecycle(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s)
	ctx := ctxT(t)
	createWorkspace(ctx, t, c, "team-b")
	createSandbox(ctx, t, c, "team-b", "box-1")

	_, err := c.DeleteWorkspace(ctx, &pb.DeleteWorkspaceRequest{Name: "team-b", RequestId: rid()})
	st := wantCode(t, err, codes.FailedPrecondition)
	if !strings.Contains(st.Message(), "workspace 'team-b' still contains resources") || !strings.Contains(st.Message(), "1 sandbox") {
		t.Fatalf("message %q does not name what remains", st.Message())
	}
	got, err := c.GetWorkspace(ctx, &pb.GetWorkspaceRequest{Name: "team-b"})
	mustNot(t, err)
	if got.GetWorkspace().GetStatus().GetPhase() != pb.WorkspacePhase_WORKSPACE_PHASE_TERMINATING || got.GetWorkspace().GetMetadata().GetDeletionTime() == nil {
		t.Fatalf("workspace after a refused delete: %v, want TERMINATING with a deletion time", got.GetWorkspace())
	}
	_, err = c.CreateSandbox(ctx, &pb.CreateSandboxRequest{Name: "box-2", WorkspaceScope: scope("team-b"), Spec: minimalSpec()})
	st = wantCode(t, err, codes.FailedPrecondition)
	if st.Message() != "workspace 'team-b' is being deleted" {
		t.Fatalf("message %q", st.Message())
	}

	_, err = c.DeleteSandbox(ctx, &pb.DeleteSandboxRequest{Name: "box-1", WorkspaceScope: scope("team-b")})
	mustNot(t, err)
	del, err := c.DeleteWorkspace(ctx, &pb.DeleteWorkspaceRequest{Name: "team-b", RequestId: rid()})
	mustNot(t, err)
	if del.GetOutcome() != pb.DeletionOutcome_DELETION_OUTCOME_COMPLETED {
		t.Fatalf("outcome = %v, want COMPLETED", del.GetOutcome())
	}
	again, err := c.DeleteWorkspace(ctx, &pb.DeleteWorkspaceRequest{Name: "team-b", AllowMissing: true, RequestId: rid()})
	mustNot(t, err)
	if again.GetOutcome() != pb.DeletionOutcome_DELETION_OUTCOME_ALREADY_ABSENT {
		t.Fatalf("outcome = %v, want ALREADY_ABSENT", again.GetOutcome())
	}
	_, err = c.DeleteWorkspace(ctx, &pb.DeleteWorkspaceRequest{Name: "team-b"})
	wantCode(t, err, codes.NotFound)
	_, err = c.DeleteWorkspace(ctx, &pb.DeleteWorkspaceRequest{Name: DefaultWorkspace})
	wantCode(t, err, codes.FailedPrecondition)
}

// A workspace holding only a provider is not empty either.
func TestWorkspaceDeleteRefusedWhileProvidersRemain(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s)
	ctx := ctxT(t)
	createWorkspace(ctx, t, c, "team-c")
	_, err := c.CreateProvider(ctx, &pb.CreateProviderRequest{WorkspaceScope: scope("team-c"), RequestId: rid(),
		Provider: &pb.Provider{Metadata: &pb.ObjectMeta{Name: "github"}, Type: "github", Credentials: map[string]string{"GITHUB_TOKEN": "t"}}})
	mustNot(t, err)
	_, err = c.DeleteWorkspace(ctx, &pb.DeleteWorkspaceRequest{Name: "team-c"})
	st := wantCode(t, err, codes.FailedPrecondition)
	if !strings.Contains(st.Message(), "1 provider") {
		t.Fatalf("message %q does not name the provider", st.Message())
	}
}
