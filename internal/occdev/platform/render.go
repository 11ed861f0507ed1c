package platform

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"

	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/pins"
)

// RenderGateway renders the Gateway chart with the values InstallGateway installs it with, as
// `helm template` would: one multi-document manifest, every template (hooks included) under
// its "# Source:" line, in template-name order. Nothing is contacted.
func RenderGateway(g GatewayInstall) (string, error) {
	if g.Chart == nil {
		return "", fmt.Errorf("render the Gateway chart: no chart")
	}
	values, err := GatewayValues(g)
	if err != nil {
		return "", err
	}
	rv, err := chartutil.ToRenderValues(g.Chart, values, chartutil.ReleaseOptions{
		Name: GatewayRelease, Namespace: g.Namespace, Revision: 1, IsInstall: true,
	}, chartutil.DefaultCapabilities)
	if err != nil {
		return "", fmt.Errorf("render the Gateway chart: %w", err)
	}
	rendered, err := engine.Render(g.Chart, rv)
	if err != nil {
		return "", fmt.Errorf("render the Gateway chart: %w", err)
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

// GatewayImageValues are the pinned OpenShell images with the chart values keys GatewayValues
// sets for each: what a rendered Gateway chart may run, and what to name when it runs
// something else.
func GatewayImageValues(imgs pins.Images) []images.ExpectedImage {
	keys := func(component string) []string {
		return []string{component + ".image.registry", component + ".image.repository", component + ".image.digest"}
	}
	return []images.ExpectedImage{
		{Pin: imgs.Gateway, ValuesKeys: keys("gateway")},
		{Pin: imgs.Sandbox, ValuesKeys: keys("sandboxRuntime")},
		{Pin: imgs.Supervisor, ValuesKeys: keys("supervisor")},
	}
}

// CheckGatewayRender renders the Gateway chart with the install's values and refuses it when
// any container or init container would run an image that is not one of the pinned digests: a
// chart whose values layout ignores occ's image values would otherwise run tag-based images
// (and, with pullPolicy Never, images the node never received).
func CheckGatewayRender(g GatewayInstall) error {
	manifest, err := RenderGateway(g)
	if err != nil {
		return err
	}
	name := GatewayRelease
	if md := g.Chart.Metadata; md != nil {
		name = md.Name + " " + md.Version
	}
	return images.CheckRenderedImages(name, strings.NewReader(manifest), GatewayImageValues(g.Images))
}
