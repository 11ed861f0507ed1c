package openshell

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/gateway"
	"github.com/openclaw/occ/internal/gateway/openshellv1"
)

// mutationMethods lists the journaled mutating calls by method name, in order.
func (e *env) mutationMethods() []string {
	var out []string
	for _, c := range e.mutations() {
		out = append(out, c.Method)
	}
	return out
}

// A dedicated Codex revision provisioned three times imports the runtime profile once, creates
// its runtime provider once (both before the Sandbox), lists that provider last on the Sandbox,
// and the repeats make no mutating call at all.
func TestProvisionCodexRuntimeProviderOnce(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.driver(nil)
	e.prepare(d)
	h := e.attach(d, e.hctx(driver.HarnessCodex))
	e.gw.Journal().Reset()
	for i := range 3 {
		if _, err := d.ProvisionHarness(e.ctx, h); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		if i == 0 {
			if got, want := e.mutationMethods(), []string{"ImportProviderProfiles", "CreateProvider", "CreateSandbox"}; !slices.Equal(got, want) {
				t.Fatalf("first provision mutations %v, want %v", got, want)
			}
		}
	}
	if got := e.mutationMethods(); len(got) != 3 {
		t.Fatalf("repeated provisions mutated the gateway: %v", got)
	}

	name := RuntimeProviderName(h.Revision.ID)
	req := e.gw.Journal().Method("CreateSandbox")[0].Request.(*openshellv1.CreateSandboxRequest)
	if want := []string{CredentialProviderName("cs_openai_default"), name}; !slices.Equal(req.Spec.Providers, want) {
		t.Fatalf("Sandbox providers %v, want %v (runtime provider last)", req.Spec.Providers, want)
	}
	p, err := e.client.GetProvider(e.ctx, e.ns.Name, name)
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{
		driver.LabelManagedBy: driver.ManagedByValue, driver.LabelNamespaceID: e.ns.ID,
		driver.LabelAgentID: h.Revision.AgentID, driver.LabelRevisionID: h.Revision.ID,
	}
	wantConfig := map[string]string{"runtime_json": `{"kind":"codex","selections":[]}`, "config_toml": "model = \"gpt-5\"\n"}
	if p.Type != RuntimeProfileCodex || !maps.Equal(p.Labels, wantLabels) || !maps.Equal(p.Config, wantConfig) || len(p.CredentialKeys) != 0 {
		t.Fatalf("runtime provider %+v", p)
	}
	prof, err := e.client.GetProviderProfile(e.ctx, e.ns.Name, RuntimeProfileCodex)
	if err != nil {
		t.Fatal(err)
	}
	ann := prof.Annotations["openclaw.dev/managed-by"]
	if len(prof.Annotations) != 1 || !strings.HasPrefix(ann, "openclaw-enterprise:") || len(ann) != len("openclaw-enterprise:")+64 {
		t.Fatalf("profile annotations %v", prof.Annotations)
	}
	if prof.Category != openshellv1.ProviderProfileCategory_PROVIDER_PROFILE_CATEGORY_OTHER || prof.InferenceCapable ||
		len(prof.Credentials)+len(prof.Endpoints)+len(prof.Binaries) != 0 || len(prof.Files) != 4 ||
		prof.Files[0].Path != "runtime.json" || prof.Files[0].Content != "{{config.runtime_json}}" ||
		prof.Files[1].Path != "config.toml" || prof.Files[1].Content != "{{config.config_toml}}" ||
		prof.Files[2].Path != "node-setup.json" || prof.Files[2].Content != "{{config.node_setup_json}}" || prof.Files[2].EnvVar != "OPENCLAW_NODE_SETUP_ENVELOPE" ||
		prof.Files[3].Path != "node-ca.pem" || prof.Files[3].Content != "{{config.node_ca_pem}}" || prof.Files[3].EnvVar != "OPENCLAW_NODE_CA_PATH" {
		t.Fatalf("runtime profile %v", prof)
	}
}

// A second revision in the same Workspace shares the profile and gets its own provider.
func TestProvisionSecondRevisionSharesProfile(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.driver(nil)
	e.prepare(d)
	h := e.attach(d, e.hctx(driver.HarnessCodex))
	if _, err := d.ProvisionHarness(e.ctx, h); err != nil {
		t.Fatal(err)
	}
	e.gw.Journal().Reset()
	h2 := withRevision(h, "rev_5c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f")
	if _, err := d.ProvisionHarness(e.ctx, h2); err != nil {
		t.Fatal(err)
	}
	if got, want := e.mutationMethods(), []string{"CreateProvider", "CreateSandbox"}; !slices.Equal(got, want) {
		t.Fatalf("second revision mutations %v, want %v", got, want)
	}
	if RuntimeProviderName(h.Revision.ID) == RuntimeProviderName(h2.Revision.ID) {
		t.Fatal("two revisions share a runtime provider name")
	}
}

