package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// dryRunServices is the part of `occ dev up --dry-run -o json` these tests read.
type dryRunServices struct {
	Plan struct {
		OCE struct {
			Compose struct {
				Services []struct {
					Name    string `json:"name"`
					Started bool   `json:"started"`
					Why     string `json:"why"`
					LeftOut bool   `json:"leftOut"`
				} `json:"services"`
			} `json:"compose"`
		} `json:"oce"`
	} `json:"plan"`
	Problems []string `json:"problems"`
}

// An OCE engineer previews the checkout's own overlays, compose.metrics.yaml and
// compose.logging.yaml, with their required settings: the plan (text and JSON) lists the
// services in the order Compose starts them (the Collector with the data services, before
// migrate; the metrics server before what sends to it), and metrics-worker as left out with
// why; the Grafana password appears nowhere.
func TestDryRunPlansTheCheckoutsOverlays(t *testing.T) {
	checkout, stateDir := isolateCompose(t)
	const canary = "grafana-canary-31d2"
	t.Setenv("OCC_METRICS_GRAFANA_PASSWORD", canary)
	t.Setenv("OTEL_EXPORTER_OTLP_LOGS_ENDPOINT", "http://127.0.0.1:4318/v1/logs")
	args := []string{"dev", "up", "--dry-run", "--state-dir", stateDir, "--repository", checkout, "--cluster-provider", "k3d", "--", "-f", filepath.Join(checkout, "compose.metrics.yaml"), "-f", filepath.Join(checkout, "compose.logging.yaml")}
	_, text, errText := run(t, args...)
	order := []string{"postgres (", "collector (docker.io/otel/opentelemetry-collector-contrib", "migrate (", "bootstrap (", "controller (", "worker-kubernetes (", "prometheus (", "grafana (", "metrics-api (",
		"metrics-worker: not started (left out, as it cannot run in this profile: it needs worker (depends_on, network_mode), which this profile does not start"}
	at := 0
	for _, w := range order {
		i := strings.Index(text[at:], w)
		if i < 0 {
			t.Fatalf("the plan lacks %q after offset %d:\n%s", w, at, text)
		}
		at += i
	}
	for _, w := range []string{"started with the data services, since migrate and bootstrap need it", "with OCC_METRICS_ENABLED, OCC_METRICS_HOST, OCC_METRICS_PORT as the Compose options give them to worker",
		"OCC_CONFIG_PATH stays /run/openclaw-development/installation.yaml"} {
		if !strings.Contains(text, w) {
			t.Errorf("the plan lacks %q", w)
		}
	}
	code, out, errOut := run(t, append(args[:3:3], append([]string{"-o", "json"}, args[3:]...)...)...)
	var dr dryRunServices
	if err := json.Unmarshal([]byte(out), &dr); err != nil {
		t.Fatalf("exit %d, the dry run's JSON: %v\n%s\nstderr: %s", code, err, out, errOut)
	}
	var got []string
	for _, s := range dr.Plan.OCE.Compose.Services {
		got = append(got, fmt.Sprintf("%s %v", s.Name, s.Started))
		if s.LeftOut != (s.Name == "metrics-worker") {
			t.Errorf("%s: leftOut %v", s.Name, s.LeftOut)
		}
	}
	if strings.Join(got, ", ") != "postgres true, collector true, migrate true, bootstrap true, controller true, worker-kubernetes true, prometheus true, grafana true, metrics-api true, metrics-worker false, worker false" {
		t.Errorf("services: %s", strings.Join(got, ", "))
	}
	for _, p := range dr.Problems {
		if strings.Contains(p, "Compose model") {
			t.Errorf("a Compose problem: %s", p)
		}
	}
	for _, said := range []string{text, errText, out, errOut} {
		if strings.Contains(said, canary) {
			t.Fatalf("the Grafana password was printed:\n%s", said)
		}
	}
	if _, err := os.Stat(stateDir); !os.IsNotExist(err) {
		t.Fatalf("state directory created (%v)", err)
	}
}

// An engineer's overlay breaks a rule of the profile (a container_name; worker-kubernetes made
// to depend on the metrics overlay's worker agent, which cannot run here): the dry run still
// prints the whole plan, as text and as JSON on stdout, lists the refusal among its problems,
// naming the service and the rule, and exits non-zero; nothing is created.
func TestDryRunShowsAComposeRefusalAsAProblem(t *testing.T) {
	checkout, stateDir := isolateCompose(t)
	t.Setenv("OCC_METRICS_GRAFANA_PASSWORD", "grafana-canary-9f0e")
	for name, c := range map[string]struct{ overlay, want string }{
		"container name": {"services:\n  postgres:\n    container_name: mine\n", "service postgres: container_name"},
		"needs a left-out service": {"services:\n  worker-kubernetes:\n    depends_on: [metrics-worker]\n",
			"the profile's worker-kubernetes needs metrics-worker (depends_on), which cannot run in this profile (left out, as it cannot run in this profile: it needs worker"},
	} {
		t.Run(name, func(t *testing.T) {
			overlay := filepath.Join(t.TempDir(), "overlay.yaml")
			if err := os.WriteFile(overlay, []byte(c.overlay), 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"dev", "up", "--dry-run", "--state-dir", stateDir, "--repository", checkout, "--cluster-provider", "k3d", "--", "-f", filepath.Join(checkout, "compose.metrics.yaml"), "-f", overlay}
			code, text, _ := run(t, args...)
			if code == 0 || !strings.Contains(text, "Compose project:") || !strings.Contains(text, "Problems (occ dev up would stop at these before creating anything):") || !strings.Contains(text, c.want) {
				t.Errorf("exit %d; want the plan and the problem %q:\n%s", code, c.want, text)
			}
			code, out, errOut := run(t, append(args[:3:3], append([]string{"-o", "json"}, args[3:]...)...)...)
			var dr dryRunServices
			if err := json.Unmarshal([]byte(out), &dr); err != nil || code == 0 || len(dr.Plan.OCE.Compose.Services) == 0 {
				t.Fatalf("exit %d, JSON %v: want the plan on stdout\n%s", code, err, out)
			}
			if !slices.ContainsFunc(dr.Problems, func(p string) bool { return strings.Contains(p, c.want) }) || !strings.Contains(errOut, c.want) {
				t.Errorf("problems %q, stderr %q: want %q", dr.Problems, errOut, c.want)
			}
			if _, err := os.Stat(stateDir); !os.IsNotExist(err) {
				t.Fatalf("state directory created (%v)", err)
			}
		})
	}
}
