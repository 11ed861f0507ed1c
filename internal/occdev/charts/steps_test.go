package charts

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/charts/chartstest"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/pins"
)

// Each bad chart selection is refused before anything runs, naming the flag and variable, the
// value, the rule and the fix; both charts of one checkout are loaded, their packages the
// charts' absolute paths.
func TestSelect(t *testing.T) {
	set, err := pins.Default()
	if err != nil {
		t.Fatal(err)
	}
	gw, ws := chartstest.WriteCharts(t, t.TempDir(), nil)
	archive := filepath.Join(t.TempDir(), "openshell.tar.gz")
	if err := os.WriteFile(archive, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	archiveSetting := option.Setting{Flag: "openshell-archive", Env: "OCC_DEVELOPMENT_OPENSHELL_ARCHIVE"}
	for _, tc := range []struct {
		name string
		sel  Selection
		want []string
	}{
		{"only the Gateway chart", Selection{Gateway: gw}, []string{`--openshell-helm-chart (OCC_DEVELOPMENT_OPENSHELL_HELM_CHART) "` + gw + `" is set without --openshell-workspace-helm-chart (OCC_DEVELOPMENT_OPENSHELL_WORKSPACE_HELM_CHART)`, "both or neither", "set both"}},
		{"only the Workspace chart", Selection{Workspace: ws}, []string{`--openshell-workspace-helm-chart (OCC_DEVELOPMENT_OPENSHELL_WORKSPACE_HELM_CHART) "` + ws + `" is set without --openshell-helm-chart`}},
		{"the charts swapped", Selection{Gateway: ws, Workspace: gw}, []string{`--openshell-helm-chart (OCC_DEVELOPMENT_OPENSHELL_HELM_CHART) "` + ws + `" is chart "openshell-workspace", the other of the two OpenShell charts`, "name the openshell chart"}},
		{"a directory that is no chart", Selection{Gateway: t.TempDir(), Workspace: ws}, []string{"is not a Helm chart", "a directory holding its Chart.yaml"}},
		{"charts and an archive", Selection{Gateway: gw, Workspace: ws, Archive: archive, ArchiveSetting: archiveSetting}, []string{`--openshell-archive (OCC_DEVELOPMENT_OPENSHELL_ARCHIVE) "` + archive + `" is not used when both OpenShell charts are selected`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Select(tc.sel, set.OpenShell.Charts)
			var oe *option.Error
			if !errors.As(err, &oe) {
				t.Fatalf("Select = %v, want an option.Error", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
	if sel, err := Select(Selection{}, set.OpenShell.Charts); sel != nil || err != nil {
		t.Errorf("Select of nothing = %v, %v; want nil, nil", sel, err)
	}
	sel, err := Select(Selection{Gateway: gw, Workspace: ws}, set.OpenShell.Charts)
	if err != nil {
		t.Fatal(err)
	}
	if sel.Gateway.Name() != "openshell" || sel.Workspace.Name() != "openshell-workspace" || sel.GatewayPackage != gw || sel.WorkspacePackage != ws {
		t.Errorf("selected charts %+v", sel)
	}
}