// Someone else's profile with the runtime profile's id (no OCC managed-by annotation) is
// refused; nothing is created or changed.
func TestProvisionRefusesUnmanagedRuntimeProfile(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.driver(nil)
	e.prepare(d)
	foreign := codexRuntimeProfile().unannotated()
	foreign.Annotations = map[string]string{"openclaw.dev/managed-by": "someone-else"}
	if _, err := e.client.ImportProviderProfiles(e.ctx, e.ns.Name, "someone-else", foreign); err != nil {
		t.Fatal(err)
	}
	h := e.attach(d, e.hctx(driver.HarnessCodex))
	e.gw.Journal().Reset()
	_, err := d.ProvisionHarness(e.ctx, h)
	if err == nil || !strings.HasPrefix(err.Error(), "Refusing unmanaged OpenShell provider profile oce-codex-runtime.") {
		t.Fatalf("err = %v", err)
	}
	if m := e.mutationMethods(); len(m) != 0 {
		t.Fatalf("mutations %v", m)
	}
	if prof, err := e.client.GetProviderProfile(e.ctx, e.ns.Name, RuntimeProfileCodex); err != nil || prof.ResourceVersion != 1 {
		t.Fatalf("foreign profile touched: %v, %v", prof, err)
	}
}

// A provider with the revision's runtime provider name but other runtime files is refused
// before any Sandbox is created, and the refusal does not repeat its content.
func TestProvisionRefusesForeignRuntimeProvider(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.driver(nil)
	e.prepare(d)
	h := e.attach(d, e.hctx(driver.HarnessCodex))
	p, err := d.plan(h)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.ensureRuntimeProfile(e.ctx, p.workspace, p.runtime.profile); err != nil {
		t.Fatal(err)
	}
	foreign := p.runtime.spec
	foreign.Config = map[string]string{"runtime_json": `{"kind":"codex","selections":["` + canary + `"]}`, "config_toml": "model = \"other\"\n"}
	if _, err := e.client.CreateProvider(e.ctx, e.ns.Name, foreign); err != nil {
		t.Fatal(err)
	}
	e.gw.Journal().Reset()
	_, err = d.ProvisionHarness(e.ctx, h)
	want := "Refusing OpenShell provider " + RuntimeProviderName(h.Revision.ID) + " without exact AgentRevision ownership and content."
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), canary) {
		t.Fatalf("refusal repeats the provider's config: %v", err)
	}
	if m := e.mutationMethods(); len(m) != 0 {
		t.Fatalf("mutations %v (CreateSandbox must not be sent)", m)
	}
}

// A runtime profile an older driver imported (managed, other content) is replaced, fenced by
// the version read; the provision then goes on.
func TestProvisionUpdatesChangedRuntimeProfile(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.driver(nil)
	e.prepare(d)
	old := codexRuntimeProfile()
	old.Description = "an older driver's profile"
	if _, err := e.client.ImportProviderProfiles(e.ctx, e.ns.Name, profileSource, old.wire()); err != nil {
		t.Fatal(err)
	}
	h := e.attach(d, e.hctx(driver.HarnessCodex))
	e.gw.Journal().Reset()
	if _, err := d.ProvisionHarness(e.ctx, h); err != nil {
		t.Fatal(err)
	}
	updates := e.gw.Journal().Method("UpdateProviderProfiles")
	if len(updates) != 1 || updates[0].Request.(*openshellv1.UpdateProviderProfilesRequest).ExpectedResourceVersion != 1 {
		t.Fatalf("UpdateProviderProfiles calls %+v", updates)
	}
	prof, err := e.client.GetProviderProfile(e.ctx, e.ns.Name, RuntimeProfileCodex)
	if err != nil || prof.ResourceVersion != 2 || prof.Annotations["openclaw.dev/managed-by"] != codexRuntimeProfile().annotation() ||
		!profileContentEqual(prof, codexRuntimeProfile()) {
		t.Fatalf("profile after the update %v, %v", prof, err)
	}
	if n := len(e.gw.Journal().Method("ImportProviderProfiles")); n != 0 {
		t.Fatalf("%d imports of an existing profile", n)
	}
}

