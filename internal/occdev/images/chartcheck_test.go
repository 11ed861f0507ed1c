package images

import (
	"errors"
	"path/filepath"
	"reflect"
	"slices"
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

// expectedFor are the Gateway's three pins as the platform layer states them; required says
// whether each must be named somewhere.
func expectedFor(set *pins.Set, required bool) []ExpectedImage {
	keys := func(prefix string) []string {
		return []string{prefix + ".image.registry", prefix + ".image.repository", prefix + ".image.digest"}
	}
	return []ExpectedImage{
		{Pin: set.OpenShell.Images.Gateway, Role: "Gateway", ValuesKeys: keys("gateway"), Required: required},
		{Pin: set.OpenShell.Images.Sandbox, Role: "sandbox runtime", ValuesKeys: keys("sandboxRuntime"), Required: required},
		{Pin: set.OpenShell.Images.Supervisor, Role: "supervisor", ValuesKeys: keys("supervisor"), Required: required},
	}
}

// gatewayRules are the rules the platform layer applies to the Gateway chart: every pin
// required, default_image left to the chart.
func gatewayRules(set *pins.Set) Rules {
	return Rules{Expected: expectedFor(set, true), Unused: []UnusedConfigKey{{Key: "default_image", Reason: "never started"}}}
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
	_, err = CheckRenderedImages("openshell-gateway", strings.NewReader(manifest), Rules{Expected: expectedFor(set, false)})
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
	if tagOnly.Object != "StatefulSet openshell-system/openshell-gateway" || tagOnly.Where != "initContainers[0] wait" ||
		tagOnly.Source != "openshell/templates/statefulset.yaml" || strings.Join(tagOnly.ExpectedKeys, ",") != "gateway.image.registry,gateway.image.repository,gateway.image.digest" {
		t.Errorf("tag-only gateway = %+v", tagOnly)
	}
	if bb := got["busybox:1.36"]; bb.Object != "Job certgen" || len(bb.ExpectedKeys) != 0 {
		t.Errorf("busybox = %+v, want the Job and no values key (it resembles no pin)", bb)
	}
	if want := `image "busybox:1.36"; it is none of the pinned images, and no value occ sets reaches it`; !strings.Contains(err.Error(), want) {
		t.Errorf("error does not say busybox is no pin's:\n%s", err)
	}
	sb := got["ghcr.io/nvidia/openshell/sandbox@"+digestA]
	if sb.Object != "SandboxTemplate default" || sb.Where != "spec.podTemplate.spec.containers[0] sandbox" || sb.ExpectedKeys[0] != "sandboxRuntime.image.registry" {
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
	// The cluster serves the Agent Sandbox API, as after the pinned manifest is applied.
	caps := chartutil.DefaultCapabilities.Copy()
	caps.APIVersions = append(append(chartutil.VersionSet{}, caps.APIVersions...), "agents.x-k8s.io/v1alpha1", "agents.x-k8s.io/v1alpha1/Sandbox")
	rv, err := chartutil.ToRenderValues(ch, m, chartutil.ReleaseOptions{Name: charts.GatewayRelease, Namespace: "oce-system", IsInstall: true, Revision: 1}, caps)
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

// The Gateway chart of the v0.1 layout with the values occ passes renders only pinned digests:
// the Gateway's container, and the supervisor and sandbox runtime images in gateway.toml. It
// passes, with gateway.toml's default_image reported as left to the chart. The same chart with
// one template that ignores the image values is refused before install.
func TestCheckRenderedImagesOnTheRenderedGatewayChart(t *testing.T) {
	manifest, set := renderFixtureGateway(t, nil)
	if !strings.Contains(manifest, set.OpenShell.Images.Gateway.DigestReference()) {
		t.Fatalf("the rendered chart does not use the pinned gateway digest at all:\n%s", manifest)
	}
	found, err := CheckRenderedImages("openshell-gateway", strings.NewReader(manifest), gatewayRules(set))
	if err != nil {
		t.Fatalf("the chart with occ's values was refused: %v", err)
	}
	var where []string
	for _, f := range found.Pinned {
		where = append(where, f.Object+" "+f.Where)
	}
	for _, want := range []string{
		"StatefulSet openshell-gateway containers[0] openshell-gateway",
		"ConfigMap openshell-gateway-config gateway.toml line 13, key openshell.gateway.supervisor_image",
		"ConfigMap openshell-gateway-config gateway.toml line 33, key openshell.drivers.kubernetes.sandbox_runtime_image",
	} {
		if !slices.Contains(where, want) {
			t.Errorf("pinned images found at %q, want %q among them", where, want)
		}
	}
	if len(found.Unused) != 1 || found.Unused[0].Image != "ghcr.io/nvidia/openshell-community/sandboxes/base:latest" ||
		found.Unused[0].Where != "gateway.toml line 12, key openshell.gateway.default_image" {
		t.Errorf("unused images = %+v, want gateway.toml's default_image", found.Unused)
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
	_, err = CheckRenderedImages("openshell-gateway", strings.NewReader(manifest), gatewayRules(set))
	var ce *ChartImageError
	if !errors.As(err, &ce) || len(ce.Offending) != 1 || len(ce.Missing) != 0 {
		t.Fatalf("CheckRenderedImages = %v, want one offending image", err)
	}
	o := ce.Offending[0]
	if o.Image != "ghcr.io/nvidia/openshell/supervisor:"+set.OpenShell.Version || o.Object != "DaemonSet openshell-gateway-node-agent" ||
		!strings.HasSuffix(o.Source, "templates/node-agent.yaml") || o.ExpectedKeys[2] != "supervisor.image.digest" {
		t.Fatalf("offending = %+v", o)
	}
}

// Of the three pins the v0.1 Gateway chart names, its own objects start only the Gateway's
// image: the supervisor and sandbox runtime images are in gateway.toml, for the Sandboxes the
// Gateway is asked to create later, so the Gateway's install needs only its own image in the
// node. A pinned image that a workload of the chart runs, or that an object of an unfamiliar kind
// names (its controller may start it once applied), is started by the chart too; an image named
// only in a container's environment is not.
func TestCheckRenderedImagesSaysWhichPinsTheChartStarts(t *testing.T) {
	manifest, set := renderFixtureGateway(t, nil)
	imgs := set.OpenShell.Images
	found, err := CheckRenderedImages("openshell-gateway", strings.NewReader(manifest), gatewayRules(set))
	if err != nil {
		t.Fatal(err)
	}
	if want := []pins.Image{imgs.Gateway}; !reflect.DeepEqual(found.Started, want) {
		t.Fatalf("the chart starts %v, want only the Gateway image %v", found.Started, want)
	}

	extra := `apiVersion: apps/v1
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
          image: ` + imgs.Supervisor.DigestReference() + `
          env:
            - name: SANDBOX_IMAGE
              value: ` + imgs.Sandbox.DigestReference() + `
`
	manifest, set = renderFixtureGateway(t, map[string]string{set.OpenShell.Charts.Gateway + "/templates/node-agent.yaml": extra})
	found, err = CheckRenderedImages("openshell-gateway", strings.NewReader(manifest), gatewayRules(set))
	if err != nil {
		t.Fatal(err)
	}
	if want := []pins.Image{imgs.Gateway, imgs.Supervisor}; !reflect.DeepEqual(found.Started, want) {
		t.Fatalf("with a DaemonSet running the supervisor the chart starts %v, want %v (the Sandbox image only in its environment)", found.Started, want)
	}

	pool := `apiVersion: example.com/v1
kind: WarmPool
metadata:
  name: {{ .Release.Name }}-pool
spec:
  sandboxImage: ` + imgs.Sandbox.DigestReference() + `
`
	manifest, set = renderFixtureGateway(t, map[string]string{set.OpenShell.Charts.Gateway + "/templates/pool.yaml": pool})
	found, err = CheckRenderedImages("openshell-gateway", strings.NewReader(manifest), gatewayRules(set))
	if err != nil {
		t.Fatal(err)
	}
	if want := []pins.Image{imgs.Gateway, imgs.Sandbox}; !reflect.DeepEqual(found.Started, want) {
		t.Fatalf("with a custom resource naming the Sandbox image the chart starts %v, want %v", found.Started, want)
	}
}

// helpersIgnoringSupervisorDigest is the fixture's _helpers.tpl with a supervisor image helper
// that ignores supervisor.image.* and renders the official repository at the chart's version.
func helpersIgnoringSupervisorDigest(t *testing.T) string {
	t.Helper()
	helpers := chartstest.GatewayChart()["templates/_helpers.tpl"]
	old := `{{- define "openshell.supervisorImage" -}}
{{- include "openshell.imageRef" (dict "image" .Values.supervisor.image "root" .) -}}
{{- end -}}`
	if !strings.Contains(helpers, old) {
		t.Fatal("the fixture's supervisor image helper changed; update this variant")
	}
	return strings.Replace(helpers, old, `{{- define "openshell.supervisorImage" -}}
{{- printf "ghcr.io/nvidia/openshell/supervisor:%s" .Chart.AppVersion -}}
{{- end -}}`, 1)
}

// A Gateway chart whose supervisor helper ignores supervisor.image.* still writes
// supervisor_image into gateway.toml, as a tag: the Gateway would start a supervisor occ never
// pulled. The refusal names the ConfigMap, its template, the line and key in gateway.toml, the
// image and the values keys that were meant to set it, and that the pinned supervisor appears
// nowhere.
func TestCheckRenderedImagesRefusesAnUnpinnedSupervisorInGatewayToml(t *testing.T) {
	set, _ := pins.Default()
	manifest, set := renderFixtureGateway(t, map[string]string{set.OpenShell.Charts.Gateway + "/templates/_helpers.tpl": helpersIgnoringSupervisorDigest(t)})
	_, err := CheckRenderedImages("openshell 0.1.3-pre.2", strings.NewReader(manifest), gatewayRules(set))
	var ce *ChartImageError
	if !errors.As(err, &ce) || len(ce.Offending) != 1 || len(ce.Missing) != 1 || ce.Missing[0].Role != "supervisor" {
		t.Fatalf("CheckRenderedImages = %v, want the supervisor refused", err)
	}
	want := `ConfigMap openshell-gateway-config (openshell/templates/gateway-config.yaml) gateway.toml line 13, key openshell.gateway.supervisor_image: image "ghcr.io/nvidia/openshell/supervisor:` + set.OpenShell.Version + `"; the values expected to set it: supervisor.image.registry, supervisor.image.repository, supervisor.image.digest`
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error does not name the supervisor line:\n%v\nwant it to contain:\n%s", err, want)
	}
}

// A Gateway chart that drops supervisor_image from gateway.toml leaves the Gateway on its
// built-in default supervisor: no line is wrong, but the pinned supervisor is named nowhere,
// and that is refused naming the pin and the values keys the chart ignores.
func TestCheckRenderedImagesRefusesAPinNamedNowhere(t *testing.T) {
	set, _ := pins.Default()
	cfg := chartstest.GatewayChart()["templates/gateway-config.yaml"]
	line := `    {{- if include "openshell.supervisorImageOverridden" . }}
    supervisor_image = {{ include "openshell.supervisorImage" . | quote }}
    {{- end }}
`
	if !strings.Contains(cfg, line) {
		t.Fatal("the fixture's supervisor_image line changed; update this variant")
	}
	manifest, set := renderFixtureGateway(t, map[string]string{set.OpenShell.Charts.Gateway + "/templates/gateway-config.yaml": strings.Replace(cfg, line, "", 1)})
	_, err := CheckRenderedImages("openshell", strings.NewReader(manifest), gatewayRules(set))
	var ce *ChartImageError
	if !errors.As(err, &ce) || len(ce.Offending) != 0 || len(ce.Missing) != 1 || ce.Missing[0].Role != "supervisor" {
		t.Fatalf("CheckRenderedImages = %v, want only the supervisor missing", err)
	}
	for _, w := range []string{"the pinned supervisor image " + set.OpenShell.Images.Supervisor.DigestReference() + " is named nowhere", "supervisor.image.digest", "built-in default"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
}

// Images in rendered configuration, in every shape a chart writes them: TOML lines (strings and
// arrays, in tables and inline tables), YAML and JSON values under keys naming an image (a plain
// string, a list, or a map of registry/repository/tag/digest), a data key that is itself an
// image setting, and container environment variables and flags. Keys about images that are
// not images (pull policies, pull secrets) and plain-text notes are not read as images.
func TestCheckRenderedImagesReadsConfiguration(t *testing.T) {
	set, _ := pins.Default()
	sup := set.OpenShell.Images.Supervisor
	manifest := `---
# Source: openshell/templates/config.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
  namespace: oce-system
data:
  gateway.toml: |
    [openshell.gateway]
    # supervisor_image = "commented:out"
    supervisor_image = "` + sup.DigestReference() + `"
    image_pull_policy = "Never"
    extra_images = ["busybox:1.36", ""]
    runtime = { sandbox_image = "ghcr.io/nvidia/openshell/sandbox:v1" }
  driver.yaml: |
    sandbox:
      image: ghcr.io/nvidia/openshell/sandbox:latest
      imagePullSecrets: [regcred]
    warm:
      images: ["alpine:3"]
    runtime:
      image: {registry: ghcr.io, repository: nvidia/openshell/sandbox, tag: v2}
  settings.json: '{"supervisorImage": "ghcr.io/nvidia/openshell/supervisor:v3"}'
  SUPERVISOR_IMAGE: ghcr.io/nvidia/openshell/supervisor:v4
  note: "image: ghcr.io/nvidia/openshell/gateway:latest is only text here"
---
# Source: openshell/templates/deployment.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: gw
spec:
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      containers:
        - name: gateway
          image: ` + set.OpenShell.Images.Gateway.DigestReference() + `
          args: ["--supervisor-image", "ghcr.io/nvidia/openshell/supervisor:v5", "--log-level=info", "--sandbox-image=ghcr.io/nvidia/openshell/sandbox:v6"]
          env:
            - {name: OPENSHELL_SANDBOX_IMAGE, value: "nvcr.io/nvidia/base/ubuntu:24.04"}
            - {name: OPENSHELL_IMAGE_PULL_POLICY, value: Never}
`
	_, err := CheckRenderedImages("openshell", strings.NewReader(manifest), Rules{Expected: expectedFor(set, false)})
	var ce *ChartImageError
	if !errors.As(err, &ce) {
		t.Fatalf("CheckRenderedImages = %v, want a refusal", err)
	}
	var got []string
	for _, o := range ce.Offending {
		got = append(got, o.Where+" = "+o.Image)
	}
	want := []string{
		"data key SUPERVISOR_IMAGE = ghcr.io/nvidia/openshell/supervisor:v4",
		"driver.yaml, key runtime.image = ghcr.io/nvidia/openshell/sandbox:v2",
		"driver.yaml, key sandbox.image = ghcr.io/nvidia/openshell/sandbox:latest",
		"driver.yaml, key warm.images = alpine:3",
		"gateway.toml line 5, key openshell.gateway.extra_images = busybox:1.36",
		"gateway.toml, key openshell.gateway.runtime.sandbox_image = ghcr.io/nvidia/openshell/sandbox:v1",
		"settings.json, key supervisorImage = ghcr.io/nvidia/openshell/supervisor:v3",
		"containers[0] gateway env OPENSHELL_SANDBOX_IMAGE = nvcr.io/nvidia/base/ubuntu:24.04",
		"containers[0] gateway flag --supervisor-image = ghcr.io/nvidia/openshell/supervisor:v5",
		"containers[0] gateway flag --sandbox-image = ghcr.io/nvidia/openshell/sandbox:v6",
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("offending images:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// A data key that claims TOML but is not is an error: the Gateway would not read it either.
	bad := strings.Replace(manifest, "    image_pull_policy = \"Never\"", "    image_pull_policy = ", 1)
	if _, err := CheckRenderedImages("openshell", strings.NewReader(bad), Rules{Expected: expectedFor(set, false)}); err == nil || !strings.Contains(err.Error(), "gateway.toml is not valid TOML") {
		t.Fatalf("broken TOML: %v", err)
	}
}

// Which keys name an image: the last word decides, across naming styles.
func TestNamesImage(t *testing.T) {
	for key, want := range map[string]bool{
		"image": true, "images": true, "supervisor_image": true, "sandbox_runtime_image": true, "default_image": true,
		"sandboxRuntimeImage": true, "OPENSHELL_SANDBOX_IMAGE": true, "supervisor-image": true, "imageRef": true, "base_image_uri": true,
		"image_pull_policy": false, "imagePullSecrets": false, "supervisor_image_pull_policy": false, "imagefs": false,
		"gateway.toml": false, "": false, "IMAGE_TAG": false,
	} {
		if NamesImage(key) != want {
			t.Errorf("NamesImage(%q) = %v, want %v", key, !want, want)
		}
	}
}

// A manifest that is not YAML is an error, not a pass.
func TestCheckRenderedImagesBadManifest(t *testing.T) {
	set, _ := pins.Default()
	if _, err := CheckRenderedImages("x", strings.NewReader("---\nkind: [unclosed\n"), Rules{Expected: expectedFor(set, false)}); err == nil {
		t.Fatal("garbage manifest passed")
	}
}
