package emulator

import (
	"net"
	"net/url"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
)

// A Harness exposing its app server at create time gets a service URL on the gateway's own
// port; GetService returns the same endpoint, and GetSandbox leaves service_urls empty.
func TestSandboxServiceExposure(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s)
	ctx := ctxT(t)
	createWorkspace(ctx, t, c, "team-s")
	resp, err := c.CreateSandbox(ctx, &pb.CreateSandboxRequest{Name: "box", WorkspaceScope: scope("team-s"), Spec: minimalSpec(), RequestId: rid(),
		ServiceExposures: []*pb.SandboxServiceExposure{
			{Service: "", TargetPort: 3000, AuthorizationMode: pb.ServiceAuthorizationMode_SERVICE_AUTHORIZATION_MODE_BEARER_PASSTHROUGH},
			{Service: "app", TargetPort: 8080},
		}})
	mustNot(t, err)
	_, port, _ := net.SplitHostPort(s.Addr())
	want := map[string]string{
		"":    "http://team-s--box.openshell.localhost:" + port + "/",
		"app": "http://team-s--box--app.openshell.localhost:" + port + "/",
	}
	for k, v := range want {
		if resp.GetServiceUrls()[k] != v {
			t.Fatalf("service_urls[%q] = %q, want %q", k, resp.GetServiceUrls()[k], v)
		}
		if u, err := url.Parse(v); err != nil || u.Path != "/" {
			t.Fatalf("URL %q is not an origin with path /", v)
		}
	}
	ep, err := c.GetService(ctx, &pb.GetServiceRequest{Sandbox: "box", Name: "app", WorkspaceScope: scope("team-s")})
	mustNot(t, err)
	e := ep.GetEndpoint()
	if ep.GetUrl() != want["app"] || e.GetSandbox() != "box" || e.GetName() != "app" || e.GetTargetPort() != 8080 ||
		e.GetAuthorizationMode() != pb.ServiceAuthorizationMode_SERVICE_AUTHORIZATION_MODE_STRIP || e.GetSandboxId() != resp.GetSandbox().GetMetadata().GetId() {
		t.Fatalf("endpoint = %v", ep)
	}
	_, err = c.GetService(ctx, &pb.GetServiceRequest{Sandbox: "box", Name: "other", WorkspaceScope: scope("team-s")})
	wantCode(t, err, codes.NotFound)
	got, err := c.GetSandbox(ctx, &pb.GetSandboxRequest{Name: "box", WorkspaceScope: scope("team-s")})
	mustNot(t, err)
	if len(got.GetServiceUrls()) != 0 {
		t.Fatalf("GetSandbox service_urls = %v, want empty", got.GetServiceUrls())
	}

	_, err = c.CreateSandbox(ctx, &pb.CreateSandboxRequest{Name: "bad", WorkspaceScope: scope("team-s"), Spec: minimalSpec(),
		ServiceExposures: []*pb.SandboxServiceExposure{{Service: "app", TargetPort: 70000}}})
	wantReason(t, err, codes.InvalidArgument, ReasonInvalidArgument)
}

// In memory (no Kubernetes), a sandbox is PROVISIONING in the create response and READY after;
// a test can pin other phases such as COMPLETED with an exit code.
func TestSandboxInMemoryPhases(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s)
	ctx := ctxT(t)
	created := createSandbox(ctx, t, c, DefaultWorkspace, "box")
	if created.GetSandbox().GetStatus().GetPhase() != pb.SandboxPhase_SANDBOX_PHASE_PROVISIONING {
		t.Fatalf("create phase = %v", created.GetSandbox().GetStatus().GetPhase())
	}
	got, err := c.GetSandbox(ctx, &pb.GetSandboxRequest{Name: "box"})
	mustNot(t, err)
	if got.GetSandbox().GetStatus().GetPhase() != pb.SandboxPhase_SANDBOX_PHASE_READY {
		t.Fatalf("phase = %v", got.GetSandbox().GetStatus().GetPhase())
	}
	if got.GetSandbox().GetSpec().GetTemplate().GetImage() != "example.com/harness:1" {
		t.Fatalf("spec not returned as submitted: %v", got.GetSandbox().GetSpec())
	}
	zero := int32(0)
	mustNot(t, s.SetSandboxPhase(DefaultWorkspace, "box", pb.SandboxPhase_SANDBOX_PHASE_COMPLETED, &zero))
	got, err = c.GetSandbox(ctx, &pb.GetSandboxRequest{Name: "box"})
	mustNot(t, err)
	if got.GetSandbox().GetStatus().GetPhase() != pb.SandboxPhase_SANDBOX_PHASE_COMPLETED || got.GetSandbox().GetStatus().ExitCode == nil {
		t.Fatalf("status = %v", got.GetSandbox().GetStatus())
	}
}

