package occdev_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// composeKillPoints are the default SIGKILL points of the Compose profile, by the start of the
// step's name: after the base images' pulls (the control-plane images are being built); after
// PostgreSQL, migrate and bootstrap (the cluster joins the project's network, the platform
// installs); after the controller and worker-kubernetes start (their readiness is awaited).
// OCC_TEST_KILL_ALL_STEPS=1 kills after every step.
var composeKillPoints = []string{
	"Pull the base images of the control-plane builds",
	"Start postgres, migrate and bootstrap",
	"Start the controller and worker-kubernetes",
}

// composeInterruptPoints are the Ctrl-C points by default: mid-build, and with the whole
// project and the cluster up while the API's readiness is awaited.
var composeInterruptPoints = []string{
	"Pull the base images of the control-plane builds",
	"Start the controller and worker-kubernetes",
}

// testComposeKillAtEachStep: `occ dev up` of the default profile, the built binary run from the
// checkout, is killed with SIGKILL right after a step finishes. `occ dev status` then describes
// what is there, `occ dev down` exits 0, and nothing is left: no container, volume or network of
// the project, nothing of the cluster, no volume the engine did not hold before, no state
// directory, no temporary file.
func testComposeKillAtEachStep(t *testing.T, b *composeBed, sig syscall.Signal) {
	probe := b.run(t)
	names := stepNames(t, probe.opts)
	var points []string
	if os.Getenv(killAllEnv) != "" {
		points = names
	} else {
		prefixes := composeKillPoints
		if sig != syscall.SIGKILL {
			prefixes = composeInterruptPoints
		}
		for _, prefix := range prefixes {
			found := ""
			for _, n := range names {
				if strings.HasPrefix(n, prefix) {
					found = n
					break
				}
			}
			if found == "" {
				t.Fatalf("the Compose flow has no step starting %q: %q", prefix, names)
			}
			points = append(points, found)
		}
		t.Logf("%s after %d of the %d steps; set %s=1 for every step", sig, len(points), len(names), killAllEnv)
	}
	bin := buildOCC(t)
	signalMatrix(t, sig, "Compose profile, docker engine", points, func(t *testing.T, i int, point string) {
		b.forgetProducts(t)
		r := b.run(t)
		if os.Getenv(killAllEnv) != "" || strings.HasPrefix(point, "Create k3d cluster ") {
			point = stepNames(t, r.opts)[i] // named after this run's cluster
		}
		downAtEnd(t, r.opts.StateDir)
		volumesBefore := b.allVolumes(t)
		tmp := t.TempDir()
		env := b.cliEnv(t, r, "TMPDIR="+tmp)
		up := exec.Command(bin, "dev", "up", "--cluster-name", r.opts.K3d().ClusterName, "--pin-file", b.pinFile, "--openshell-archive", b.archive,
			"--gateway-endpoint", r.opts.GatewayEndpoint, "--startup-timeout", "3m", "--", "-f", "../../build-network.yaml")
		up.Dir = filepath.Join(r.checkout, "apps", "controller")
		up.Env = env
		run := runSignalledAfter(t, up, point, sig)
		var vols []string
		cmd := func(args ...string) (string, error) {
			c := exec.Command(bin, args...)
			c.Dir, c.Env = up.Dir, env
			o, err := c.CombinedOutput()
			return string(o), err
		}
		if sig == syscall.SIGKILL {
			if !run.killedBy(syscall.SIGKILL) {
				t.Fatalf("up was not killed after %q: %v", point, run.err)
			}
			vols = b.volumesOf(t, r.opts.K3d().ClusterName)
			status, err := cmd("dev", "status")
			t.Logf("occ dev status after the kill:\n%s", status)
			if err != nil && !strings.Contains(status, "Error: ") {
				t.Errorf("occ dev status after the kill: %v", err)
			}
		} else {
			// Ctrl-C: up rolls back by itself and exits 130 (0 when it had nothing left to do).
			code := up.ProcessState.ExitCode()
			t.Logf("up after %s (exit %d):\n%s", sig, code, run.stderr)
			if code != 128+int(sig) && code != 0 {
				t.Errorf("exit code %d after %s, want %d", code, sig, 128+int(sig))
			}
			if code != 0 && !strings.Contains(run.stderr, "interrupted") {
				t.Errorf("up does not say it was interrupted:\n%s", run.stderr)
			}
		}
		if !stateGone(r.opts.StateDir) {
			if downOut, err := cmd("dev", "down"); err != nil {
				t.Fatalf("occ dev down after %s: %v\n%s", sig, err, downOut)
			}
		}
		if left := b.projectLeftovers(t, r, vols); len(left) > 0 {
			t.Errorf("left after the kill and down: %v", left)
		}
		if extra := b.newVolumes(t, volumesBefore, r.opts.K3d().ClusterName, r.settings.Project); len(extra) > 0 {
			t.Errorf("volumes left: %v", extra)
		}
		if !stateGone(r.opts.StateDir) {
			t.Error("state directory left after down")
		}
		if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
			t.Errorf("temporary files left in TMPDIR: %d", len(entries))
		}
	})
}
