package occdev

import (
	"context"
	"fmt"
	"os"

	"github.com/openclaw/occ/internal/occdev/charts"
)

// packageCharts packages the Gateway and Workspace charts from the extracted tree with the
// Helm SDK, stamped with the pinned version, into the state directory.
func packageCharts(_ context.Context, sc *StepContext) error {
	dest := sc.state.File(packagedDir)
	// Packages of an earlier attempt are rebuilt, never trusted.
	if err := os.RemoveAll(dest); err != nil {
		return fmt.Errorf("clear %s: %w", dest, err)
	}
	ch, err := charts.Package(charts.PackageOptions{Pins: sc.pins, SourceDir: sc.artifacts.helmDir, OutputDir: dest})
	if err != nil {
		return err
	}
	sc.charts = ch
	return nil
}

// renderWorkspace renders the Workspace chart once; its objects become the Installation's
// operatorWorkspaceResources, which the Sandbox Driver applies into every tenant namespace.
func renderWorkspace(_ context.Context, sc *StepContext) error {
	values, err := charts.NewWorkspaceValues(sc.Plan.Namespace)
	if err != nil {
		return err
	}
	objs, err := charts.RenderWorkspace(sc.charts.Workspace, values)
	if err != nil {
		return err
	}
	sc.workspaceResources = sc.workspaceResources[:0]
	for _, o := range objs {
		sc.workspaceResources = append(sc.workspaceResources, *o)
	}
	return nil
}

// gatewayValues are the Gateway chart values of this profile (reference §3.4). A cluster occ
// did not create pulls the pinned images itself, by digest.
func (sc *StepContext) gatewayValues() (map[string]any, error) {
	v, err := charts.NewGatewayValues(charts.GatewayOptions{
		Images:      sc.pins.OpenShell.Images,
		ServiceType: sc.Plan.ServiceType,
		NodePort:    sc.Plan.NodePort,
		PullPolicy:  "IfNotPresent",
	})
	if err != nil {
		return nil, err
	}
	return v.Map()
}
