package charts

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openclaw/occ/internal/occdev/artifacts"
	"github.com/openclaw/occ/internal/occdev/charts/chartstest"
	"github.com/openclaw/occ/internal/occdev/pins"
)

// prepare runs the real pipeline on a generated archive: verify, extract the Helm subtree,
// package both charts.
func prepare(t *testing.T, o chartstest.Options) (*Charts, *pins.Set, string) {
	t.Helper()
	dir := t.TempDir()
	fx := chartstest.New(t, dir, o)
	v, err := artifacts.OpenVerified(fx.ArchivePath, fx.Pins.OpenShell.SourceArchive.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	src := filepath.Join(dir, "source")
	if err := artifacts.ExtractHelm(v, fx.Pins.OpenShell.SourceArchive, src); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "state", "charts")
	ch, err := Package(PackageOptions{Pins: fx.Pins, SourceDir: src, OutputDir: out})
	if err != nil {
		t.Fatalf("Package: %v", err)
	}
	return ch, fx.Pins, out
}

// The charts in git carry placeholder versions; the packages must carry the pinned release.
func TestPackageStampsPinnedVersion(t *testing.T) {
	ch, set, out := prepare(t, chartstest.Options{})
	version := set.OpenShell.Version
	for _, c := range []struct {
		pkg, name string
		chart     *chart.Chart
	}{
		{ch.GatewayPackage, "openshell", ch.Gateway},
		{ch.WorkspacePackage, "openshell-workspace", ch.Workspace},
	} {
		if want := filepath.Join(out, c.name+"-"+version+".tgz"); c.pkg != want {
			t.Errorf("package path %s, want %s", c.pkg, want)
		}
		fi, err := os.Stat(c.pkg)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("package %s: %v mode %v", c.pkg, err, fi.Mode())
		}
		if c.chart.Metadata.Version != version || c.chart.Metadata.AppVersion != version || c.chart.Name() != c.name {
			t.Errorf("loaded %s: name %q version %q appVersion %q", c.pkg, c.chart.Name(), c.chart.Metadata.Version, c.chart.Metadata.AppVersion)
		}
		if len(c.chart.Templates) == 0 {
			t.Errorf("%s has no templates after the round trip", c.pkg)
		}
	}
}

// A pin pointing at a chart directory the archive does not have fails naming the pin key.
func TestPackageMissingChart(t *testing.T) {
	fx := chartstest.New(t, t.TempDir(), chartstest.Options{})
	set := *fx.Pins
	set.OpenShell.Charts.Workspace = "deploy/helm/openshell-workspaces"
	_, err := Package(PackageOptions{Pins: &set, SourceDir: t.TempDir(), OutputDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "openshell.charts") {
		t.Fatalf("Package = %v", err)
	}
}

func byKind(objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	m := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		m[o.GetKind()] = o
	}
	return m
}

