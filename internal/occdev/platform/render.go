package platform

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"

	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/pins"
)

// RenderGateway renders the Gateway chart with the values InstallGateway installs it with and
// the capabilities of the cluster it will run on, as `helm template` would: one multi-document
// manifest, every template (hooks included) under its "# Source:" line, in template-name order.
// Nothing is contacted. A render that fails (a `fail` of the chart, such as its Agent Sandbox
// preflight) names the API versions the chart tests for that the cluster would not serve.
func RenderGateway(g GatewayInstall, caps ClusterCapabilities) (string, error) {
	if g.Chart == nil {
		return "", fmt.Errorf("render the Gateway chart: no chart")
	}
	values, err := GatewayValues(g)
	if err != nil {
		return "", err
	}
	hc, err := caps.Helm()
	if err != nil {
		return "", fmt.Errorf("render the Gateway chart: %w", err)
	}
	if kv := g.Chart.Metadata.KubeVersion; kv != "" && !chartutil.IsCompatibleRange(kv, hc.KubeVersion.String()) {
		return "", fmt.Errorf("render the Gateway chart: it requires kubeVersion %s, which the cluster's Kubernetes %s (%s) is not", kv, hc.KubeVersion.String(), caps.KubeVersionSource)
	}
	rv, err := chartutil.ToRenderValues(g.Chart, values, chartutil.ReleaseOptions{
		Name: GatewayRelease, Namespace: g.Namespace, Revision: 1, IsInstall: true,
	}, hc)
	if err != nil {
		return "", fmt.Errorf("render the Gateway chart: %w", err)
	}
	rendered, err := engine.Render(g.Chart, rv)
	if err != nil {
		return "", renderError(g.Chart, caps, err)
	}
	names := make([]string, 0, len(rendered))
	for name := range rendered {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		base := path.Base(name)
		body := strings.TrimSpace(rendered[name])
		if strings.HasPrefix(base, "_") || base == "NOTES.txt" || body == "" {
			continue
		}
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", name, body)
	}
	return b.String(), nil
}

// renderError explains a failed render: what the render assumed of the cluster and, when the
// chart tests for API versions the cluster would not serve, which.
func renderError(ch *chart.Chart, caps ClusterCapabilities, cause error) error {
	asked := apiVersionsAsked(chartTemplates(ch))
	var missing []string
	for _, v := range asked {
		if !caps.Has(v) {
			missing = append(missing, v)
		}
	}
	msg := fmt.Sprintf("render the Gateway chart with the capabilities of the cluster it will run on (%s): %v", caps.describe(), cause)
	if len(missing) == 0 {
		return fmt.Errorf("%s", msg)
	}
	return fmt.Errorf("%s\nthe cluster would not serve these API versions the chart tests for: %s; the Agent Sandbox manifest %s defines no CustomResourceDefinition serving them: use the pinned Agent Sandbox manifest (or a manifest with the Agent Sandbox CRDs)",
		msg, strings.Join(missing, ", "), caps.ManifestSource)
}

// chartTemplates are the template sources of a chart and its subcharts.
func chartTemplates(ch *chart.Chart) map[string]string {
	out := map[string]string{}
	var walk func(c *chart.Chart)
	walk = func(c *chart.Chart) {
		for _, t := range c.Templates {
			out[c.ChartFullPath()+"/"+t.Name] = string(t.Data)
		}
		for _, d := range c.Dependencies() {
			walk(d)
		}
	}
	walk(ch)
	return out
}

// GatewayImageValues are the pinned images the Gateway runs (the pins' GatewayImages) with the
// chart values keys GatewayValues sets for each: what a rendered Gateway chart may run, and what
// to name when it runs something else. Each is required: the Gateway runs in its own container,
// and it starts the sandbox runtime and supervisor images of its configuration; a chart that
// names one nowhere leaves it to the Gateway's built-in default, a tag occ never pulled or
// verified.
func GatewayImageValues(imgs pins.Images) []images.ExpectedImage {
	var out []images.ExpectedImage
	for _, img := range pins.GatewayImagesOf(imgs) {
		c := img.Gateway.Component
		out = append(out, images.ExpectedImage{Pin: img.Image, Role: img.Gateway.Role,
			ValuesKeys: []string{c + ".image.registry", c + ".image.repository", c + ".image.digest"}, Required: true})
	}
	return out
}

// DefaultImageKey is the Gateway configuration key of the image for Sandboxes whose request
// names none. occ leaves it to the chart: the OpenShell Sandbox Driver refuses a Harness without
// an image before it calls the Gateway, so every CreateSandbox OCE sends names its image and
// the default is never started.
const DefaultImageKey = "default_image"

// GatewayUnusedImages are the configuration keys of the Gateway whose images occ does not pin.
func GatewayUnusedImages() []images.UnusedConfigKey {
	return []images.UnusedConfigKey{{
		Key:    DefaultImageKey,
		Reason: "the image for Sandboxes that name none; every Sandbox OCE creates names its image, so the Gateway never starts it",
	}}
}

// GatewayImageRules are what a rendered Gateway chart may run.
func GatewayImageRules(imgs pins.Images) images.Rules {
	return images.Rules{Expected: GatewayImageValues(imgs), Unused: GatewayUnusedImages()}
}

// CheckGatewayRender renders the Gateway chart with the install's values and the cluster's
// capabilities, and refuses it when any image it can make the cluster run is not one of the
// pinned digests, or when it names a pinned image nowhere: a chart whose values layout ignores
// occ's image values would otherwise run tag-based images (and, with pullPolicy Never, images
// the node never received).
func CheckGatewayRender(g GatewayInstall, caps ClusterCapabilities) (*images.ChartImages, error) {
	manifest, err := RenderGateway(g, caps)
	if err != nil {
		return nil, err
	}
	name := GatewayRelease
	if md := g.Chart.Metadata; md != nil {
		name = md.Name + " " + md.Version
	}
	return images.CheckRenderedImages(name, strings.NewReader(manifest), GatewayImageRules(g.Images))
}

// GatewayStarts is CheckGatewayRender of g on the cluster of caps for the Gateway install: the
// pinned images the chart's own objects start, which the install waits for; note is told of
// each image the chart names that occ does not pin and never starts.
func GatewayStarts(g GatewayInstall, caps ClusterCapabilities, note func(string)) ([]pins.Image, error) {
	found, err := CheckGatewayRender(g, caps)
	if err != nil {
		return nil, err
	}
	for _, u := range found.Unused {
		note(fmt.Sprintf("not pinned, never started: %s (%s)", u.FoundImage, u.Reason))
	}
	return found.Started, nil
}
