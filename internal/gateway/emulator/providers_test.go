package emulator

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
)

const canary = "canary-secret-5f1e2d"

func providerReq(ws, name string) *pb.CreateProviderRequest {
	return &pb.CreateProviderRequest{WorkspaceScope: scope(ws), RequestId: rid(), Provider: &pb.Provider{
		Metadata:         &pb.ObjectMeta{Name: name, Labels: map[string]string{"app.kubernetes.io/managed-by": "openclaw-enterprise"}},
		Type:             "openai",
		ProfileWorkspace: ws,
		Credentials:      map[string]string{"OPENAI_API_KEY": canary},
		Config:           map[string]string{"base_url": "https://api.example.com", "model": "m1"},
	}}
}

// The credential gateway stores a provider: credentials go in, only REDACTED comes back, on
// create, get, list and replay alike.
func TestProviderCredentialsNeverReturned(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s)
	ctx := ctxT(t)
	req := providerReq(DefaultWorkspace, "llm")
	created, err := c.CreateProvider(ctx, req)
	mustNot(t, err)
	replayed, err := c.CreateProvider(ctx, req)
	mustNot(t, err)
	got, err := c.GetProvider(ctx, &pb.GetProviderRequest{Name: "llm"})
	mustNot(t, err)
	list, err := c.ListProviders(ctx, &pb.ListProvidersRequest{})
	mustNot(t, err)
	for what, p := range map[string]*pb.Provider{"create": created.GetProvider(), "replay": replayed.GetProvider(), "get": got.GetProvider(), "list": list.GetProviders()[0]} {
		if strings.Contains(p.String(), canary) {
			t.Fatalf("%s leaked the credential: %v", what, p)
		}
		if p.GetCredentials()["OPENAI_API_KEY"] != Redacted {
			t.Fatalf("%s credentials = %v, want REDACTED", what, p.GetCredentials())
		}
	}
	if creds, _ := s.ProviderCredentials(DefaultWorkspace, "llm"); creds["OPENAI_API_KEY"] != canary {
		t.Fatalf("stored credential = %q", creds["OPENAI_API_KEY"])
	}
	_, err = c.CreateProvider(ctx, providerReq(DefaultWorkspace, "llm"))
	wantCode(t, err, codes.AlreadyExists)
}

// UpdateProvider merges: non-empty credentials replace, empty ones are ignored, empty config
// values delete keys, and a stale resource_version fence is refused with the CAS error.
func TestProviderUpdateMergeAndFence(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s)
	ctx := ctxT(t)
	created, err := c.CreateProvider(ctx, providerReq(DefaultWorkspace, "llm"))
	mustNot(t, err)
	v1 := created.GetProvider().GetMetadata().GetResourceVersion()

	upd, err := c.UpdateProvider(ctx, &pb.UpdateProviderRequest{RequestId: rid(), Provider: &pb.Provider{
		Metadata:    &pb.ObjectMeta{Name: "llm", ResourceVersion: v1},
		Credentials: map[string]string{"OPENAI_API_KEY": "", "EXTRA": "x"},
		Config:      map[string]string{"model": "", "base_url": "https://other.example.com"},
	}})
	mustNot(t, err)
	if upd.GetMutationId() == "" || upd.GetProvider().GetMetadata().GetResourceVersion() != v1+1 {
		t.Fatalf("update = %v", upd)
	}
	creds, _ := s.ProviderCredentials(DefaultWorkspace, "llm")
	if creds["OPENAI_API_KEY"] != canary || creds["EXTRA"] != "x" {
		t.Fatalf("credentials after merge = %v", creds)
	}
	cfg := upd.GetProvider().GetConfig()
	if _, ok := cfg["model"]; ok || cfg["base_url"] != "https://other.example.com" {
		t.Fatalf("config after merge = %v", cfg)
	}

	_, err = c.UpdateProvider(ctx, &pb.UpdateProviderRequest{Provider: &pb.Provider{
		Metadata: &pb.ObjectMeta{Name: "llm", ResourceVersion: v1}, Config: map[string]string{"model": "m2"}}})
	st := wantReason(t, err, codes.Aborted, ReasonResourceVersionConflict)
	if !strings.Contains(st.Message(), fmt.Sprintf("current resource_version: %d", v1+1)) {
		t.Fatalf("message %q", st.Message())
	}
	_, err = c.UpdateProvider(ctx, &pb.UpdateProviderRequest{Provider: &pb.Provider{Metadata: &pb.ObjectMeta{Name: "absent"}}})
	wantCode(t, err, codes.NotFound)
}