// An installation provisioned before Codex enrolled workspace nodes holds the Codex profile
// with only runtime.json and config.toml (and that content's digest). The next provision
// replaces it exactly once through the fenced update, and later provisions leave it alone.
func TestProvisionUpdatesPreEnrollmentCodexProfileOnce(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.driver(nil)
	e.prepare(d)
	old := codexRuntimeProfile()
	old.Files = old.Files[:2]
	if old.annotation() == codexRuntimeProfile().annotation() {
		t.Fatal("the enrollment files did not change the Codex profile digest")
	}
	if _, err := e.client.ImportProviderProfiles(e.ctx, e.ns.Name, profileSource, old.wire()); err != nil {
		t.Fatal(err)
	}
	e.gw.Journal().Reset()
	for i, revisionID := range []string{testRevisionID, "rev_7d0c2f4e-5b1a-4c3d-9e8f-0a1b2c3d4e5f"} {
		h := e.attach(d, withRevision(e.hctx(driver.HarnessCodex), revisionID))
		for j := range 2 {
			if _, err := d.ProvisionHarness(e.ctx, h); err != nil {
				t.Fatalf("revision %d run %d: %v", i+1, j+1, err)
			}
		}
	}
	updates := e.gw.Journal().Method("UpdateProviderProfiles")
	if len(updates) != 1 || updates[0].Request.(*openshellv1.UpdateProviderProfilesRequest).ExpectedResourceVersion != 1 {
		t.Fatalf("UpdateProviderProfiles calls %+v, want one fenced at version 1", updates)
	}
	prof, err := e.client.GetProviderProfile(e.ctx, e.ns.Name, RuntimeProfileCodex)
	if err != nil || prof.Annotations["openclaw.dev/managed-by"] != codexRuntimeProfile().annotation() ||
		!profileContentEqual(prof, codexRuntimeProfile()) || len(prof.Files) != 4 {
		t.Fatalf("profile after the update %v, %v", prof, err)
	}
	if n := len(e.gw.Journal().Method("ImportProviderProfiles")); n != 0 {
		t.Fatalf("%d imports of an existing profile", n)
	}
}

// racingProfiles is a gateway on which another writer changes the runtime profile between the
// driver's read and its update, as a concurrent provision by an older driver would.
type racingProfiles struct {
	*gateway.Client
	race func()
}

func (r racingProfiles) GetProviderProfile(ctx context.Context, workspace, id string) (*openshellv1.ProviderProfile, error) {
	p, err := r.Client.GetProviderProfile(ctx, workspace, id)
	if err == nil && r.race != nil {
		r.race()
	}
	return p, err
}

// The fence works: an update based on a version someone else has since replaced fails with a
// version conflict and leaves the other writer's profile in place; no Sandbox is created.
func TestProvisionRuntimeProfileUpdateIsFenced(t *testing.T) {
	e := newEnv(t, envOptions{})
	old := codexRuntimeProfile()
	old.Description = "an older driver's profile"
	other := codexRuntimeProfile()
	other.Description = "a concurrent writer's profile"
	opts := testOptions(t, nil)
	opts.Gateway = racingProfiles{Client: e.client, race: func() {
		cur, err := e.client.GetProviderProfile(e.ctx, e.ns.Name, RuntimeProfileCodex)
		if err != nil {
			t.Error(err)
			return
		}
		if _, err := e.client.UpdateProviderProfile(e.ctx, gateway.ProfileUpdate{Workspace: e.ns.Name, ID: RuntimeProfileCodex, Source: profileSource,
			Profile: other.wire(), ExpectedResourceVersion: cur.ResourceVersion}); err != nil {
			t.Error(err)
		}
	}}
	d, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.prepare(d)
	if _, err := e.client.ImportProviderProfiles(e.ctx, e.ns.Name, profileSource, old.wire()); err != nil {
		t.Fatal(err)
	}
	h := e.attach(d, e.hctx(driver.HarnessCodex))
	_, err = d.ProvisionHarness(e.ctx, h)
	if !gateway.IsVersionConflict(err) {
		t.Fatalf("err = %v, want a version conflict", err)
	}
	prof, gerr := e.client.GetProviderProfile(e.ctx, e.ns.Name, RuntimeProfileCodex)
	if gerr != nil || prof.Description != other.Description {
		t.Fatalf("the concurrent writer's profile was overwritten: %v, %v", prof, gerr)
	}
	if n := len(e.gw.Journal().Method("CreateSandbox")); n != 0 {
		t.Fatalf("%d CreateSandbox calls after a failed profile update", n)
	}
}

