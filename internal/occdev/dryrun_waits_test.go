package occdev_test

import (
	"slices"
	"testing"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/controlplane/compose"
	"github.com/openclaw/occ/internal/occdev/profile/composeprofile"
	"github.com/openclaw/occ/internal/occdev/profile/kubeprofile"
	"github.com/openclaw/occ/internal/occdev/step"
)

// waitsOf are ws as "Kind namespace/name".
func waitsOf(ws []step.Wait) []string {
	return refs(ws, func(w step.Wait) (string, string, string) { return w.Kind, w.Namespace, w.Name })
}

// A tool reads `occ dev up --dry-run -o json` (Compose profile) for what up waits on: the
// Agent Sandbox controller of the selected manifest and the Gateway release in the platform
// namespace, the API's session endpoint and the worker service at the project's API URL, and
// the one-shot jobs, the bootstrap Namespace's label and endpoint, each a typed wait named as the run names it,
// and none of them a creation.
func TestComposeDryRunNamesWhatUpWaitsFor(t *testing.T) {
	opts := fixtureOptions(t, occdev.ControlPlaneCompose)
	selectManifest(t, &opts, `apiVersion: apps/v1
kind: Deployment
metadata: {name: agent-sandbox-controller, namespace: agent-sandbox-system}
`)
	dr := planUp(t, opts)
	doc := dr.Plan.OCE.(*composeprofile.Document)
	ns := dr.Plan.Namespace

	platform := plannedStep(t, dr.Steps, "Wait for the Agent Sandbox controller and the Gateway")
	if got, want := waitsOf(platform.Waits), []string{"Deployment agent-sandbox-system/agent-sandbox-controller", "Helm release " + ns + "/" + occdev.GatewayRelease}; !slices.Equal(got, want) {
		t.Errorf("the platform wait names %q, want %q", got, want)
	}
	if len(platform.Creates) != 0 {
		t.Errorf("the platform wait creates %q", platform.Creates)
	}
	health := plannedStep(t, dr.Steps, "Check Gateway health")
	if len(health.Waits) != 1 || health.Waits[0].Namespace != ns {
		t.Errorf("the Health check waits for %+v, want the Gateway Pods in %s", health.Waits, ns)
	}
	data := plannedStep(t, dr.Steps, "Start postgres, migrate and bootstrap")
	if got, want := waitsOf(data.Waits), []string{"service /" + compose.ServiceMigrate, "service /" + compose.ServiceBootstrap}; !slices.Equal(got, want) {
		t.Errorf("the data services wait for %q, want the jobs %q", got, want)
	}
	ready := plannedStep(t, dr.Steps, "Wait for the API and the worker to be ready")
	want := []string{"endpoint /GET " + doc.Compose.APIURL + controlplane.SessionPath, "service /" + compose.ServiceWorker}
	if got := waitsOf(ready.Waits); !slices.Equal(got, want) || ready.Waits[1].Note != "of project "+doc.Compose.Project+", in the same poll as the API" {
		t.Errorf("the readiness step waits for %q (%+v), want %q of project %s", got, ready.Waits, want, doc.Compose.Project)
	}
	namespace := plannedStep(t, dr.Steps, "Wait for the bootstrap Namespace to be ready")
	if got := waitsOf(namespace.Waits); len(got) != 2 || got[0] != "Kubernetes namespace /labelled "+controlplane.NamespaceLabel || got[1] != "endpoint /GET "+doc.Compose.APIURL+"/namespaces/<id>" {
		t.Errorf("the Namespace wait names %q", got)
	}
}

// The same for the Kubernetes profile: the API is awaited through the development proxy's
// URL, and without a local Agent Sandbox manifest the platform wait names the pinned one.
func TestKubernetesDryRunNamesWhatUpWaitsFor(t *testing.T) {
	dr := planUp(t, fixtureOptions(t, occdev.ControlPlaneKubernetes))
	doc := dr.Plan.OCE.(*kubeprofile.Document)
	api := plannedStep(t, dr.Steps, "Wait for the OCE API through the development proxy")
	if got := waitsOf(api.Waits); !slices.Equal(got, []string{"endpoint /GET " + doc.Kubernetes.APIURL + controlplane.SessionPath}) {
		t.Errorf("the API wait names %q, want the proxy's %s", got, doc.Kubernetes.APIURL)
	}
	platform := plannedStep(t, dr.Steps, "Wait for the Agent Sandbox controller and the Gateway")
	if len(platform.Waits) != 2 || platform.Waits[0].Kind != "manifest" || platform.Waits[0].Selects == "" {
		t.Errorf("without a local manifest the platform wait names %+v", platform.Waits)
	}
}