// ListProviders pages until next_page_token is empty.
func TestProviderListPaging(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s)
	ctx := ctxT(t)
	for i := 0; i < 5; i++ {
		_, err := c.CreateProvider(ctx, providerReq(DefaultWorkspace, fmt.Sprintf("p%d", i)))
		mustNot(t, err)
	}
	var names []string
	token := ""
	for pages := 0; ; pages++ {
		resp, err := c.ListProviders(ctx, &pb.ListProvidersRequest{PageSize: 2, PageToken: token})
		mustNot(t, err)
		if len(resp.GetProviders()) > 2 {
			t.Fatalf("page of %d", len(resp.GetProviders()))
		}
		for _, p := range resp.GetProviders() {
			names = append(names, p.GetMetadata().GetName())
		}
		if token = resp.GetNextPageToken(); token == "" {
			break
		}
		if pages > 5 {
			t.Fatal("paging does not end")
		}
	}
	if strings.Join(names, ",") != "p0,p1,p2,p3,p4" {
		t.Fatalf("listed %v", names)
	}
}

// DeleteProvider with allow_missing is idempotent.
func TestProviderDelete(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s)
	ctx := ctxT(t)
	_, err := c.CreateProvider(ctx, providerReq(DefaultWorkspace, "llm"))
	mustNot(t, err)
	for _, want := range []pb.DeletionOutcome{pb.DeletionOutcome_DELETION_OUTCOME_COMPLETED, pb.DeletionOutcome_DELETION_OUTCOME_ALREADY_ABSENT} {
		resp, err := c.DeleteProvider(ctx, &pb.DeleteProviderRequest{Name: "llm", AllowMissing: true, RequestId: rid()})
		mustNot(t, err)
		if resp.GetOutcome() != want {
			t.Fatalf("outcome = %v, want %v", resp.GetOutcome(), want)
		}
	}
	_, err = c.DeleteProvider(ctx, &pb.DeleteProviderRequest{Name: "llm"})
	wantCode(t, err, codes.NotFound)
}

// A sandbox naming a provider that does not exist is refused before anything is created.
func TestSandboxProviderMustExist(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s)
	ctx := ctxT(t)
	spec := minimalSpec()
	spec.Providers = []string{"missing"}
	_, err := c.CreateSandbox(ctx, &pb.CreateSandboxRequest{Name: "box", Spec: spec})
	st := wantCode(t, err, codes.FailedPrecondition)
	if st.Message() != "provider 'missing' not found" {
		t.Fatalf("message %q", st.Message())
	}
}