// The Workspace chart is rendered once into the objects every OCE tenant namespace receives:
// exactly ServiceAccount, Role, RoleBinding and NetworkPolicy, without namespaces, bound to the
// development Gateway.
func TestRenderWorkspace(t *testing.T) {
	ch, _, _ := prepare(t, chartstest.Options{})
	vals, err := NewWorkspaceValues("openshell-system")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := RenderWorkspace(ch.Workspace, vals)
	if err != nil {
		t.Fatalf("RenderWorkspace: %v", err)
	}
	var order []string
	for _, o := range objs {
		order = append(order, o.GetKind()+"/"+o.GetName())
		if o.GetNamespace() != "" {
			t.Errorf("%s kept namespace %q", o.GetKind(), o.GetNamespace())
		}
	}
	want := "NetworkPolicy/openshell-workspace-sandbox-ssh Role/openshell-workspace-sandbox RoleBinding/openshell-workspace-sandbox ServiceAccount/openshell-sandbox"
	if strings.Join(order, " ") != want {
		t.Fatalf("objects = %v, want %s", order, want)
	}
	k := byKind(objs)
	subjects, _, _ := unstructured.NestedSlice(k["RoleBinding"].Object, "subjects")
	if len(subjects) != 1 {
		t.Fatalf("subjects = %v", subjects)
	}
	subj := subjects[0].(map[string]any)
	// Only metadata.namespace is stripped: the subject must still point at the Gateway's namespace.
	if subj["name"] != GatewayServiceAccount || subj["namespace"] != "openshell-system" {
		t.Errorf("RoleBinding subject = %v", subj)
	}
	ingress, _, _ := unstructured.NestedSlice(k["NetworkPolicy"].Object, "spec", "ingress")
	from := ingress[0].(map[string]any)["from"].([]any)[0].(map[string]any)
	podSel, _, _ := unstructured.NestedStringMap(from, "podSelector", "matchLabels")
	nsSel, _, _ := unstructured.NestedStringMap(from, "namespaceSelector", "matchLabels")
	if podSel["app.kubernetes.io/instance"] != GatewayRelease || nsSel["kubernetes.io/metadata.name"] != "openshell-system" {
		t.Errorf("NetworkPolicy peer = pods %v in namespaces %v", podSel, nsSel)
	}
	rules, _, _ := unstructured.NestedSlice(k["Role"].Object, "rules")
	if !strings.Contains(fmtRules(rules), "persistentvolumeclaims") {
		t.Errorf("gateway.allowDriverConfig=true did not reach the chart: rules %v", rules)
	}
}

func fmtRules(rules []any) string {
	var b strings.Builder
	for _, r := range rules {
		res, _ := r.(map[string]any)["resources"].([]any)
		for _, x := range res {
			b.WriteString(x.(string) + " ")
		}
	}
	return b.String()
}

// A Workspace chart that grows a wider object (here a ConfigMap, or a ClusterRole) must not slip
// into every tenant namespace: the render is refused, naming the object and its template.
func TestRenderWorkspaceRefusesOtherKinds(t *testing.T) {
	cases := map[string]string{
		"ConfigMap":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: leak\ndata:\n  a: b\n",
		"ClusterRole": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: wide\nrules: []\n",
		"Role":        "apiVersion: rbac.authorization.k8s.io/v1beta1\nkind: Role\nmetadata:\n  name: old\nrules: []\n",
	}
	for kind, body := range cases {
		t.Run(kind, func(t *testing.T) {
			ch, _, _ := prepare(t, chartstest.Options{Files: map[string]string{
				"deploy/helm/openshell-workspace/templates/extra.yaml": body,
			}})
			vals, _ := NewWorkspaceValues("openshell-system")
			_, err := RenderWorkspace(ch.Workspace, vals)
			if err == nil || !strings.Contains(err.Error(), "OpenShell workspace chart rendered an unsupported resource") ||
				!strings.Contains(err.Error(), kind) || !strings.Contains(err.Error(), "templates/extra.yaml") {
				t.Fatalf("RenderWorkspace = %v; want a refusal naming %s and templates/extra.yaml", err, kind)
			}
		})
	}
}

// A chart that renders nothing (every template removed or disabled) fails instead of writing an
// Installation with no workspace resources.
func TestRenderWorkspaceEmpty(t *testing.T) {
	files := map[string]string{}
	for _, name := range []string{"serviceaccount.yaml", "role.yaml", "rolebinding.yaml", "networkpolicy.yaml"} {
		files["deploy/helm/openshell-workspace/templates/"+name] = ""
	}
	ch, _, _ := prepare(t, chartstest.Options{Files: files})
	vals, _ := NewWorkspaceValues("openshell-system")
	if _, err := RenderWorkspace(ch.Workspace, vals); err == nil || !strings.Contains(err.Error(), "rendered no resources") {
		t.Fatalf("RenderWorkspace = %v", err)
	}
	if _, err := NewWorkspaceValues("Not_A_Namespace"); err == nil {
		t.Fatal("NewWorkspaceValues accepted an invalid namespace")
	}
}

