package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/state"
)

// A developer runs `occ dev reload` before anything is up: it says where it looked and how to
// start an environment (exit 1); a --startup-timeout that is not a duration is a usage error
// naming it (exit 2); completion of SERVICE offers nothing and no files. An environment that
// `up` brought up without the control plane is refused with the commands that replace it.
func TestDevReloadRefusals(t *testing.T) {
	dir := isolate(t)
	missing := filepath.Join(dir, "no-state")
	code, out, errOut := run(t, "dev", "reload", "--state-dir", missing)
	if code != 1 || out != "" || !strings.Contains(errOut, "no development environment at "+missing+": nothing to reload") || !strings.Contains(errOut, "start one with occ dev up") {
		t.Errorf("no state: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, _, errOut = run(t, "dev", "reload", "--state-dir", missing, "--startup-timeout", "soon")
	if code != exitUsage || !strings.Contains(errOut, `--startup-timeout "soon" is not a duration`) {
		t.Errorf("--startup-timeout soon: exit %d, stderr %q", code, errOut)
	}
	if got := complete(t, "dev", "reload", "--state-dir", missing, ""); len(got) != 0 {
		t.Errorf("completion without state: %v", got)
	}

	platformOnly := filepath.Join(dir, "platform-only")
	d, err := state.Create(platformOnly, state.State{Profile: "compose", Cluster: state.Cluster{Provider: "k3d"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = run(t, "dev", "reload", "--state-dir", platformOnly)
	if code != 1 || !strings.Contains(errOut, "cannot reload the environment recorded in "+platformOnly+": it has no OCE control plane") ||
		!strings.Contains(errOut, "dev down --state-dir "+platformOnly) || !strings.Contains(errOut, "occ dev up") {
		t.Errorf("platform only: exit %d, stderr %q", code, errOut)
	}
}

// A developer previews `occ dev reload --dry-run` of a Compose environment: it lists the builds
// the record holds (the development image the controller runs, the Agent runtime imported into
// the cluster) with their recorded IDs and the reload's steps, as text and as JSON, and contacts
// nothing (the recorded engine does not exist); a service that runs no built image is a usage
// error naming the ones that do.
func TestDevReloadDryRun(t *testing.T) {
	dir := isolate(t)
	checkout := filepath.Join(dir, "oce")
	stateDir := filepath.Join(dir, "state")
	d, err := state.Create(stateDir, state.State{Profile: "compose", Cluster: state.Cluster{Provider: "k3d", Name: "occ-dev-dryrun"},
		Engine: &state.Engine{Endpoint: "unix://" + filepath.Join(dir, "no-docker.sock")}})
	if err != nil {
		t.Fatal(err)
	}
	id := "sha256:" + strings.Repeat("1", 64)
	if err := d.Update(func(s *state.State) {
		s.ControlPlane = &state.ControlPlane{Checkout: checkout, Commit: strings.Repeat("a", 40),
			Compose: &state.ComposeProject{Project: "p", Snapshot: filepath.Join(stateDir, "compose.yaml"), Checkout: checkout}, Images: []state.ControlPlaneImage{{Role: "development", Reference: "p-development", ID: id}, {Role: "runtime", Reference: "openclaw-enterprise-runtime:dev", ID: id}}}
	}); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	builds := `[{"role":"development","services":["controller","worker-kubernetes"],"context":"` + checkout + `","dockerfile":"Dockerfile","target":"development","tag":"p-development"},` +
		`{"role":"runtime","imported":true,"context":"` + checkout + `","dockerfile":"deploy/runtime/Dockerfile","tag":"openclaw-enterprise-runtime:dev"}]`
	if err := os.WriteFile(filepath.Join(stateDir, "builds.json"), []byte(builds), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "dev", "reload", "--dry-run", "--state-dir", stateDir)
	if code != 0 || !strings.Contains(out, "rebuild development: p-development from "+checkout+" (Dockerfile, target development), run by controller, worker-kubernetes; recorded "+id) ||
		!strings.Contains(out, "rebuild runtime: openclaw-enterprise-runtime:dev") || !strings.Contains(out, " 8. Record the rebuilt images and the checkout's commit") {
		t.Errorf("dry run: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, _ = run(t, "dev", "reload", "--dry-run", "--state-dir", stateDir, "-o", "json")
	var plan struct {
		Builds []struct{ Role string } `json:"builds"`
		Steps  []string                `json:"steps"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &plan) != nil || len(plan.Builds) != 2 || len(plan.Steps) != 8 {
		t.Errorf("dry run JSON: exit %d, %q", code, out)
	}
	code, _, errOut = run(t, "dev", "reload", "--dry-run", "--state-dir", stateDir, "postgres")
	if code != exitUsage || !strings.Contains(errOut, "runs no image occ built from the checkout") || !strings.Contains(errOut, "controller, worker-kubernetes") {
		t.Errorf("dry run of postgres: exit %d, stderr %q", code, errOut)
	}
}
