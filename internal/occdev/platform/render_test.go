package platform

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openclaw/occ/internal/occdev/artifacts"
	"github.com/openclaw/occ/internal/occdev/charts"
	"github.com/openclaw/occ/internal/occdev/charts/chartstest"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/pins"
)

// The Kubernetes version of the render is the pinned k3s release's, read from its tag; a pin
// whose tag names no k3s release is refused with the rule, not guessed at.
func TestK3sKubernetesVersion(t *testing.T) {
	for ref, want := range map[string]string{
		"docker.io/rancher/k3s:v1.36.4-k3s1@sha256:edad48e12bf81c3a09ac1c05c0c0ffaaa22145980b989d6fae84543a76b83657": "v1.36.4",
		"docker.io/rancher/k3s:v1.35.10-k3s2": "v1.35.10",
	} {
		img, err := pins.ParseImage(ref)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := K3sKubernetesVersion(img); err != nil || got != want {
			t.Errorf("K3sKubernetesVersion(%s) = %q, %v; want %q", ref, got, err, want)
		}
	}
	for _, ref := range []string{
		"docker.io/rancher/k3s:latest",
		"docker.io/rancher/k3s@sha256:edad48e12bf81c3a09ac1c05c0c0ffaaa22145980b989d6fae84543a76b83657",
		"127.0.0.1:5000/occ-bed/k3s:0123456789abcdef",
		"docker.io/rancher/k3s:v1.36-k3s1",
	} {
		img, err := pins.ParseImage(ref)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := K3sKubernetesVersion(img); err == nil || !strings.Contains(err.Error(), "pins k3s.image") || !strings.Contains(err.Error(), "does not name a k3s release") {
			t.Errorf("K3sKubernetesVersion(%s) = %v; want the pin refused", ref, err)
		}
	}
}