// Retiring a Codex revision removes its Sandbox, then its runtime provider; repeating it is a
// no-op. Namespace cleanup afterwards removes the shared profile and the Workspace.
func TestCleanupRemovesRuntimeProvider(t *testing.T) {
	e, d, h, ref := provisioned(t, envOptions{})
	e.removeSource()
	e.gw.Journal().Reset()
	for i := range 2 {
		if err := d.Cleanup(e.ctx, driver.CleanupContext{NamespaceContext: e.nctx(), Revision: &h.Revision}); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
	}
	if got, want := e.mutationMethods(), []string{"DeleteSandbox", "DeleteProvider", "DeleteSandbox"}; !slices.Equal(got, want) {
		t.Fatalf("cleanup mutations %v, want %v (Sandbox before provider, the repeat deletes nothing more)", got, want)
	}
	if _, err := e.client.GetSandbox(e.ctx, e.ns.Name, ref.ResourceName); !gateway.IsNotFound(err) {
		t.Fatalf("Sandbox: %v", err)
	}
	if _, err := e.client.GetProvider(e.ctx, e.ns.Name, RuntimeProviderName(h.Revision.ID)); !gateway.IsNotFound(err) {
		t.Fatalf("runtime provider: %v", err)
	}
	if err := d.Cleanup(e.ctx, driver.CleanupContext{NamespaceContext: e.nctx()}); err != nil {
		t.Fatalf("namespace cleanup: %v", err)
	}
	if n := len(e.gw.Journal().Method("DeleteProviderProfile")); n != 1 {
		t.Fatalf("%d DeleteProviderProfile calls", n)
	}
	if _, err := e.client.GetWorkspace(e.ctx, e.ns.Name); !gateway.IsNotFound(err) {
		t.Fatalf("Workspace: %v", err)
	}
}

// Namespace cleanup never deletes a runtime profile OCC does not manage; the Workspace stays.
func TestCleanupNamespaceRefusesUnmanagedRuntimeProfile(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.driver(nil)
	if err := d.EnsureNamespace(e.ctx, e.nctx()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.ImportProviderProfiles(e.ctx, e.ns.Name, "someone-else", codexRuntimeProfile().unannotated()); err != nil {
		t.Fatal(err)
	}
	err := d.Cleanup(e.ctx, driver.CleanupContext{NamespaceContext: e.nctx()})
	if err == nil || !strings.HasPrefix(err.Error(), "Refusing to delete unmanaged OpenShell provider profile oce-codex-runtime.") {
		t.Fatalf("err = %v", err)
	}
	if n := len(e.gw.Journal().Method("DeleteProviderProfile")) + len(e.gw.Journal().Method("DeleteWorkspace")); n != 0 {
		t.Fatalf("%d profile or Workspace deletions", n)
	}
}

// staleReads is a gateway whose first profile and provider reads still miss what a concurrent
// provision of the same revision has just written, so the driver's writes lose the race.
type staleReads struct {
	*gateway.Client
	profileMissed, providerMissed *bool
}

func (s staleReads) GetProviderProfile(ctx context.Context, workspace, id string) (*openshellv1.ProviderProfile, error) {
	if !*s.profileMissed {
		*s.profileMissed = true
		return nil, gateway.ErrNotFound
	}
	return s.Client.GetProviderProfile(ctx, workspace, id)
}

func (s staleReads) GetProvider(ctx context.Context, workspace, name string) (*gateway.Provider, error) {
	if strings.HasPrefix(name, RuntimeProviderPrefix) && !*s.providerMissed {
		*s.providerMissed = true
		return nil, gateway.ErrNotFound
	}
	return s.Client.GetProvider(ctx, workspace, name)
}

// Two workers provision the same revision at once: the loser's import and create fail because
// the winner's profile and provider exist, and the loser adopts both after re-reading them
// (they are exactly its own), then adopts the Sandbox.
func TestProvisionAdoptsConcurrentRuntimeWinner(t *testing.T) {
	e := newEnv(t, envOptions{})
	winner := e.driver(nil)
	e.prepare(winner)
	h := e.attach(winner, e.hctx(driver.HarnessCodex))
	if _, err := winner.ProvisionHarness(e.ctx, h); err != nil {
		t.Fatal(err)
	}
	var profileMissed, providerMissed bool
	opts := testOptions(t, nil)
	opts.Gateway = staleReads{Client: e.client, profileMissed: &profileMissed, providerMissed: &providerMissed}
	loser, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.gw.Journal().Reset()
	if _, err := loser.ProvisionHarness(e.ctx, h); err != nil {
		t.Fatalf("the loser refused the winner's exact runtime objects: %v", err)
	}
	if !profileMissed || !providerMissed {
		t.Fatal("the stale reads were not exercised")
	}
	if got, want := e.mutationMethods(), []string{"ImportProviderProfiles", "CreateProvider"}; !slices.Equal(got, want) {
		t.Fatalf("loser mutations %v, want %v (both refused, no second Sandbox)", got, want)
	}
	if n := len(e.gw.Journal().Method("CreateSandbox")); n != 0 {
		t.Fatalf("%d CreateSandbox calls for an existing Sandbox", n)
	}
}