// The runtime provider's readiness: PENDING until the sandbox is READY, READY afterwards,
// a test-set reason maps per the contract, and a detach is complete at REVOKED while the
// older attach receipt becomes SUPERSEDED.
func TestProviderReadinessStateMachine(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s)
	ctx := ctxT(t)
	_, err := c.CreateProvider(ctx, providerReq(DefaultWorkspace, "llm"))
	mustNot(t, err)
	spec := minimalSpec()
	spec.Providers = []string{"llm"}
	_, err = c.CreateSandbox(ctx, &pb.CreateSandboxRequest{Name: "box", Spec: spec})
	mustNot(t, err)

	status := func(provider, receipt string) *pb.ProviderReadinessStatus {
		t.Helper()
		resp, err := c.GetSandboxProviderStatus(ctx, &pb.GetSandboxProviderStatusRequest{Sandbox: "box", Provider: provider, ReceiptId: receipt})
		mustNot(t, err)
		return resp.GetStatus()
	}
	mustNot(t, s.SetSandboxPhase(DefaultWorkspace, "box", pb.SandboxPhase_SANDBOX_PHASE_PROVISIONING, nil))
	st := status("llm", "")
	if st.GetState() != pb.ProviderReadinessState_PROVIDER_READINESS_STATE_PENDING || st.GetReason() != pb.ProviderReadinessReason_PROVIDER_READINESS_REASON_SUPERVISOR_DISCONNECTED {
		t.Fatalf("before READY: %v", st)
	}
	if st.GetReceipt().GetKind() != pb.ProviderMutationKind_PROVIDER_MUTATION_KIND_OBSERVE {
		t.Fatalf("a read by provider records an OBSERVE receipt, got %v", st.GetReceipt().GetKind())
	}
	mustNot(t, s.SetSandboxPhase(DefaultWorkspace, "box", pb.SandboxPhase_SANDBOX_PHASE_UNSPECIFIED, nil))
	if st := status("llm", ""); st.GetState() != pb.ProviderReadinessState_PROVIDER_READINESS_STATE_READY {
		t.Fatalf("after READY: %v", st)
	}
	for reason, want := range map[pb.ProviderReadinessReason]pb.ProviderReadinessState{
		pb.ProviderReadinessReason_PROVIDER_READINESS_REASON_CREDENTIALS_WITHHELD:      pb.ProviderReadinessState_PROVIDER_READINESS_STATE_WITHHELD,
		pb.ProviderReadinessReason_PROVIDER_READINESS_REASON_CREDENTIAL_INSTALL_FAILED: pb.ProviderReadinessState_PROVIDER_READINESS_STATE_FAILED,
		pb.ProviderReadinessReason_PROVIDER_READINESS_REASON_WAITING_FOR_CREDENTIALS:   pb.ProviderReadinessState_PROVIDER_READINESS_STATE_PENDING,
		pb.ProviderReadinessReason_PROVIDER_READINESS_REASON_WAITING_FOR_SUPERVISOR:    pb.ProviderReadinessState_PROVIDER_READINESS_STATE_PERSISTED,
	} {
		mustNot(t, s.SetProviderStatus(DefaultWorkspace, "box", "llm", reason))
		if st := status("llm", ""); st.GetState() != want || st.GetReason() != reason {
			t.Fatalf("reason %v: %v, want %v", reason, st, want)
		}
	}
	mustNot(t, s.SetProviderStatus(DefaultWorkspace, "box", "llm", pb.ProviderReadinessReason_PROVIDER_READINESS_REASON_UNSPECIFIED))

	attach := status("llm", "")
	det, err := c.DetachSandboxProvider(ctx, &pb.DetachSandboxProviderRequest{Sandbox: "box", Provider: "llm", RequestId: rid()})
	mustNot(t, err)
	if !det.GetDetached() || det.GetReceipt().GetKind() != pb.ProviderMutationKind_PROVIDER_MUTATION_KIND_DETACH || len(det.GetSandbox().GetSpec().GetProviders()) != 0 {
		t.Fatalf("detach = %v", det)
	}
	if st := status("", det.GetReceipt().GetReceiptId()); st.GetState() != pb.ProviderReadinessState_PROVIDER_READINESS_STATE_REVOKED {
		t.Fatalf("detach receipt: %v, want REVOKED", st)
	}
	if st := status("", attach.GetReceipt().GetReceiptId()); st.GetState() != pb.ProviderReadinessState_PROVIDER_READINESS_STATE_SUPERSEDED {
		t.Fatalf("old receipt: %v, want SUPERSEDED", st)
	}
	again, err := c.DetachSandboxProvider(ctx, &pb.DetachSandboxProviderRequest{Sandbox: "box", Provider: "llm", RequestId: rid()})
	mustNot(t, err)
	if again.GetDetached() {
		t.Fatal("a second detach reported detached=true")
	}
	_, err = c.GetSandboxProviderStatus(ctx, &pb.GetSandboxProviderStatusRequest{Sandbox: "box", ReceiptId: rid()})
	wantCode(t, err, codes.NotFound)
	_, err = c.GetSandboxProviderStatus(ctx, &pb.GetSandboxProviderStatusRequest{Sandbox: "box"})
	wantReason(t, err, codes.InvalidArgument, ReasonInvalidArgument)
	_, err = c.DetachSandboxProvider(ctx, &pb.DetachSandboxProviderRequest{Sandbox: "gone", Provider: "llm"})
	wantCode(t, err, codes.NotFound)
}

// An UpdateProvider issues one UPDATE receipt per attached sandbox, sharing the mutation id.
func TestProviderUpdateReceipts(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s)
	ctx := ctxT(t)
	_, err := c.CreateProvider(ctx, providerReq(DefaultWorkspace, "llm"))
	mustNot(t, err)
	spec := minimalSpec()
	spec.Providers = []string{"llm"}
	_, err = c.CreateSandbox(ctx, &pb.CreateSandboxRequest{Name: "box", Spec: spec})
	mustNot(t, err)
	upd, err := c.UpdateProvider(ctx, &pb.UpdateProviderRequest{Provider: &pb.Provider{Metadata: &pb.ObjectMeta{Name: "llm"}, Credentials: map[string]string{"OPENAI_API_KEY": "new"}}})
	mustNot(t, err)
	var found bool
	s.mu.Lock()
	for _, r := range s.st.receipts {
		if r.receipt.GetKind() == pb.ProviderMutationKind_PROVIDER_MUTATION_KIND_UPDATE && r.receipt.GetMutationId() == upd.GetMutationId() {
			found = true
		}
	}
	s.mu.Unlock()
	if !found {
		t.Fatal("no UPDATE receipt carries the update's mutation id")
	}
}
