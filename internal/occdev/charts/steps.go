package charts

import (
	"fmt"
	"os"
	"path"
	"path/filepath"

	"helm.sh/helm/v3/pkg/chart"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/step"
)

// The reference's variables of the local chart selections; the CLI binds each to its flag.
const (
	EnvGatewayChart   = "OCC_DEVELOPMENT_OPENSHELL_HELM_CHART"
	EnvWorkspaceChart = "OCC_DEVELOPMENT_OPENSHELL_WORKSPACE_HELM_CHART"
)

// How the chart selections are named in errors: flag and variable.
var (
	gatewaySetting   = option.Setting{Flag: "openshell-helm-chart", Env: EnvGatewayChart}
	workspaceSetting = option.Setting{Flag: "openshell-workspace-helm-chart", Env: EnvWorkspaceChart}
)

// PackagedDir is where, inside the state directory, the charts are packaged. The packages are
// rebuilt by every run from the verified archive, so they are never trusted across runs.
const PackagedDir = "openshell/charts"

// Selection is the user's choice of local charts in place of the archive's: both or neither.
type Selection struct {
	// Gateway and Workspace are the charts as given (a directory or a packaged .tgz), "" when
	// unset.
	Gateway, Workspace string
	// Archive is the local source archive also given, and ArchiveSetting the setting that gave
	// it: beside both charts it would go unused, which is refused.
	Archive        string
	ArchiveSetting option.Setting
}

// Select loads the selected local charts now, so a path that is not the right chart is a bad
// setting (an *option.Error) before anything runs. It returns nil when none is selected; the
// packages of what it returns are the charts' absolute paths.
func Select(sel Selection, pinned pins.Charts) (*Charts, error) {
	if (sel.Gateway == "") != (sel.Workspace == "") {
		set, setOpt, unsetOpt := sel.Gateway, gatewaySetting, workspaceSetting
		if set == "" {
			set, setOpt, unsetOpt = sel.Workspace, workspaceSetting, gatewaySetting
		}
		return nil, &option.Error{Option: setOpt.String(), Value: set,
			Rule: "is set without " + unsetOpt.String() + ": the Gateway and Workspace charts are selected together, both or neither",
			Fix:  "set both to the charts of one OpenShell checkout (deploy/helm/openshell and deploy/helm/openshell-workspace), or neither to use the pinned archive"}
	}
	if sel.Gateway == "" {
		return nil, nil
	}
	if sel.Archive != "" {
		return nil, &option.Error{Option: sel.ArchiveSetting.String(), Value: sel.Archive,
			Rule: "is not used when both OpenShell charts are selected (" + EnvGatewayChart + ", " + EnvWorkspaceChart + "): the archive is only the charts' source",
			Fix:  "drop it, or drop the chart selections to install the archive's charts"}
	}
	out := &Charts{}
	for _, c := range []struct {
		opt           option.Setting
		raw           string
		pinned, other string
		dst           **chart.Chart
		packaged      *string
	}{
		{gatewaySetting, sel.Gateway, pinned.Gateway, pinned.Workspace, &out.Gateway, &out.GatewayPackage},
		{workspaceSetting, sel.Workspace, pinned.Workspace, pinned.Gateway, &out.Workspace, &out.WorkspacePackage},
	} {
		abs, err := filepath.Abs(c.raw)
		if err != nil {
			return nil, &option.Error{Option: c.opt.String(), Value: c.raw, Rule: "is not a usable path (" + err.Error() + ")", Fix: "name the chart directory or packaged chart"}
		}
		ch, err := LoadLocal(abs, path.Base(c.other))
		if err != nil {
			return nil, &option.Error{Option: c.opt.String(), Value: c.raw, Rule: err.Error(),
				Fix: "name the " + path.Base(c.pinned) + " chart: a directory holding its Chart.yaml (" + c.pinned + " of an OpenShell checkout) or its packaged .tgz"}
		}
		*c.dst, *c.packaged = ch, abs
	}
	return out, nil
}

// DescribeSelected is the dry run's line of the step that uses the selected charts, gateway and
// workspace (Select's packages).
func DescribeSelected(gateway, workspace string) step.Description {
	return step.Note("nothing downloaded or packaged; uses the selected Gateway chart " + gateway + " and Workspace chart " + workspace + " as they are (their own versions; the Gateway chart's render is still checked against the pinned images)")
}

// UseSelected hands the run the selected charts the plan loaded (Select).
func UseSelected(sel *Charts) (*Charts, error) {
	if sel == nil {
		return nil, fmt.Errorf("no selected charts were loaded (a bug in occ)")
	}
	return sel, nil
}

// DescribePackage is the dry run's account of PackageAfresh into the state directory stateDir.
func DescribePackage(stateDir, version string) step.Description {
	return step.Describe(step.DirAt(filepath.Join(stateDir, PackagedDir), packagedDirMode, "the Gateway and Workspace charts packaged at the pinned version "+version))
}

// PackageAfresh is Package into an emptied o.OutputDir: the packages of an earlier attempt are
// rebuilt, never trusted.
func PackageAfresh(o PackageOptions) (*Charts, error) {
	if err := os.RemoveAll(o.OutputDir); err != nil {
		return nil, fmt.Errorf("clear %s: %w", o.OutputDir, err)
	}
	return Package(o)
}

// DescribeRender is the dry run's line of WorkspaceResources.
func DescribeRender() step.Description {
	return step.Note("nothing created; renders the Workspace chart once (ServiceAccount, Role, RoleBinding, NetworkPolicy only) for the Installation")
}

// WorkspaceResources renders the Workspace chart ch once for a Gateway in gatewayNamespace; its
// objects become the Installation's operatorWorkspaceResources, which the Sandbox Driver
// applies into every tenant namespace.
func WorkspaceResources(ch *chart.Chart, gatewayNamespace string) ([]unstructured.Unstructured, error) {
	values, err := NewWorkspaceValues(gatewayNamespace)
	if err != nil {
		return nil, err
	}
	objs, err := RenderWorkspace(ch, values)
	if err != nil {
		return nil, err
	}
	out := make([]unstructured.Unstructured, 0, len(objs))
	for _, o := range objs {
		out = append(out, *o)
	}
	return out, nil
}