func parseManifest(t testing.TB, doc string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := artifacts.ParseYAML([]byte(doc), "manifest")
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// The API versions a manifest adds are read from its own CustomResourceDefinitions: every served
// version, as group/version and group/version/Kind (the two forms Helm's discovery of a live
// cluster yields); versions not served, and objects that are no CRD, add nothing.
func TestManifestAPIVersions(t *testing.T) {
	got, err := ManifestAPIVersions(parseManifest(t, chartstest.AgentSandboxManifest()))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"agents.x-k8s.io/v1alpha1", "agents.x-k8s.io/v1alpha1/Sandbox"}; !slices.Equal(got, want) {
		t.Errorf("the fixture manifest adds %q, want %q", got, want)
	}
	got, err = ManifestAPIVersions(parseManifest(t, `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: sandboxclaims.extensions.agents.x-k8s.io}
spec:
  group: extensions.agents.x-k8s.io
  names: {kind: SandboxClaim, plural: sandboxclaims}
  scope: Namespaced
  versions:
    - {name: v1alpha1, served: true, storage: false}
    - {name: v1beta1, served: true, storage: true}
    - {name: v1alpha0, served: false, storage: false}
---
apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata: {name: old.example.com}
spec:
  group: example.com
  version: v1
  names: {kind: Old, plural: olds}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: not-a-crd}
data: {group: agents.x-k8s.io}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"example.com/v1", "example.com/v1/Old", "extensions.agents.x-k8s.io/v1alpha1", "extensions.agents.x-k8s.io/v1alpha1/SandboxClaim",
		"extensions.agents.x-k8s.io/v1beta1", "extensions.agents.x-k8s.io/v1beta1/SandboxClaim"}
	if !slices.Equal(got, want) {
		t.Errorf("ManifestAPIVersions = %q, want %q", got, want)
	}
	if got, err := ManifestAPIVersions(parseManifest(t, chartstest.AgentSandboxManifestWithoutCRDs())); err != nil || len(got) != 0 {
		t.Errorf("a manifest without CRDs adds %q (%v)", got, err)
	}
	if _, err := ManifestAPIVersions(parseManifest(t, "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: x}\nspec: {}\n")); err == nil {
		t.Error("a CRD without group and kind was accepted")
	}
}

// Helm sees its own default API versions plus the manifest's, and the Kubernetes version parsed
// as a live cluster's would be.
func TestClusterCapabilitiesHelm(t *testing.T) {
	c := ClusterCapabilities{KubeVersion: "v1.36.4", KubeVersionSource: "test", ManifestAPIVersions: []string{"agents.x-k8s.io/v1alpha1", "agents.x-k8s.io/v1alpha1/Sandbox"}}
	h, err := c.Helm()
	if err != nil {
		t.Fatal(err)
	}
	if h.KubeVersion.Version != "v1.36.4" || h.KubeVersion.Major != "1" || h.KubeVersion.Minor != "36" {
		t.Errorf("KubeVersion = %+v", h.KubeVersion)
	}
	for _, v := range []string{"v1", "apps/v1", "apiextensions.k8s.io/v1", "agents.x-k8s.io/v1alpha1", "agents.x-k8s.io/v1alpha1/Sandbox"} {
		if !h.APIVersions.Has(v) {
			t.Errorf("capabilities lack %s", v)
		}
	}
	if h.APIVersions.Has("agents.x-k8s.io/v1beta1") || chartutil.DefaultVersionSet.Has("agents.x-k8s.io/v1alpha1") {
		t.Error("capabilities hold an API version nobody added, or Helm's defaults were changed in place")
	}
	if _, err := (ClusterCapabilities{KubeVersion: "one-thirty-six"}).Helm(); err == nil {
		t.Error("a malformed Kubernetes version was accepted")
	}
}

type gatewayFixture struct {
	install  GatewayInstall
	manifest []*unstructured.Unstructured
}

// newGatewayFixture packages the v0.1-shaped fixture chart (files replaced as given) the way
// `up` does and prepares the Kubernetes-only profile's install of it.
func newGatewayFixture(t testing.TB, files map[string]string) gatewayFixture {
	t.Helper()
	dir := t.TempDir()
	fx := chartstest.New(t, dir, chartstest.Options{Files: files})
	v, err := artifacts.OpenVerified(fx.ArchivePath, fx.Pins.OpenShell.SourceArchive.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	src := filepath.Join(dir, "source")
	if err := artifacts.ExtractHelm(v, fx.Pins.OpenShell.SourceArchive, src); err != nil {
		t.Fatal(err)
	}
	ch, err := charts.Package(charts.PackageOptions{Pins: fx.Pins, SourceDir: src, OutputDir: filepath.Join(dir, "charts")})
	if err != nil {
		t.Fatal(err)
	}
	return gatewayFixture{
		install:  GatewayInstall{Namespace: "oce-system", Chart: ch.Gateway, Images: fx.Pins.OpenShell.Images, ServiceType: "ClusterIP", PullPolicy: "Never"},
		manifest: parseManifest(t, chartstest.AgentSandboxManifest()),
	}
}

func capabilitiesOf(t testing.TB, manifest []*unstructured.Unstructured, kube string) ClusterCapabilities {
	t.Helper()
	versions, err := ManifestAPIVersions(manifest)
	if err != nil {
		t.Fatal(err)
	}
	return ClusterCapabilities{KubeVersion: kube, KubeVersionSource: "the pinned k3s image docker.io/rancher/k3s:" + kube + "-k3s1", ManifestAPIVersions: versions, ManifestSource: "https://fixture.invalid/sandbox.yaml"}
}

// The v0.1 Gateway chart, whose Agent Sandbox preflight is on by default, passes the offline
// check once it is rendered with the API versions the pinned manifest's CRDs add: the check
// finds the Gateway's container and the supervisor and sandbox runtime images in gateway.toml
// pinned, and leaves default_image to the chart.
func TestCheckGatewayRenderWithTheClusterCapabilities(t *testing.T) {
	f := newGatewayFixture(t, nil)
	found, err := CheckGatewayRender(f.install, capabilitiesOf(t, f.manifest, "v1.36.4"))
	if err != nil {
		t.Fatalf("CheckGatewayRender: %v", err)
	}
	if len(found.Pinned) != 3 || len(found.Unused) != 1 || !strings.Contains(found.Unused[0].Where, "default_image") {
		t.Errorf("found %+v", found)
	}
}

// With a manifest that lacks the Agent Sandbox CRDs, the chart's own preflight fails the
// offline render, and occ's message names what the render assumed and the API versions the
// chart tests for that the cluster would not serve. A chart whose kubeVersion the pinned k3s
// does not meet is refused as Helm's install would refuse it.
func TestCheckGatewayRenderRefusesAManifestWithoutTheCRDs(t *testing.T) {
	f := newGatewayFixture(t, nil)
	caps := capabilitiesOf(t, parseManifest(t, chartstest.AgentSandboxManifestWithoutCRDs()), "v1.36.4")
	_, err := CheckGatewayRender(f.install, caps)
	if err == nil {
		t.Fatal("the chart rendered without the Agent Sandbox API")
	}
	for _, want := range []string{
		"agent-sandbox-preflight.yaml", "Agent Sandbox is required",
		"Kubernetes v1.36.4 (the pinned k3s image docker.io/rancher/k3s:v1.36.4-k3s1)",
		"the cluster would not serve these API versions the chart tests for: agents.x-k8s.io/v1alpha1, agents.x-k8s.io/v1alpha1/Sandbox, agents.x-k8s.io/v1beta1, agents.x-k8s.io/v1beta1/Sandbox",
		"the Agent Sandbox manifest https://fixture.invalid/sandbox.yaml defines no CustomResourceDefinition serving them",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}

	set, _ := pins.Default()
	constrained := newGatewayFixture(t, map[string]string{set.OpenShell.Charts.Gateway + "/Chart.yaml": chartstest.GatewayChart()["Chart.yaml"] + "kubeVersion: \">=1.37.0-0\"\n"})
	if _, err := CheckGatewayRender(constrained.install, capabilitiesOf(t, f.manifest, "v1.36.4")); err == nil || !strings.Contains(err.Error(), "requires kubeVersion >=1.37.0-0, which the cluster's Kubernetes v1.36.4") {
		t.Errorf("a cluster older than the chart's kubeVersion: %v", err)
	}
}

// The same chart with a template that hard-codes the Gateway's image is refused naming the
// StatefulSet, its template and the values keys meant to set the image.
func TestCheckGatewayRenderRefusesAnIgnoredContainerImageKey(t *testing.T) {
	sts := chartstest.GatewayChart()["templates/statefulset.yaml"]
	old := `image: {{ include "openshell.gatewayImage" . | quote }}`
	if !strings.Contains(sts, old) {
		t.Fatal("the fixture's Gateway container image line changed; update this variant")
	}
	set, _ := pins.Default()
	f := newGatewayFixture(t, map[string]string{set.OpenShell.Charts.Gateway + "/templates/statefulset.yaml": strings.Replace(sts, old, `image: "ghcr.io/nvidia/openshell/gateway:{{ .Chart.AppVersion }}"`, 1)})
	_, err := CheckGatewayRender(f.install, capabilitiesOf(t, f.manifest, "v1.36.4"))
	var ce *images.ChartImageError
	if !errors.As(err, &ce) || len(ce.Offending) != 1 {
		t.Fatalf("CheckGatewayRender = %v, want the Gateway container refused", err)
	}
	if want := `StatefulSet openshell-gateway (openshell/templates/statefulset.yaml) containers[0] openshell-gateway: image "ghcr.io/nvidia/openshell/gateway:0.1.3-pre.2"; the values expected to set it: gateway.image.registry, gateway.image.repository, gateway.image.digest`; !strings.Contains(err.Error(), want) {
		t.Errorf("error:\n%v\nwant it to contain:\n%s", err, want)
	}
}

// The cost of the Gateway chart's offline check. old-render is the render occ made before the
// check took the cluster's capabilities: Helm's default capabilities (the chart's preflight
// switched off so that it renders at all). new-render derives the capabilities from the
// manifest and renders with them; new-render+check adds the image check of containers and
// rendered configuration, which is what the step now costs. Compare ns/op across the three.
func BenchmarkGatewayRenderCheck(b *testing.B) {
	f := newGatewayFixture(b, nil)
	b.Run("old-render", func(b *testing.B) {
		values, err := GatewayValues(f.install)
		if err != nil {
			b.Fatal(err)
		}
		values["agentSandbox"] = map[string]any{"preflight": map[string]any{"enabled": false}}
		for range b.N {
			rv, err := chartutil.ToRenderValues(f.install.Chart, values, chartutil.ReleaseOptions{Name: GatewayRelease, Namespace: f.install.Namespace, Revision: 1, IsInstall: true}, chartutil.DefaultCapabilities)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := engine.Render(f.install.Chart, rv); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("new-render", func(b *testing.B) {
		for range b.N {
			if _, err := RenderGateway(f.install, capabilitiesOf(b, f.manifest, "v1.36.4")); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("new-render+check", func(b *testing.B) {
		for range b.N {
			if _, err := CheckGatewayRender(f.install, capabilitiesOf(b, f.manifest, "v1.36.4")); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// The render check expects each image the Gateway runs under the values keys the install sets
// it by: an image added to the pins' Gateway images is set, and checked, by the same keys.
func TestGatewayImageValuesAreTheInstalledValues(t *testing.T) {
	set, err := pins.Default()
	if err != nil {
		t.Fatal(err)
	}
	values, err := GatewayValues(GatewayInstall{Images: set.OpenShell.Images, ServiceType: "ClusterIP", PullPolicy: "Never"})
	if err != nil {
		t.Fatal(err)
	}
	expected := GatewayImageValues(set.OpenShell.Images)
	if len(expected) != len(set.GatewayImages()) {
		t.Fatalf("%d expected images, the pins have %d Gateway images", len(expected), len(set.GatewayImages()))
	}
	for _, e := range expected {
		want := []string{e.Pin.Registry, e.Pin.Repository, e.Pin.Digest}
		for i, key := range e.ValuesKeys {
			var v any = values
			for _, part := range strings.Split(key, ".") {
				m, _ := v.(map[string]any)
				v = m[part]
			}
			if v != want[i] {
				t.Errorf("%s image: values %s = %v, want %q", e.Role, key, v, want[i])
			}
		}
	}
}
