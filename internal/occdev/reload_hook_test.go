package occdev_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/reload"
	"github.com/openclaw/occ/internal/occdev/state"
)

// recordedBuilds writes the record of an environment of profile with the development and
// runtime builds `up` made from a checkout (which need not exist: the dry run reads the record
// alone) and returns the state directory.
func recordedBuilds(t *testing.T, profile string, compose bool) string {
	t.Helper()
	dir := filepath.Join(privateDir(t), "state")
	checkout := filepath.Join(filepath.Dir(dir), "oce")
	d, err := state.Create(dir, state.State{Profile: profile, Cluster: state.Cluster{Provider: "k3d", Name: "occ-dev-hook"},
		Engine: &state.Engine{Endpoint: "unix://" + filepath.Join(filepath.Dir(dir), "no-docker.sock")}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	id := "sha256:" + strings.Repeat("1", 64)
	if err := d.Update(func(s *state.State) {
		s.ControlPlane = &state.ControlPlane{Checkout: checkout, Commit: strings.Repeat("a", 40),
			Images: []state.ControlPlaneImage{{Role: "development", Reference: "p-development", ID: id}, {Role: "runtime", Reference: "openclaw-enterprise-runtime:dev", ID: id}}}
		if compose {
			s.ControlPlane.Compose = &state.ComposeProject{Project: "p", Snapshot: filepath.Join(dir, "compose.yaml"), Checkout: checkout}
		}
	}); err != nil {
		t.Fatal(err)
	}
	builds := `[{"role":"development","services":["controller","worker-kubernetes"],"context":"` + checkout + `","dockerfile":"Dockerfile","target":"development","tag":"p-development"},` +
		`{"role":"runtime","imported":true,"context":"` + checkout + `","dockerfile":"deploy/runtime/Dockerfile","tag":"openclaw-enterprise-runtime:dev"}]`
	if err := os.WriteFile(filepath.Join(dir, "builds.json"), []byte(builds), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// `occ dev reload --dry-run` of a Compose and of a Kubernetes-only environment: each lists the
// steps its recorded control plane's hook gives between the shared ones, and limits the builds
// its own way (a Compose service to the builds it runs; a Kubernetes workload, whose images
// only the cluster knows, to every build).
func TestReloadStepsComeFromTheRecordedControlPlane(t *testing.T) {
	for _, tc := range []struct {
		profile string
		compose bool
		steps   []string
		// builds are the roles a reload of the controller alone rebuilds.
		builds []string
	}{
		{"compose", true, composeReloadSteps, []string{"development"}},
		{"kubernetes", false, kubernetesReloadSteps, []string{"development", "runtime"}},
	} {
		t.Run(tc.profile, func(t *testing.T) {
			dir := recordedBuilds(t, tc.profile, tc.compose)
			plan, err := occdev.PlanReload(occdev.ReloadOptions{Options: reload.Options{StateDir: dir}})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(plan.Steps, tc.steps) || plan.Profile != tc.profile || len(plan.Builds) != 2 {
				t.Fatalf("plan: profile %s, steps %q, builds %+v", plan.Profile, plan.Steps, plan.Builds)
			}
			plan, err = occdev.PlanReload(occdev.ReloadOptions{Options: reload.Options{StateDir: dir, Services: []string{"controller"}}})
			if err != nil {
				t.Fatal(err)
			}
			var roles []string
			for _, b := range plan.Builds {
				roles = append(roles, b.Role)
			}
			if !slices.Equal(roles, tc.builds) {
				t.Errorf("builds of the controller: %v; want %v", roles, tc.builds)
			}
		})
	}
}

// `occ dev status` of a Compose environment whose engine is gone, and of a Kubernetes-only one:
// the Compose hook adds its project and says why its services could not be read; the
// Kubernetes-only profile reports the recorded OCE control plane alone.
func TestStatusOfTheControlPlaneComesFromTheRecordedProfile(t *testing.T) {
	for _, tc := range []struct {
		profile string
		compose bool
	}{{"compose", true}, {"kubernetes", false}} {
		t.Run(tc.profile, func(t *testing.T) {
			dir := recordedBuilds(t, tc.profile, tc.compose)
			st, err := occdev.GetStatus(t.Context(), occdev.StatusOptions{StateDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			cp := st.ControlPlane
			if cp == nil || cp.Checkout == "" || cp.Runs != "" || len(cp.Images) != 2 || cp.Services == nil || len(cp.Services) != 0 {
				t.Fatalf("control plane %+v", cp)
			}
			if tc.compose && (cp.ComposeProject != "p" || cp.ServicesProblem == "") {
				t.Errorf("Compose: project %q, services problem %q; want p and the engine's error", cp.ComposeProject, cp.ServicesProblem)
			}
			if !tc.compose && (cp.ComposeProject != "" || cp.ServicesProblem != "") {
				t.Errorf("Kubernetes-only: project %q, services problem %q; want neither", cp.ComposeProject, cp.ServicesProblem)
			}
		})
	}
}
