package occdev

// TEMPORARY: stands in for internal/occdev/charts until that package lands; replace the bodies
// with calls to it.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openclaw/occ/internal/occdev/artifacts"
)

func packageCharts(_ context.Context, sc *StepContext) error {
	dest := sc.state.File(packagedDir)
	if err := os.RemoveAll(dest); err != nil {
		return err
	}
	if err := os.MkdirAll(dest, 0o700); err != nil {
		return err
	}
	pack := func(rel string) (string, error) {
		ch, err := loader.LoadDir(filepath.Join(sc.artifacts.helmDir, rel))
		if err != nil {
			return "", fmt.Errorf("load chart %s: %w", rel, err)
		}
		ch.Metadata.Version = sc.pins.OpenShell.Version
		ch.Metadata.AppVersion = sc.pins.OpenShell.Version
		return chartutil.Save(ch, dest)
	}
	var err error
	if sc.artifacts.gatewayChart, err = pack(sc.pins.OpenShell.Charts.Gateway); err != nil {
		return err
	}
	sc.artifacts.workspaceChart, err = pack(sc.pins.OpenShell.Charts.Workspace)
	return err
}

func renderWorkspace(_ context.Context, sc *StepContext) error {
	ch, err := loader.Load(sc.artifacts.workspaceChart)
	if err != nil {
		return err
	}
	inst := action.NewInstall(&action.Configuration{})
	inst.ClientOnly, inst.DryRun, inst.Replace = true, true, true
	inst.Namespace, inst.ReleaseName = "openclaw-workspace-template", "openshell-workspace"
	values := map[string]any{
		"fullnameOverride": "openshell-workspace",
		"gateway": map[string]any{
			"serviceAccount":    map[string]any{"name": "openshell-gateway", "namespace": sc.Plan.Namespace},
			"networkPolicy":     map[string]any{"podSelector": map[string]any{"app.kubernetes.io/instance": GatewayRelease}},
			"allowDriverConfig": true,
		},
		"sandboxServiceAccount": map[string]any{"name": "openshell-sandbox"},
	}
	rel, err := inst.Run(ch, values)
	if err != nil {
		return err
	}
	objs, err := artifacts.ParseYAML([]byte(rel.Manifest), "workspace chart")
	if err != nil {
		return err
	}
	var out []unstructured.Unstructured
	for _, o := range objs {
		o.SetNamespace("")
		out = append(out, *o)
	}
	sc.workspaceResources = out
	return nil
}

func (sc *StepContext) gatewayValues() (map[string]any, error) {
	img := sc.pins.OpenShell.Images
	image := func(i interface{ Name() string }) map[string]any { return map[string]any{} }
	_ = image
	svc := map[string]any{"type": sc.Plan.ServiceType}
	if sc.Plan.NodePort != 0 {
		svc["nodePort"] = sc.Plan.NodePort
	}
	return map[string]any{
		"fullnameOverride": GatewayRelease,
		"image":            map[string]any{"registry": img.Gateway.Registry, "repository": img.Gateway.Repository, "digest": img.Gateway.Digest, "pullPolicy": "Never"},
		"service":          svc,
		"server":           map[string]any{"disableTls": true, "defaultRuntimeClassName": RuntimeClassName},
	}, nil
}
