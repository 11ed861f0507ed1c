package images

import (
	"errors"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"

	"github.com/openclaw/occ/internal/occdev/artifacts"
	"github.com/openclaw/occ/internal/occdev/charts"
	"github.com/openclaw/occ/internal/occdev/charts/chartstest"
	"github.com/openclaw/occ/internal/occdev/pins"
)

func expectedFor(set *pins.Set) []ExpectedImage {
	keys := func(prefix string) []string {
		return []string{prefix + ".image.registry", prefix + ".image.repository", prefix + ".image.digest"}
	}
	return []ExpectedImage{
		{Pin: set.OpenShell.Images.Gateway, ValuesKeys: keys("gateway")},
		{Pin: set.OpenShell.Images.Sandbox, ValuesKeys: keys("sandboxRuntime")},
		{Pin: set.OpenShell.Images.Supervisor, ValuesKeys: keys("supervisor")},
	}
}

// A chart whose templates ignore occ's image values would run tag-based images; every container
// kind (Deployment init containers, Jobs, CronJobs, bare Pods, a custom resource's pod template)
// is checked, each offender named with its object, template and the values keys meant to set it.
func TestCheckRenderedImagesFindsEveryContainerKind(t *testing.T) {
	set, err := pins.Default()
	if err != nil {
		t.Fatal(err)
	}
	gw := set.OpenShell.Images.Gateway
	manifest := `---
# Source: openshell/templates/configmap.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data:
  note: "image: ghcr.io/nvidia/openshell/gateway:latest is only text here"
---
# Source: openshell/templates/statefulset.yaml
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: openshell-gateway
  namespace: openshell-system
spec:
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      initContainers:
        - name: wait
          image: ghcr.io/nvidia/openshell/gateway:` + gw.Tag + `
      containers:
        - name: gateway
          image: ` + gw.DigestReference() + `
        - name: sidecar
          image: ` + gw.String() + `
---
# Source: openshell/templates/job.yaml
apiVersion: batch/v1
kind: Job
metadata:
  name: certgen
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
        - name: certgen
          image: busybox:1.36
---
# Source: openshell/templates/cron.yaml
apiVersion: batch/v1
kind: CronJob
metadata:
  name: rotate
spec:
  schedule: "@daily"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers:
            - name: rotate
              image: ` + set.OpenShell.Images.Supervisor.DigestReference() + `
---
# Source: openshell/templates/sandbox.yaml
apiVersion: agents.x-k8s.io/v1alpha1
kind: SandboxTemplate
metadata:
  name: default
spec:
  podTemplate:
    spec:
      containers:
        - name: sandbox
          image: ghcr.io/nvidia/openshell/sandbox@` + digestA + `
`
	err = CheckRenderedImages("openshell-gateway", strings.NewReader(manifest), expectedFor(set))
	var ce *ChartImageError
	if !errors.As(err, &ce) {
		t.Fatalf("CheckRenderedImages = %v, want ChartImageError", err)
	}
	got := map[string]OffendingImage{}
	for _, o := range ce.Offending {
		got[o.Image] = o
	}
	if len(got) != 3 {
		t.Fatalf("offending images %v, want exactly the tag-only gateway, busybox and the wrong-digest sandbox", ce.Offending)
	}
	tagOnly := got["ghcr.io/nvidia/openshell/gateway:"+gw.Tag]
	if tagOnly.Object != "StatefulSet openshell-system/openshell-gateway" || tagOnly.Container != "initContainers[0] wait" ||
		tagOnly.Source != "openshell/templates/statefulset.yaml" || strings.Join(tagOnly.ExpectedKeys, ",") != "gateway.image.registry,gateway.image.repository,gateway.image.digest" {
		t.Errorf("tag-only gateway = %+v", tagOnly)
	}
	if bb := got["busybox:1.36"]; bb.Object != "Job certgen" || len(bb.ExpectedKeys) != 9 {
		t.Errorf("busybox = %+v, want the Job and every values key (it resembles no pin)", bb)
	}
	sb := got["ghcr.io/nvidia/openshell/sandbox@"+digestA]
	if sb.Object != "SandboxTemplate default" || sb.Container != "spec.podTemplate.spec.containers[0] sandbox" || sb.ExpectedKeys[0] != "sandboxRuntime.image.registry" {
		t.Errorf("custom resource sandbox = %+v", sb)
	}
	for _, w := range []string{"openshell-gateway", "busybox:1.36", "gateway.image.digest", "values layout"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error does not mention %q:\n%s", w, err)
		}
	}
}

