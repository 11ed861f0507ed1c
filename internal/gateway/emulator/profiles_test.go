package emulator

import (
	"testing"

	"google.golang.org/grpc/codes"

	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
)

func profile(id string) *pb.ProviderProfile {
	return &pb.ProviderProfile{
		Id: id, DisplayName: "Runtime", Category: pb.ProviderProfileCategory_PROVIDER_PROFILE_CATEGORY_AGENT,
		Credentials: []*pb.ProviderProfileCredential{{Name: "APP_TOKEN", EnvVars: []string{"APP_TOKEN"}, Required: true}},
		Endpoints: []*pb.NetworkEndpoint{{Host: "api.example.com", Port: 443,
			Enforcement: pb.NetworkEnforcementMode_NETWORK_ENFORCEMENT_MODE_ENFORCE, Access: pb.NetworkAccessPreset_NETWORK_ACCESS_PRESET_READ_WRITE}},
		Files: []*pb.ProviderProfileFile{{Path: "/sandbox/.config/app.json", Content: `{"url":"{{config.base_url}}"}`}},
	}
}

// The driver imports its runtime profile into the workspace, then updates it under the
// resource_version fence, then deletes it idempotently.
func TestProfileLifecycle(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s)
	ctx := ctxT(t)
	createWorkspace(ctx, t, c, "team-p")
	_, err := c.GetProviderProfile(ctx, &pb.GetProviderProfileRequest{Id: "occ-runtime", WorkspaceScope: scope("team-p")})
	wantCode(t, err, codes.NotFound)

	imp, err := c.ImportProviderProfiles(ctx, &pb.ImportProviderProfilesRequest{WorkspaceScope: scope("team-p"), RequestId: rid(),
		Profiles: []*pb.ProviderProfileImportItem{{Profile: profile("occ-runtime"), Source: "openclaw-enterprise"}}})
	mustNot(t, err)
	if !imp.GetImported() || len(imp.GetDiagnostics()) != 0 {
		t.Fatalf("import = %v", imp)
	}
	got, err := c.GetProviderProfile(ctx, &pb.GetProviderProfileRequest{Id: "occ-runtime", WorkspaceScope: scope("team-p")})
	mustNot(t, err)
	if got.GetProfile().GetResourceVersion() != 1 || got.GetProfile().GetFiles()[0].GetPath() != "/sandbox/.config/app.json" {
		t.Fatalf("profile = %v", got.GetProfile())
	}
	// The platform scope is separate from the workspace's.
	_, err = c.GetProviderProfile(ctx, &pb.GetProviderProfileRequest{Id: "occ-runtime"})
	wantCode(t, err, codes.NotFound)

	// A second import of the same id is an error diagnostic, not an overwrite.
	dup, err := c.ImportProviderProfiles(ctx, &pb.ImportProviderProfilesRequest{WorkspaceScope: scope("team-p"),
		Profiles: []*pb.ProviderProfileImportItem{{Profile: profile("occ-runtime")}}})
	mustNot(t, err)
	if dup.GetImported() || len(dup.GetDiagnostics()) == 0 || dup.GetDiagnostics()[0].GetSeverity() != DiagnosticError {
		t.Fatalf("duplicate import = %v", dup)
	}

	next := profile("occ-runtime")
	next.DisplayName = "Runtime v2"
	upd, err := c.UpdateProviderProfiles(ctx, &pb.UpdateProviderProfilesRequest{Id: "occ-runtime", ExpectedResourceVersion: 1, WorkspaceScope: scope("team-p"), RequestId: rid(),
		Profile: &pb.ProviderProfileImportItem{Profile: next, Source: "openclaw-enterprise"}})
	mustNot(t, err)
	if !upd.GetUpdated() || upd.GetProfile().GetResourceVersion() != 2 || upd.GetProfile().GetDisplayName() != "Runtime v2" {
		t.Fatalf("update = %v", upd)
	}
	_, err = c.UpdateProviderProfiles(ctx, &pb.UpdateProviderProfilesRequest{Id: "occ-runtime", ExpectedResourceVersion: 1, WorkspaceScope: scope("team-p"),
		Profile: &pb.ProviderProfileImportItem{Profile: next}})
	wantReason(t, err, codes.Aborted, ReasonResourceVersionConflict)

	for _, want := range []pb.DeletionOutcome{pb.DeletionOutcome_DELETION_OUTCOME_COMPLETED, pb.DeletionOutcome_DELETION_OUTCOME_ALREADY_ABSENT} {
		del, err := c.DeleteProviderProfile(ctx, &pb.DeleteProviderProfileRequest{Id: "occ-runtime", WorkspaceScope: scope("team-p"), AllowMissing: true, RequestId: rid()})
		mustNot(t, err)
		if del.GetOutcome() != want {
			t.Fatalf("outcome = %v, want %v", del.GetOutcome(), want)
		}
	}
}

// An import with any invalid profile writes nothing.
func TestProfileImportAllOrNothing(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s)
	ctx := ctxT(t)
	imp, err := c.ImportProviderProfiles(ctx, &pb.ImportProviderProfilesRequest{
		Profiles: []*pb.ProviderProfileImportItem{{Profile: profile("good")}, {Profile: &pb.ProviderProfile{DisplayName: "no id"}}}})
	mustNot(t, err)
	if imp.GetImported() || len(imp.GetProfiles()) != 0 {
		t.Fatalf("import = %v", imp)
	}
	_, err = c.GetProviderProfile(ctx, &pb.GetProviderProfileRequest{Id: "good"})
	wantCode(t, err, codes.NotFound)
}
