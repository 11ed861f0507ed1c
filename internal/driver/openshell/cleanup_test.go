package openshell

import (
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/gateway"
	"github.com/openclaw/occ/internal/gateway/emulator"
	"github.com/openclaw/occ/internal/gateway/openshellv1"
)

// provisioned returns an env with a prepared Namespace and a provisioned Codex revision.
func provisioned(t *testing.T, o envOptions) (*env, *Driver, driver.HarnessContext, driver.SandboxResourceRef) {
	e := newEnv(t, o)
	d := e.driver(nil)
	e.prepare(d)
	h := e.attach(d, e.hctx(driver.HarnessCodex))
	ref, err := d.ProvisionHarness(e.ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	return e, d, h, ref
}

// removeSource stands in for the Credential Gateway's removeSource, which owns the
// credential-source provider's lifecycle.
func (e *env) removeSource() {
	e.t.Helper()
	if _, err := e.client.DeleteProvider(e.ctx, e.ns.Name, CredentialProviderName("cs_openai_default")); err != nil {
		e.t.Fatal(err)
	}
}

// Retiring a revision whose Harness Pod is already gone still removes its Sandbox: the name is
// derived from the revision, not read from the Pod. Repeating the cleanup is a no-op success.
func TestCleanupRevisionAfterPodIsGone(t *testing.T) {
	e, d, h, ref := provisioned(t, envOptions{})
	if err := e.admin.CoreV1().Pods(e.ns.Name).Delete(e.ctx, ref.ResourceName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := d.Cleanup(e.ctx, driver.CleanupContext{NamespaceContext: e.nctx(), Revision: &h.Revision}); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
	}
	if _, err := e.client.GetSandbox(e.ctx, e.ns.Name, ref.ResourceName); !gateway.IsNotFound(err) {
		t.Fatalf("Sandbox still there: %v", err)
	}
	del := e.gw.Journal().Method("DeleteSandbox")
	if len(del) != 3 || del[0].Request.(*openshellv1.DeleteSandboxRequest).GetWorkspaceScope().GetWorkspace() != e.ns.Name {
		t.Fatalf("DeleteSandbox calls %+v", del)
	}
}

// A revision that never got a Sandbox (a refused or interrupted provision) cleans up fine.
func TestCleanupRevisionNeverProvisioned(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.driver(nil)
	if err := d.EnsureNamespace(e.ctx, e.nctx()); err != nil {
		t.Fatal(err)
	}
	rev := e.hctx(driver.HarnessOpenClaw).Revision
	if err := d.Cleanup(e.ctx, driver.CleanupContext{NamespaceContext: e.nctx(), Revision: &rev}); err != nil {
		t.Fatal(err)
	}
}

// Revision cleanup refuses a revision of another Namespace or Sandbox driver without calling
// the gateway.
func TestCleanupRevisionRefusesForeignRevision(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.driver(nil)
	for _, mutate := range []func(*driver.Revision){
		func(r *driver.Revision) { r.NamespaceID = "ns_other" },
		func(r *driver.Revision) { r.SandboxDriverID = "sandbox-other" },
	} {
		rev := e.hctx(driver.HarnessCodex).Revision
		mutate(&rev)
		err := d.Cleanup(e.ctx, driver.CleanupContext{NamespaceContext: e.nctx(), Revision: &rev})
		if err == nil || !strings.HasPrefix(err.Error(), "Refusing to delete a Sandbox outside its selected AgentRevision and Namespace.") {
			t.Fatalf("err = %v", err)
		}
	}
	if len(e.gw.Journal().Calls()) != 0 {
		t.Fatalf("gateway calls %v", e.methods())
	}
}

// Namespace cleanup while a Sandbox still exists fails (the gateway refuses to delete a
// non-empty Workspace) and keeps the configured resources; after revision cleanup, the retry
// succeeds and removes the Workspace and the resources. Repeating it is a no-op.
func TestCleanupNamespaceRetriedAfterFailure(t *testing.T) {
	e, d, h, _ := provisioned(t, envOptions{})
	e.removeSource()
	err := d.Cleanup(e.ctx, driver.CleanupContext{NamespaceContext: e.nctx()})
	if err == nil || !strings.Contains(err.Error(), "DeleteWorkspace") {
		t.Fatalf("cleanup with a live Sandbox: %v", err)
	}
	if rv := e.resourceVersions(); slices.Contains(rv, "") {
		t.Fatalf("configured resources removed although the Workspace remains: %v", rv)
	}
	// The refused delete left the Workspace TERMINATING; it stays eligible for the retry.
	if ws, err := e.client.GetWorkspace(e.ctx, e.ns.Name); err != nil || ws.Phase != gateway.WorkspacePhaseTerminating {
		t.Fatalf("Workspace after the refused delete: %+v, %v", ws, err)
	}
	if err := d.Cleanup(e.ctx, driver.CleanupContext{NamespaceContext: e.nctx(), Revision: &h.Revision}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if err := d.Cleanup(e.ctx, driver.CleanupContext{NamespaceContext: e.nctx()}); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
	}
	if _, err := e.client.GetWorkspace(e.ctx, e.ns.Name); !gateway.IsNotFound(err) {
		t.Fatalf("Workspace: %v", err)
	}
	for i, rv := range e.resourceVersions() {
		if rv != "" {
			t.Fatalf("%s/%s still exists", configuredObjects[i].kind, configuredObjects[i].name)
		}
	}
	// The network-policy resources go first: reverse of the apply order.
	var deletes []string
	for _, l := range e.counter.log {
		if strings.HasPrefix(l, "DELETE ") {
			deletes = append(deletes, l[strings.LastIndex(l, "/")+1:])
		}
	}
	want := []string{"allow-openshell-sandbox-callback", "openshell-workspace-gateway", "openshell-sandbox", "openshell-sandbox", "openshell-sandbox"}
	if !slices.Equal(deletes, want) {
		t.Fatalf("delete order %v, want %v", deletes, want)
	}
}

// A DeleteWorkspace whose answers are all lost (the first after the gateway committed it) fails
// the cleanup and keeps the resources; a later retry converges.
func TestCleanupNamespaceLostDeleteResponses(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.driver(nil)
	if err := d.EnsureNamespace(e.ctx, e.nctx()); err != nil {
		t.Fatal(err)
	}
	e.gw.Inject(emulator.Fault{Method: "DeleteWorkspace", Kind: emulator.FaultDropResponse, Count: 1})
	// The client makes testRetry.MaxAttempts attempts; every one after the first is refused as
	// unavailable.
	e.gw.Inject(emulator.Fault{Method: "DeleteWorkspace", Kind: emulator.FaultUnavailable, Count: testRetry.MaxAttempts - 1})
	if err := d.Cleanup(e.ctx, driver.CleanupContext{NamespaceContext: e.nctx()}); err == nil {
		t.Fatal("cleanup succeeded although every DeleteWorkspace answer was lost")
	}
	if rv := e.resourceVersions(); slices.Contains(rv, "") {
		t.Fatalf("resources removed before the Workspace was confirmed gone: %v", rv)
	}
	e.gw.Journal().Reset()
	if err := d.Cleanup(e.ctx, driver.CleanupContext{NamespaceContext: e.nctx()}); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if _, err := e.client.GetWorkspace(e.ctx, e.ns.Name); !gateway.IsNotFound(err) {
		t.Fatalf("Workspace: %v", err)
	}
}

// Namespace cleanup never deletes a Workspace or an object OCC does not own.
func TestCleanupNamespaceRefusesForeignOwnership(t *testing.T) {
	e := newEnv(t, envOptions{})
	if _, err := e.client.CreateWorkspace(e.ctx, e.ns.Name, map[string]string{driver.LabelManagedBy: driver.ManagedByValue, driver.LabelNamespaceID: "ns_other"}); err != nil {
		t.Fatal(err)
	}
	d := e.driver(nil)
	err := d.Cleanup(e.ctx, driver.CleanupContext{NamespaceContext: e.nctx()})
	if err == nil || !strings.HasPrefix(err.Error(), "Refusing OpenShell Workspace "+e.ns.Name+" without exact OCC Namespace ownership.") {
		t.Fatalf("err = %v", err)
	}
	if m := e.mutations(); len(m) != 1 { // only the test's own CreateWorkspace
		t.Fatalf("mutations %v", e.methods())
	}
	if _, err := e.client.GetWorkspace(e.ctx, e.ns.Name); err != nil {
		t.Fatalf("foreign Workspace deleted: %v", err)
	}

	// An unowned object with a configured name is left alone and reported.
	e2 := newEnv(t, envOptions{})
	if _, err := e2.admin.CoreV1().ServiceAccounts(e2.ns.Name).Create(e2.ctx, saNamed("openshell-sandbox"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = e2.driver(nil).Cleanup(e2.ctx, driver.CleanupContext{NamespaceContext: e2.nctx()})
	if err == nil || !strings.Contains(err.Error(), "refusing to delete ServiceAccount "+e2.ns.Name+"/openshell-sandbox") {
		t.Fatalf("err = %v", err)
	}
	if _, err := e2.admin.CoreV1().ServiceAccounts(e2.ns.Name).Get(e2.ctx, "openshell-sandbox", metav1.GetOptions{}); apierrors.IsNotFound(err) {
		t.Fatal("unowned ServiceAccount deleted")
	}
}
