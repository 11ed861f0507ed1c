package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/observe"
	"github.com/openclaw/occ/internal/occdev/state"
)

// An engineer on a plane previews `up --bundle --offline` (as the variables a CI job sets): the
// plan names the bundle by its absolute path and says nothing will be pulled or downloaded; then
// status of an environment that came from a bundle shows it with its pins.
func TestDevUpFromABundleShowsInPlanAndStatus(t *testing.T) {
	dir := isolateDev(t)
	bundle := filepath.Join(dir, "occ-bundle.tar")
	if err := os.WriteFile(bundle, []byte("not read by a dry run"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	t.Setenv(occdev.EnvBundle, "occ-bundle.tar")
	t.Setenv(occdev.EnvOffline, "true")
	// No engine answers here: the dry run still prints the whole plan, with the engine as its
	// one problem.
	_, out, errOut := run(t, "dev", "up", "--dry-run", "--state-dir", filepath.Join(dir, "dev-state"), "--cluster-provider", "k3d")
	if want := "Bundle:          " + bundle + " (every pinned image and download from it; offline: no pull, no download)"; !strings.Contains(out, want) {
		t.Errorf("dry run lacks %q:\n%s\nstderr: %s", want, out, errOut)
	}

	var status bytes.Buffer
	st := &observe.Status{StateDirectory: "/s", Recorded: true, Profile: "kubernetes", Cluster: &state.Cluster{Name: "c", Provider: "k3d"},
		Selections: &state.Selections{Bundle: bundle, BundlePins: strings.Repeat("ab", 32), Offline: true}}
	if err := printDevStatus(&Globals{Stdout: &status}, st); err != nil {
		t.Fatal(err)
	}
	if want := "Bundle:        " + bundle + " (pins abababababab, offline)\n"; !strings.Contains(status.String(), want) {
		t.Errorf("status lacks %q:\n%s", want, status.String())
	}
}