// renderGateway renders the packaged Gateway chart as `helm install` would for release
// openshell-gateway in ns, on a cluster that serves the Agent Sandbox API.
func renderGateway(t *testing.T, ch *chart.Chart, v *GatewayValues, ns string) map[string]*unstructured.Unstructured {
	t.Helper()
	m, err := v.Map()
	if err != nil {
		t.Fatal(err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.APIVersions = append(append(chartutil.VersionSet{}, caps.APIVersions...), "agents.x-k8s.io/v1alpha1")
	rv, err := chartutil.ToRenderValues(ch, m, chartutil.ReleaseOptions{Name: GatewayRelease, Namespace: ns, IsInstall: true, Revision: 1}, caps)
	if err != nil {
		t.Fatal(err)
	}
	out, err := engine.Render(ch, rv)
	if err != nil {
		t.Fatalf("render Gateway chart: %v", err)
	}
	objs := map[string]*unstructured.Unstructured{}
	for name, body := range out {
		if strings.HasSuffix(name, "NOTES.txt") || strings.TrimSpace(body) == "" {
			continue
		}
		parsed, err := artifacts.ParseYAML([]byte(body), name)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range parsed {
			objs[o.GetKind()+"/"+o.GetName()] = o
		}
	}
	return objs
}

// The development Gateway values, rendered through a chart with the real value names:
// images by digest with the tag dropped, the development service, unauthenticated plaintext,
// operator workspace mode, no PKI hook, no chart-made workspace resources.
func TestGatewayValuesRenderIntoChart(t *testing.T) {
	ch, set, _ := prepare(t, chartstest.Options{})
	v, err := NewGatewayValues(GatewayOptions{Images: set.OpenShell.Images, ServiceType: ServiceNodePort, NodePort: DevelopmentNodePort, PullPolicy: "Never"})
	if err != nil {
		t.Fatal(err)
	}
	objs := renderGateway(t, ch.Gateway, v, "openshell-system")

	sts := objs["StatefulSet/openshell-gateway"]
	if sts == nil {
		t.Fatalf("no StatefulSet openshell-gateway in %v", keys(objs))
	}
	containers, _, _ := unstructured.NestedSlice(sts.Object, "spec", "template", "spec", "containers")
	c := containers[0].(map[string]any)
	wantImage := "ghcr.io/nvidia/openshell/gateway@" + set.OpenShell.Images.Gateway.Digest
	if c["image"] != wantImage || c["imagePullPolicy"] != "Never" {
		t.Errorf("gateway container image %v pull %v, want %s Never", c["image"], c["imagePullPolicy"], wantImage)
	}
	psc, _, _ := unstructured.NestedMap(sts.Object, "spec", "template", "spec", "securityContext")
	if psc["fsGroup"] != int64(1000) || psc["seccompProfile"].(map[string]any)["type"] != "RuntimeDefault" {
		t.Errorf("pod securityContext = %v; want the chart's fsGroup merged with RuntimeDefault seccomp", psc)
	}
	svc := objs["Service/openshell-gateway"]
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if typ, _, _ := unstructured.NestedString(svc.Object, "spec", "type"); typ != "NodePort" || ports[0].(map[string]any)["nodePort"] != int64(30051) {
		t.Errorf("Service type %s ports %v, want NodePort 30051", typ, ports)
	}
	cfg, _, _ := unstructured.NestedString(objs["ConfigMap/openshell-gateway-config"].Object, "data", "gateway.toml")
	for _, want := range []string{
		"disable_tls = true",
		"allow_unauthenticated_users = true",
		`workspace_mode = "operator"`,
		`operator_namespace_label = "openshell.ai/openclaw-workspace=true"`,
		"allow_driver_config = true",
		"resource_admission = false",
		`default_runtime_class_name = "openshell-sandbox"`,
		`service_account_name = "openshell-sandbox"`,
		`sandbox_runtime_image = "ghcr.io/nvidia/openshell/sandbox@` + set.OpenShell.Images.Sandbox.Digest + `"`,
		`supervisor_image = "ghcr.io/nvidia/openshell/supervisor@` + set.OpenShell.Images.Supervisor.Digest + `"`,
		`supervisor_image_pull_policy = "Never"`,
		`sandbox_runtime_image_pull_policy = "Never"`,
		`grpc_endpoint = "http://openshell-gateway.openshell-system.svc.cluster.local:8080"`,
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("gateway.toml lacks %q:\n%s", want, cfg)
		}
	}
	for _, absent := range []string{"Job/openshell-gateway-certgen", "ServiceAccount/openshell-sandbox", "Role/openshell-gateway-sandbox"} {
		if objs[absent] != nil {
			t.Errorf("%s rendered; pkiInitJob and workspaceResources must be disabled", absent)
		}
	}
	if objs["ServiceAccount/openshell-gateway"] == nil {
		t.Errorf("gateway ServiceAccount missing: %v", keys(objs))
	}

	// The in-cluster control plane profile: ClusterIP, no nodePort, images pulled.
	v, err = NewGatewayValues(GatewayOptions{Images: set.OpenShell.Images, ServiceType: ServiceClusterIP, PullPolicy: "IfNotPresent"})
	if err != nil {
		t.Fatal(err)
	}
	objs = renderGateway(t, ch.Gateway, v, "oce-system")
	svc = objs["Service/openshell-gateway"]
	ports, _, _ = unstructured.NestedSlice(svc.Object, "spec", "ports")
	if typ, _, _ := unstructured.NestedString(svc.Object, "spec", "type"); typ != "ClusterIP" || ports[0].(map[string]any)["nodePort"] != nil {
		t.Errorf("ClusterIP profile: Service type %s ports %v", typ, ports)
	}
}

func keys(m map[string]*unstructured.Unstructured) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Values Helm receives: images as registry/repository/digest, never with a tag.
func TestGatewayValuesMapShape(t *testing.T) {
	set, err := pins.Default()
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewGatewayValues(GatewayOptions{Images: set.OpenShell.Images, ServiceType: ServiceNodePort, NodePort: DevelopmentNodePort, PullPolicy: "Never"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := v.Map()
	if err != nil {
		t.Fatal(err)
	}
	img := m["gateway"].(map[string]any)["image"].(map[string]any)
	want := map[string]any{"registry": "ghcr.io", "repository": "nvidia/openshell/gateway", "digest": set.OpenShell.Images.Gateway.Digest, "pullPolicy": "Never"}
	if len(img) != len(want) {
		t.Errorf("gateway.image = %v, want exactly %v", img, want)
	}
	for k, w := range want {
		if img[k] != w {
			t.Errorf("gateway.image.%s = %v, want %v", k, img[k], w)
		}
	}
	if m["fullnameOverride"] != GatewayRelease || m["workspaceResources"].(map[string]any)["enabled"] != false || m["pkiInitJob"].(map[string]any)["enabled"] != false {
		t.Errorf("values = %v", m)
	}
}

// Profile options that would render a broken Gateway are refused up front.
func TestGatewayValuesRefuseBadOptions(t *testing.T) {
	set, err := pins.Default()
	if err != nil {
		t.Fatal(err)
	}
	noDigest := set.OpenShell.Images
	noDigest.Supervisor.Digest = ""
	cases := []struct {
		name string
		o    GatewayOptions
		want string
	}{
		{"nodePort with ClusterIP", GatewayOptions{Images: set.OpenShell.Images, ServiceType: ServiceClusterIP, NodePort: 30051, PullPolicy: "Never"}, "only valid with service type NodePort"},
		{"nodePort out of range", GatewayOptions{Images: set.OpenShell.Images, ServiceType: ServiceNodePort, NodePort: 8080, PullPolicy: "Never"}, "30000-32767"},
		{"LoadBalancer", GatewayOptions{Images: set.OpenShell.Images, ServiceType: "LoadBalancer", PullPolicy: "Never"}, `type "LoadBalancer"`},
		{"pull policy", GatewayOptions{Images: set.OpenShell.Images, ServiceType: ServiceClusterIP, PullPolicy: "Sometimes"}, `pullPolicy "Sometimes"`},
		{"image without digest", GatewayOptions{Images: noDigest, ServiceType: ServiceClusterIP, PullPolicy: "Never"}, "supervisor image"},
	}
	for _, c := range cases {
		if _, err := NewGatewayValues(c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}

// The Gateway chart's Agent Sandbox preflight is on by default, as in OpenShell's chart: rendered with
// Helm's default capabilities (what occ's offline check used to pass) it fails, and it passes
// once the cluster serves agents.x-k8s.io at either version, in either form.
func TestGatewayChartAgentSandboxPreflight(t *testing.T) {
	ch, set, _ := prepare(t, chartstest.Options{})
	v, err := NewGatewayValues(GatewayOptions{Images: set.OpenShell.Images, ServiceType: ServiceClusterIP, PullPolicy: "Never"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := v.Map()
	if err != nil {
		t.Fatal(err)
	}
	render := func(extra ...string) error {
		caps := chartutil.DefaultCapabilities.Copy()
		caps.APIVersions = append(append(chartutil.VersionSet{}, caps.APIVersions...), extra...)
		rv, err := chartutil.ToRenderValues(ch.Gateway, m, chartutil.ReleaseOptions{Name: GatewayRelease, Namespace: "oce-system", IsInstall: true, Revision: 1}, caps)
		if err != nil {
			t.Fatal(err)
		}
		_, err = engine.Render(ch.Gateway, rv)
		return err
	}
	if err := render(); err == nil || !strings.Contains(err.Error(), "agent-sandbox-preflight.yaml") || !strings.Contains(err.Error(), "Agent Sandbox is required") {
		t.Fatalf("render with Helm's default capabilities = %v; want the preflight's failure", err)
	}
	if err := render("extensions.agents.x-k8s.io/v1alpha1", "agents.x-k8s.io/v2"); err == nil {
		t.Fatal("the preflight passed for API versions it does not accept")
	}
	for _, ok := range [][]string{{"agents.x-k8s.io/v1alpha1"}, {"agents.x-k8s.io/v1beta1/Sandbox"}} {
		if err := render(ok...); err != nil {
			t.Errorf("render with %v: %v", ok, err)
		}
	}
}

// An OpenShell engineer selects local charts: a chart directory and a packaged chart load as
// they are (their own version kept); a Workspace chart given as the Gateway's, a directory
// that is no chart, and a missing path are refused with the rule.
func TestLoadLocal(t *testing.T) {
	ch, _, out := prepare(t, chartstest.Options{})
	dir := t.TempDir()
	for rel, body := range chartstest.GatewayChart() {
		p := filepath.Join(dir, "openshell", filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got, err := LoadLocal(filepath.Join(dir, "openshell"), "openshell-workspace")
	if err != nil || got.Metadata.Version != "0.0.0" || len(got.Templates) == 0 {
		t.Fatalf("LoadLocal(directory) = %v, %v", got, err)
	}
	if got, err := LoadLocal(ch.GatewayPackage, "openshell-workspace"); err != nil || got.Name() != "openshell" {
		t.Fatalf("LoadLocal(package) = %v, %v", got, err)
	}
	for path, want := range map[string]string{
		ch.WorkspacePackage:               `is chart "openshell-workspace", the other of the two OpenShell charts`,
		out:                               "is not a Helm chart",
		filepath.Join(dir, "no-such-dir"): "cannot be read",
	} {
		if _, err := LoadLocal(path, "openshell-workspace"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LoadLocal(%s) = %v, want %q", path, err, want)
		}
	}
}

// `up --dry-run` names the directory the run packages the charts into (the state's
// PackagedDir), with the permission bits Package gives it.
func TestDescribePackageNamesTheDirectoryTheRunWrites(t *testing.T) {
	_, set, out := prepare(t, chartstest.Options{})
	state := t.TempDir()
	d := DescribePackage(state, set.OpenShell.Version)
	fi, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Files) != 1 || d.Files[0].Path != filepath.Join(state, PackagedDir) || d.Files[0].Kind != "directory" || d.Files[0].Mode != fmt.Sprintf("%04o", fi.Mode().Perm()) {
		t.Errorf("described %+v; the run wrote a directory of mode %v", d.Files, fi.Mode().Perm())
	}
}
