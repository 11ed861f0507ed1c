package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A developer previews `occ dev up` outside an OCE checkout: the dry run says the control plane
// would not start and how to add it, in the conditional, and never that something "is up" or
// that an environment must be taken down first, since a dry run creates nothing.
func TestDevUpDryRunSaysNothingIsUp(t *testing.T) {
	dir := isolate(t)
	for _, k := range []string{"OCC_DEVELOPMENT_REPOSITORY", "OCC_DEVELOPMENT_STATE_DIRECTORY", "OCC_DEVELOPMENT_CONTROL_PLANE"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(unreachableKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for _, plane := range []string{"compose", "kubernetes"} {
		_, out, errOut := run(t, "dev", "up", "--dry-run", "--cluster-provider", "existing", "--kubeconfig", kubeconfig,
			"--control-plane", plane, "--state-dir", filepath.Join(dir, "state-"+plane))
		var line string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "Control plane:") {
				line = l
			}
		}
		if line == "" {
			t.Fatalf("%s: the dry run has no control-plane line:\n%s%s", plane, out, errOut)
		}
		if strings.Contains(line, "is up") || strings.Contains(line, "occ dev down") || !strings.Contains(line, "would") {
			t.Errorf("%s: the dry run speaks of a running environment:\n%s", plane, line)
		}
	}
}