// renderFixtureGateway renders the generated Gateway chart with occ's real values through Helm's
// engine and joins the documents the way a release manifest does.
func renderFixtureGateway(t *testing.T, files map[string]string) (string, *pins.Set) {
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
	vals, err := charts.NewGatewayValues(charts.GatewayOptions{Images: fx.Pins.OpenShell.Images, ServiceType: charts.ServiceClusterIP, PullPolicy: "Never"})
	if err != nil {
		t.Fatal(err)
	}
	return render(t, ch.Gateway, vals), fx.Pins
}

func render(t *testing.T, ch *chart.Chart, v *charts.GatewayValues) string {
	t.Helper()
	m, err := v.Map()
	if err != nil {
		t.Fatal(err)
	}
	rv, err := chartutil.ToRenderValues(ch, m, chartutil.ReleaseOptions{Name: charts.GatewayRelease, Namespace: "oce-system", IsInstall: true, Revision: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := engine.Render(ch, rv)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(out))
	for n := range out {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		if strings.HasSuffix(n, "NOTES.txt") || strings.TrimSpace(out[n]) == "" {
			continue
		}
		b.WriteString("---\n# Source: " + n + "\n" + out[n] + "\n")
	}
	return b.String()
}

// The Gateway chart with the values occ passes renders only pinned digests and passes; the same
// chart with one template that ignores the image values is refused before install.
func TestCheckRenderedImagesOnTheRenderedGatewayChart(t *testing.T) {
	manifest, set := renderFixtureGateway(t, nil)
	if !strings.Contains(manifest, set.OpenShell.Images.Gateway.DigestReference()) {
		t.Fatalf("the rendered chart does not use the pinned gateway digest at all:\n%s", manifest)
	}
	if err := CheckRenderedImages("openshell-gateway", strings.NewReader(manifest), expectedFor(set)); err != nil {
		t.Fatalf("the chart with occ's values was refused: %v", err)
	}

	ignoring := `apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: {{ .Release.Name }}-node-agent
spec:
  selector: {matchLabels: {app: node-agent}}
  template:
    metadata: {labels: {app: node-agent}}
    spec:
      containers:
        - name: agent
          image: "ghcr.io/nvidia/openshell/supervisor:{{ .Chart.AppVersion }}"
`
	manifest, set = renderFixtureGateway(t, map[string]string{set.OpenShell.Charts.Gateway + "/templates/node-agent.yaml": ignoring})
	err := CheckRenderedImages("openshell-gateway", strings.NewReader(manifest), expectedFor(set))
	var ce *ChartImageError
	if !errors.As(err, &ce) || len(ce.Offending) != 1 {
		t.Fatalf("CheckRenderedImages = %v, want one offending image", err)
	}
	o := ce.Offending[0]
	if o.Image != "ghcr.io/nvidia/openshell/supervisor:"+set.OpenShell.Version || o.Object != "DaemonSet openshell-gateway-node-agent" ||
		!strings.HasSuffix(o.Source, "templates/node-agent.yaml") || o.ExpectedKeys[2] != "supervisor.image.digest" {
		t.Fatalf("offending = %+v", o)
	}
}

// A manifest that is not YAML is an error, not a pass.
func TestCheckRenderedImagesBadManifest(t *testing.T) {
	set, _ := pins.Default()
	if err := CheckRenderedImages("x", strings.NewReader("---\nkind: [unclosed\n"), expectedFor(set)); err == nil {
		t.Fatal("garbage manifest passed")
	}
}