// Sandbox names follow the workspace name rule; reusing a name is ALREADY_EXISTS; an unknown
// workspace is NOT_FOUND and all_workspaces is not accepted for a single sandbox.
func TestSandboxCreateRefusals(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s)
	ctx := ctxT(t)
	for _, name := range []string{"a--b", "twenty-characters-xx", "Box"} {
		_, err := c.CreateSandbox(ctx, &pb.CreateSandboxRequest{Name: name, Spec: minimalSpec()})
		wantReason(t, err, codes.InvalidArgument, ReasonInvalidArgument)
	}
	_, err := c.CreateSandbox(ctx, &pb.CreateSandboxRequest{Name: "box"})
	wantReason(t, err, codes.InvalidArgument, ReasonInvalidArgument)
	createSandbox(ctx, t, c, DefaultWorkspace, "box")
	_, err = c.CreateSandbox(ctx, &pb.CreateSandboxRequest{Name: "box", Spec: minimalSpec()})
	st := wantCode(t, err, codes.AlreadyExists)
	if st.Message() != "sandbox 'box' already exists" {
		t.Fatalf("message %q", st.Message())
	}
	_, err = c.CreateSandbox(ctx, &pb.CreateSandboxRequest{Name: "box2", Spec: minimalSpec(), WorkspaceScope: scope("nowhere")})
	wantCode(t, err, codes.NotFound)
	_, err = c.GetSandbox(ctx, &pb.GetSandboxRequest{Name: "box", WorkspaceScope: &pb.WorkspaceSelector{Selection: &pb.WorkspaceSelector_AllWorkspaces{AllWorkspaces: &pb.AllWorkspaces{}}}})
	wantReason(t, err, codes.InvalidArgument, ReasonInvalidArgument)
}

// DeleteSandbox: NOT_FOUND without allow_missing, ALREADY_ABSENT with it, and a replayed
// delete returns its stored outcome without touching a same-name replacement.
func TestSandboxDeleteReplay(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s)
	ctx := ctxT(t)
	created := createSandbox(ctx, t, c, DefaultWorkspace, "box")
	req := &pb.DeleteSandboxRequest{Name: "box", RequestId: rid()}
	first, err := c.DeleteSandbox(ctx, req)
	mustNot(t, err)
	if first.GetSandboxId() != created.GetSandbox().GetMetadata().GetId() {
		t.Fatalf("sandbox_id = %q", first.GetSandboxId())
	}
	replacement := createSandbox(ctx, t, c, DefaultWorkspace, "box")
	again, err := c.DeleteSandbox(ctx, req)
	mustNot(t, err)
	if again.GetSandboxId() != first.GetSandboxId() || again.GetOutcome() != first.GetOutcome() {
		t.Fatalf("replay = %v, want %v", again, first)
	}
	if id, _ := s.SandboxID(DefaultWorkspace, "box"); id != replacement.GetSandbox().GetMetadata().GetId() {
		t.Fatal("the replayed delete removed the replacement")
	}
	_, err = c.DeleteSandbox(ctx, &pb.DeleteSandboxRequest{Name: "absent"})
	wantCode(t, err, codes.NotFound)
	absent, err := c.DeleteSandbox(ctx, &pb.DeleteSandboxRequest{Name: "absent", AllowMissing: true})
	mustNot(t, err)
	if absent.GetOutcome() != pb.DeletionOutcome_DELETION_OUTCOME_ALREADY_ABSENT || absent.GetSandboxId() != "" {
		t.Fatalf("absent = %v", absent)
	}
}

// Credential refresh state for a provider: configure, rotate, read, delete.
func TestProviderRefresh(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s)
	ctx := ctxT(t)
	_, err := c.GetProviderRefreshStatus(ctx, &pb.GetProviderRefreshStatusRequest{Provider: "llm"})
	wantCode(t, err, codes.NotFound)
	_, err = c.CreateProvider(ctx, providerReq(DefaultWorkspace, "llm"))
	mustNot(t, err)
	conf, err := c.ConfigureProviderRefresh(ctx, &pb.ConfigureProviderRefreshRequest{Provider: "llm", CredentialKey: "OPENAI_API_KEY", RequestId: rid(),
		Strategy: pb.ProviderCredentialRefreshStrategy_PROVIDER_CREDENTIAL_REFRESH_STRATEGY_OAUTH2_REFRESH_TOKEN,
		Material: map[string]string{"refresh_token": canary}, SecretMaterialKeys: []string{"refresh_token"}})
	mustNot(t, err)
	if conf.GetStatus().GetStatus() != RefreshConfigured {
		t.Fatalf("configure = %v", conf)
	}
	rot, err := c.RotateProviderCredential(ctx, &pb.RotateProviderCredentialRequest{Provider: "llm", CredentialKey: "OPENAI_API_KEY"})
	mustNot(t, err)
	if rot.GetStatus().GetStatus() != RefreshRefreshed || rot.GetStatus().GetLastRefreshTime() == nil {
		t.Fatalf("rotate = %v", rot)
	}
	got, err := c.GetProviderRefreshStatus(ctx, &pb.GetProviderRefreshStatusRequest{Provider: "llm"})
	mustNot(t, err)
	if len(got.GetCredentials()) != 1 || got.String() == "" || strings.Contains(got.String(), canary) {
		t.Fatalf("status = %v", got)
	}
	del, err := c.DeleteProviderRefresh(ctx, &pb.DeleteProviderRefreshRequest{Provider: "llm", CredentialKey: "OPENAI_API_KEY", AllowMissing: true})
	mustNot(t, err)
	if del.GetOutcome() != pb.DeletionOutcome_DELETION_OUTCOME_COMPLETED {
		t.Fatalf("delete = %v", del)
	}
}
