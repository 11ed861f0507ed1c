package platform

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/occdev/artifacts"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/step"
)

// localRouting is a routing plan installing both controllers from the test data's manifests,
// selected as local files, with pins whose manifest digests are theirs.
func localRouting(t *testing.T) (RoutingPlan, *pins.Routing) {
	t.Helper()
	cm := certManager(t,
		"quay.io/jetstack/cert-manager-controller:v1.18.4"+digestOf('a'),
		"quay.io/jetstack/cert-manager-cainjector:v1.18.4"+digestOf('b'),
		"quay.io/jetstack/cert-manager-webhook:v1.18.4"+digestOf('c'),
		"quay.io/jetstack/cert-manager-acmesolver:v1.18.4"+digestOf('d'))
	eg := envoyGateway(t, "docker.io/envoyproxy/gateway:v1.6.7"+digestOf('e'), "docker.io/envoyproxy/ratelimit:99d85510"+digestOf('f'))
	r := &pins.Routing{CertManager: *cm.RoutingController, EnvoyGateway: *eg.RoutingController}
	plan := RoutingPlan{Controllers: []string{"cert-manager v1.18.4", "Envoy Gateway v1.6.7"}, Manifests: map[string]string{}}
	for _, c := range r.Controllers() {
		name := map[string]string{pins.KeyRoutingCertManager: "cert-manager.yaml", pins.KeyRoutingEnvoyGateway: "envoy-gateway.yaml"}[c.Key]
		sum := sha256.Sum256(readRouting(t, name))
		c.Manifest = pins.Artifact{URL: "https://example.invalid/" + name, SHA256: hex.EncodeToString(sum[:])}
		abs, err := filepath.Abs(filepath.Join("testdata", "routing", name))
		if err != nil {
			t.Fatal(err)
		}
		plan.Manifests[c.Key] = abs
	}
	return plan, r
}

// waitNames are ws as "Kind namespace/name".
func waitNames(ws []step.Wait) []string {
	out := make([]string, 0, len(ws))
	for _, w := range ws {
		out = append(out, w.Kind+" "+w.Namespace+"/"+w.Name)
	}
	return out
}

// An offline `up --dry-run` with both routing manifests selected names every object of them the
// apply step creates, in the order it applies them and without the cluster's own Gateway API
// CRDs, and its wait step names the controllers' Deployments the run waits for, taken from the
// same admitted manifests (RoutingController.Workloads), then the GatewayClass.
func TestRoutingDryRunNamesTheLocalManifestsObjectsAndWaits(t *testing.T) {
	plan, r := localRouting(t)
	controllers := plan.Local(r, t.TempDir())
	if len(controllers) != 2 {
		t.Fatalf("%d local controllers, want both selected manifests admitted", len(controllers))
	}
	d := plan.DescribeApply(controllers)
	var want []step.Object
	for _, c := range controllers {
		want = append(want, kubeobj.DescribeManifest(c.Objects)...)
	}
	want = append(want, DescribeGatewayClass()...)
	if !slices.Equal(d.Objects, want) || len(d.Creates) != len(want) {
		t.Errorf("the apply describes %d objects (%d lines), want the %d admitted objects and the GatewayClass", len(d.Objects), len(d.Creates), len(want))
	}
	for _, o := range d.Objects {
		if strings.HasSuffix(o.Name, gatewayAPICRDSuffix) {
			t.Errorf("the apply describes %s, which the run leaves to the cluster", o)
		}
	}
	if !strings.Contains(d.Note, "not applied: Envoy Gateway: CustomResourceDefinition gatewayclasses.gateway.networking.k8s.io") {
		t.Errorf("note %q does not say what is left out", d.Note)
	}

	wait := PlatformWait{Namespace: "openshell", Routing: plan, RoutingControllers: controllers, Timeout: time.Minute}.Describe()
	var wantWaits []string
	for _, c := range controllers {
		for _, w := range c.Workloads() {
			wantWaits = append(wantWaits, w.Kind+" "+w.Namespace+"/"+w.Name)
		}
	}
	got := waitNames(wait.Waits)
	if len(got) != 2+len(wantWaits)+1 || !slices.Equal(got[2:len(got)-1], wantWaits) || !slices.Contains(wantWaits, "Deployment envoy-gateway-system/envoy-gateway") {
		t.Errorf("the wait names %q, want the controllers' workloads %q between the platform's and the GatewayClass", got, wantWaits)
	}
	if last := wait.Waits[len(wait.Waits)-1]; last.Kind != "GatewayClass" || last.Name != RoutingGatewayClass {
		t.Errorf("the last wait is %+v, want GatewayClass %s", last, RoutingGatewayClass)
	}
	if len(wait.Creates) != 0 {
		t.Errorf("the wait creates %q", wait.Creates)
	}

	// A manifest neither selected nor cached is not read: the apply and the wait say what of it
	// they take, in prose.
	delete(plan.Manifests, pins.KeyRoutingEnvoyGateway)
	if got := plan.Local(r, t.TempDir()); got != nil {
		t.Errorf("with a manifest to download, Local admitted %d", len(got))
	}
	if d := plan.DescribeApply(nil); len(d.Creates) != 2 || !strings.Contains(d.Creates[0], "the objects of the cert-manager v1.18.4 and Envoy Gateway v1.6.7 manifests") {
		t.Errorf("without the manifests: %q", d.Creates)
	}
}

