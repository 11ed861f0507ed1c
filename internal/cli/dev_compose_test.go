package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/testbed/ocebed"
)

// isolateCompose is isolateDev for the Compose profile's command line: the k3d provider (the
// engine is only located, never contacted, by these refusals) and a fixture OCE checkout.
func isolateCompose(t *testing.T) (checkout, stateDir string) {
	t.Helper()
	dir := isolate(t)
	for _, k := range []string{"OCC_DEVELOPMENT_STATE_DIRECTORY", "OCC_DEVELOPMENT_CONTROL_PLANE", "OCC_DEVELOPMENT_REPOSITORY",
		"OCC_DEVELOPMENT_COMPOSE_PROJECT", "OCC_DEVELOPMENT_CONTROLLER_IMAGE", "OCC_KUBERNETES_RUNTIME_IMAGE", "OCC_DEVELOPMENT_CLUSTER_PROVIDER"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache-home"))
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	return ocebed.Checkout(t, strings.Repeat("ab", 20)), filepath.Join(dir, "state")
}

// An engineer mistypes `occ dev up` options: arguments before `--`, a Compose option occ does
// not allow, Compose options for the Kubernetes-only profile, and options for `down` (which
// uses the recorded snapshot): each is a usage error (exit 2) with the reference's words, and
// nothing is created.
func TestDevComposeArgumentRefusals(t *testing.T) {
	checkout, stateDir := isolateCompose(t)
	if err := os.WriteFile(filepath.Join(checkout, "container-name.yaml"), []byte("services:\n  postgres:\n    container_name: mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"an argument before --", []string{"dev", "up", "--dry-run", "--repository", checkout, "compose.local.yaml"}, "Compose options must follow --"},
		{"a Compose option occ sets itself", []string{"dev", "up", "--dry-run", "--repository", checkout, "--", "--profile", "extra"}, "unsupported Kubernetes Compose option: --profile"},
		{"a project directory other than the checkout", []string{"dev", "up", "--dry-run", "--repository", checkout, "--", "--project-directory", "/tmp"}, "Compose project directory must be the repository"},
		{"-f without a path", []string{"dev", "up", "--dry-run", "--repository", checkout, "--", "-f"}, "-f requires a file path"},
		{"Compose options for the Kubernetes-only profile", []string{"dev", "up", "--dry-run", "--repository", checkout, "--control-plane", "kubernetes", "--", "-f", "x.yaml"}, `Compose options after -- "-f x.yaml" are refused: the Kubernetes-only profile runs no Compose project, so it takes no Compose options: drop them`},
		{"a --repository that is not a checkout", []string{"dev", "up", "--dry-run", "--repository", t.TempDir()}, "is not an OpenClaw Enterprise checkout"},
		{"a Compose model that breaks a rule", []string{"dev", "up", "--dry-run", "--repository", checkout, "--", "-f", filepath.Join(checkout, "container-name.yaml")}, "service postgres: container_name"},
		{"Compose options for down", []string{"dev", "down", "--", "-f", "x.yaml"}, "Compose options come from recorded Kubernetes development state"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(t, append([]string{c.args[0], c.args[1], "--state-dir", stateDir}, c.args[2:]...)...)
			if code != 2 || !strings.Contains(errOut, c.want) {
				t.Fatalf("exit %d, stderr %q; want exit 2 and %q\nstdout: %s", code, errOut, c.want, out)
			}
			if _, err := os.Stat(stateDir); !os.IsNotExist(err) {
				t.Fatalf("state directory created (%v)", err)
			}
		})
	}
}

// The dry run's -o json names each build by its role in both profiles, as the state and
// builds.json record it (development and runtime in Compose; controller and runtime in the
// Kubernetes-only profile), never by an image tag.
func TestDryRunBuildRolesAgreeAcrossProfiles(t *testing.T) {
	checkout, stateDir := isolateCompose(t)
	for profile, want := range map[string][]string{"compose": {"development", "runtime"}, "kubernetes": {"controller", "runtime"}} {
		_, out, _ := run(t, "dev", "up", "--dry-run", "-o", "json", "--state-dir", stateDir, "--repository", checkout, "--control-plane", profile, "--cluster-provider", "k3d")
		var dr struct {
			Plan struct {
				OCE struct {
					BuildPlans []struct {
						Role string `json:"role"`
					} `json:"buildPlans"`
				} `json:"oce"`
			} `json:"plan"`
		}
		if err := json.Unmarshal([]byte(out), &dr); err != nil {
			t.Fatalf("%s: the dry run's JSON: %v\n%s", profile, err, out)
		}
		var roles []string
		for _, b := range dr.Plan.OCE.BuildPlans {
			roles = append(roles, b.Role)
		}
		if strings.Join(roles, ",") != strings.Join(want, ",") {
			t.Errorf("%s: build roles %q, want %q", profile, roles, want)
		}
	}
}
