package cli

import (
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