// The platform wait names the Agent Sandbox manifest's workloads as the run selects them (a
// workload without a namespace is in "default"), and the Gateway by the release the install
// step makes in the platform namespace; without the manifest's objects it names the manifest.
func TestPlatformWaitNamesWhatTheRunWaitsFor(t *testing.T) {
	objs, err := artifacts.ParseYAML([]byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: agent-sandbox-controller, namespace: agent-sandbox-system}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: unscoped}
---
apiVersion: v1
kind: Namespace
metadata: {name: agent-sandbox-system}
`), "sandbox.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := AgentSandboxManifest{Pin: pins.AgentSandbox{Version: "v0.5.2", Manifest: pins.Artifact{URL: "https://example.invalid/sandbox.yaml"}}}
	d := PlatformWait{AgentSandbox: m, AgentSandboxObjects: objs, Namespace: "openshell", Timeout: time.Minute}.Describe()
	want := []string{"Deployment agent-sandbox-system/agent-sandbox-controller", "StatefulSet default/unscoped", "Helm release openshell/" + GatewayRelease}
	if got := waitNames(d.Waits); !slices.Equal(got, want) {
		t.Errorf("the wait names %q, want %q", got, want)
	}
	var run []string
	for _, w := range WorkloadsIn(objs, manifestNamespace) {
		run = append(run, w.String())
	}
	for i, w := range run {
		if d.Waits[i].Kind+" "+d.Waits[i].Namespace+"/"+d.Waits[i].Name != w {
			t.Errorf("wait %d is %s, the run waits for %s", i, d.Waits[i], w)
		}
	}
	d = PlatformWait{AgentSandbox: m, Namespace: "openshell", Timeout: time.Minute}.Describe()
	if len(d.Waits) != 2 || d.Waits[0].Name != "https://example.invalid/sandbox.yaml" || d.Waits[0].Selects == "" {
		t.Errorf("without the manifest's objects: %+v", d.Waits)
	}
}

// The Health check's dry run names the Pods the port-forward selects, in the platform
// namespace, or the endpoint the user gave, as what it waits for.
func TestHealthCheckNamesWhatItWaitsFor(t *testing.T) {
	d := HealthCheck{Namespace: "openshell", Timeout: time.Minute}.Describe()
	if len(d.Waits) != 1 || d.Waits[0].Namespace != "openshell" || d.Waits[0].Name != "app.kubernetes.io/instance="+GatewayRelease+",app.kubernetes.io/name=openshell" {
		t.Errorf("the port-forward's wait is %+v", d.Waits)
	}
	d = HealthCheck{Endpoint: "127.0.0.1:30051", Timeout: time.Minute}.Describe()
	if len(d.Waits) != 1 || d.Waits[0].Kind != "endpoint" || d.Waits[0].Name != "127.0.0.1:30051" {
		t.Errorf("the endpoint's wait is %+v", d.Waits)
	}
}
