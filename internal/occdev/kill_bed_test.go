package occdev_test

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/openclaw/occ/internal/occdev"
)

// killAllEnv runs the SIGKILL matrix at every step of `up`; by default it runs killSubset.
const killAllEnv = "OCC_TEST_KILL_ALL_STEPS"

// killSubset are the default kill points: right after these steps finish, `up` is inside the
// next ones. After the preflight (the state directory is being claimed), after the claim (the
// pulls and the cluster's creation start), after the cluster's creation (the imports run in
// three lanes and the platform installs beside them), after the Gateway image's import (the
// Sandbox and supervisor imports are mid-stream), after the policies (the Gateway's Helm
// install is running), and after the wait for the workloads (Gateway health, the Installation).
func killSubset(clusterName string) []string {
	return []string{
		"Check the settings and the Docker engine",
		"Claim the private state directory",
		"Create k3d cluster " + clusterName,
		"Import the OpenShell Gateway image into the cluster",
		"Apply the development NetworkPolicies and RBAC",
		"Wait for the Agent Sandbox controller and the Gateway",
	}
}

// testKillAtEachStep: `occ dev up`, the built binary, is killed with SIGKILL (a closed laptop
// lid, CI's timeout, the OOM killer) right after a step finishes, while the steps after it run.
// Then `occ dev status` describes what is there, `occ dev down` exits 0, and nothing occ made is
// left: no container, network or volume of the cluster, no staging tag or pulled image, no state
// directory (with its lock), no temporary file, and the user's kubeconfig is as it was.
func testKillAtEachStep(t *testing.T, b *k3dBed) {
	opts := b.options(t)
	names := stepNames(t, opts)
	points := names
	if os.Getenv(killAllEnv) == "" {
		points = killSubset(opts.ClusterName)
		for _, p := range points {
			if !slices.Contains(names, p) {
				t.Fatalf("the flow has no step %q: %q", p, names)
			}
		}
		t.Logf("killing after %d of the %d steps; set %s=1 for every step", len(points), len(names), killAllEnv)
	}
	bin := buildOCC(t)
	killed := 0
	for i, point := range points {
		t.Run(point, func(t *testing.T) {
			b.forgetProducts(t)
			opts := b.options(t)
			// The cluster's step is named after this run's cluster.
			if strings.HasPrefix(point, "Create k3d cluster ") {
				point = "Create k3d cluster " + opts.ClusterName
			} else if os.Getenv(killAllEnv) != "" {
				point = stepNames(t, opts)[i]
			}
			downAtEnd(t, opts.StateDir)
			tmp := t.TempDir()
			env := append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(t.TempDir(), "cache"), "OCC_DEVELOPMENT_STATE_DIRECTORY="+opts.StateDir, "TMPDIR="+tmp)
			up := exec.Command(bin, "dev", "up", "--cluster-provider", "k3d", "--control-plane", "kubernetes", "--cluster-name", opts.ClusterName,
				"--pin-file", b.pinFile, "--openshell-archive", b.archive, "--gateway-endpoint", opts.GatewayEndpoint, "--startup-timeout", "3m", "--engine", b.kind)
			up.Env = env
			var stderr strings.Builder
			up.Stderr = &stderr
			out, err := up.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := up.Start(); err != nil {
				t.Fatal(err)
			}
			var seen strings.Builder
			hit := false
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				line := strings.TrimSpace(sc.Text())
				seen.WriteString(line + "\n")
				if strings.HasPrefix(line, "✓ "+point+" ") {
					hit = true
					_ = up.Process.Signal(syscall.SIGKILL)
					break
				}
			}
			werr := up.Wait()
			var exit *exec.ExitError
			if !hit || !errors.As(werr, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("up ended (%v) before it was killed after %q:\n%s\nstderr:\n%s", werr, point, seen.String(), stderr.String())
			}
			killed++
			vols := b.volumesOf(t, opts.ClusterName)

			run := func(args ...string) (string, error) {
				cmd := exec.Command(bin, args...)
				cmd.Env = env
				o, err := cmd.CombinedOutput()
				return string(o), err
			}
			status, err := run("dev", "status")
			t.Logf("occ dev status after the kill:\n%s", status)
			// A part status cannot look at (images in a node the run never recorded) makes it
			// exit 1, saying so; anything else is a failure.
			if err != nil && !strings.Contains(status, "Error: the state of ") {
				t.Errorf("occ dev status after the kill: %v", err)
			}
			if stateGone(opts.StateDir) && !strings.Contains(status, "nothing is up") {
				t.Errorf("status without a state directory does not say nothing is up:\n%s", status)
			}
			if len(vols) > 0 && !stateGone(opts.StateDir) && !strings.Contains(status, "k3d cluster:   exists") {
				t.Errorf("the cluster's node exists, and status does not say so:\n%s", status)
			}
			downOut, err := run("dev", "down")
			if err != nil {
				t.Fatalf("occ dev down after the kill: %v\n%s", err, downOut)
			}
			if left := b.leftovers(t, opts.ClusterName, vols); len(left) > 0 {
				t.Errorf("left after the kill and down: %v\ndown said:\n%s", left, downOut)
			}
			if !stateGone(opts.StateDir) {
				t.Errorf("state directory left after down:\n%s", downOut)
			}
			if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
				var left []string
				for _, e := range entries {
					left = append(left, e.Name())
				}
				t.Errorf("temporary files left in TMPDIR: %v", left)
			}
			b.assertUserKubeconfig(t)
		})
	}
	t.Logf("SIGKILL matrix (k3d profile, %s engine): %d points killed", b.kind, killed)
	_ = occdev.DownCommand
}
