package occdev_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/observe"
	"github.com/openclaw/occ/internal/testbed/dockerbed"
)

// engineRestartEnv runs the engine-restart tests. They stop and start the classic-store engine
// the other tests share, so make test runs them on their own after every package has passed.
const engineRestartEnv = "OCC_TEST_ENGINE_RESTART"

// recoveryBound is how long an environment may take to serve again after its engine restarts:
// the node and load balancer restart by their restart policy, k3s (the stand-in) starts again on
// its kept data and certificates, and the kubelet reports the Pods ready again.
const recoveryBound = 3 * time.Minute

// startEnv is the environment before any test changed it.
var startEnv = os.Environ()

// restartEngine restarts a bed engine by its own pid, as a Docker Desktop update or a reboot
// does: scripts/testdocker stops the daemon its pidfile names (SIGTERM) and starts it again on
// the same data root and socket. flavour is the script's name for it ("classic", or "" for the
// default one). It returns how long the engine was away.
func restartEngine(t *testing.T, host, flavour string) time.Duration {
	t.Helper()
	u, err := url.Parse(host)
	if err != nil {
		t.Fatal(err)
	}
	// The socket is <cache>/occ/testdocker-<version>/docker.sock; the script finds the same
	// engine from the same cache, whatever HOME the bed gave the test.
	cache := filepath.Dir(filepath.Dir(filepath.Dir(u.Path)))
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "testdocker"))
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	stop, start := []string{"stop"}, []string{}
	if flavour != "" {
		stop, start = append(stop, flavour), append(start, flavour)
	}
	for i, args := range [][]string{stop, start} {
		cmd := exec.Command(script, args...)
		// The environment the test binary started with: the bed's HOME, TMPDIR and the rest
		// belong to this test, and the engine outlives it.
		cmd.Env = append(slices.Clone(startEnv), "XDG_CACHE_HOME="+cache)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("scripts/testdocker %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		if i == 1 && strings.TrimSpace(lastLine(string(out))) != host {
			t.Fatalf("scripts/testdocker %s started an engine at %q, want %s", flavour, lastLine(string(out)), host)
		}
	}
	return time.Since(began)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// waitRecovered reads status until the environment is whole again (the cluster exists and
// answers, every image matches its pin, every workload is ready) or the bound passes, and
// returns how long that took and the last status.
func waitRecovered(t *testing.T, stateDir string, bound time.Duration) (time.Duration, *observe.Status, error) {
	t.Helper()
	began := time.Now()
	var last *observe.Status
	var lastErr error
	for delay := 250 * time.Millisecond; time.Since(began) < bound; delay = min(2*delay, 2*time.Second) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		last, lastErr = occdev.GetStatus(ctx, occdev.StatusOptions{StateDir: stateDir})
		cancel()
		if lastErr == nil && whole(last) == "" {
			return time.Since(began), last, nil
		}
		time.Sleep(delay) // polling an external system's recovery, with a bound
	}
	if lastErr == nil {
		lastErr = fmt.Errorf("not whole: %s", whole(last))
	}
	return time.Since(began), last, lastErr
}

// whole says what keeps a status from describing a whole environment, or "" when nothing does.
func whole(st *observe.Status) string {
	switch {
	case st.ClusterState != observe.ClusterExists:
		return "cluster " + st.ClusterState + " " + st.ClusterDetail
	case !st.Reachable:
		return "cluster not reachable: " + st.Problem
	case len(st.Workloads) == 0:
		return "no workloads listed: " + st.WorkloadsProblem
	}
	for _, img := range st.Images {
		if img.State != observe.ImageDigestMatches {
			return "image " + img.Reference + " " + img.State + " " + img.Detail
		}
	}
	for _, w := range st.Workloads {
		if !strings.HasSuffix(w.State, " ready") || strings.HasPrefix(w.State, "0/") {
			return w.Service + " " + w.State
		}
	}
	if cp := st.ControlPlane; cp != nil {
		if cp.API != "ready" {
			return "API " + cp.API
		}
		if cp.ServicesProblem != "" {
			return "services: " + cp.ServicesProblem
		}
		for _, s := range cp.Services {
			if !strings.HasPrefix(s.State, "running") && !strings.HasPrefix(s.State, "exited with code 0") {
				return s.Service + " " + s.State
			}
		}
	}
	return ""
}

// A developer's engine restarts (a Docker Desktop update, a reboot) while an environment is up:
// it comes back by itself within recoveryBound (the nodes' restart policy, k3s on its kept
// data), status says so, and down removes everything afterwards. The engine also restarts in
// the middle of an up: up fails with an error that names the engine, and what it made is
// rolled back or kept for the down that then finishes.
func TestEngineRestart(t *testing.T) {
	if os.Getenv(engineRestartEnv) == "" {
		t.Skipf("stops and starts the classic-store engine the other tests share: make test runs it on its own after them (%s=1)", engineRestartEnv)
	}
	onClassicDocker(t)
	host := os.Getenv(dockerbed.ClassicHostEnv)
	b := newK3dBed(t, nil)

	t.Run("after up the environment serves again", func(t *testing.T) {
		b.forgetProducts(t)
		opts := b.options(t)
		downAtEnd(t, opts.StateDir)
		if _, err := occdev.Up(context.Background(), opts); err != nil {
			t.Fatalf("up: %v", err)
		}
		vols := b.volumesOf(t, opts.K3d().ClusterName)
		node := "k3d-" + opts.K3d().ClusterName + "-server-0"
		restartBegan := time.Now()
		away := restartEngine(t, host, "classic")
		took, st, err := waitRecovered(t, opts.StateDir, recoveryBound)
		t.Logf("engine away %s; environment whole again %s after the engine answered", away.Round(time.Millisecond), took.Round(time.Millisecond))
		if err != nil {
			t.Fatalf("the environment did not come back within %s: %v\nlast status: %+v", recoveryBound, err, st)
		}
		// It came back, not stayed: the engine stopped the node with itself (no live restore)
		// and started it again by its restart policy.
		ins, err := b.Engine.API.ContainerInspect(context.Background(), node)
		if err != nil {
			t.Fatal(err)
		}
		started, err := time.Parse(time.RFC3339Nano, ins.State.StartedAt)
		if err != nil || !started.After(restartBegan) {
			t.Fatalf("node %s started at %q, not after the engine's restart began (%s): the restart did not stop it", node, ins.State.StartedAt, restartBegan.Format(time.RFC3339Nano))
		}
		if _, err := occdev.Down(context.Background(), occdev.DownOptions{StateDir: opts.StateDir}); err != nil {
			t.Fatalf("down after the restart: %v", err)
		}
		if left := b.leftovers(t, opts.K3d().ClusterName, vols); len(left) > 0 {
			t.Errorf("left after down: %v", left)
		}
		if !stateGone(opts.StateDir) {
			t.Error("state directory left after down")
		}
	})

	t.Run("during up", func(t *testing.T) {
		b.forgetProducts(t)
		opts := b.options(t)
		downAtEnd(t, opts.StateDir)
		volumesBefore := b.allVolumes(t)
		restarted := make(chan time.Duration, 1)
		opts.Seams().AfterStep = func(name string) error {
			if name == "Import the OpenShell Gateway image into the cluster" {
				restarted <- restartEngine(t, host, "classic")
			}
			return nil
		}
		_, err := occdev.Up(context.Background(), opts)
		t.Logf("up across an engine restart: %v", err)
		var vols []string
		select {
		case away := <-restarted:
			t.Logf("engine away %s", away.Round(time.Millisecond))
		default:
			t.Fatal("the engine was never restarted")
		}
		if err == nil {
			// The restart fell between the requests of every lane: up finished on the engine
			// that came back, which must then hold a whole environment.
			if _, st, rerr := waitRecovered(t, opts.StateDir, recoveryBound); rerr != nil {
				t.Fatalf("up succeeded across the restart, but the environment is not whole: %v\n%+v", rerr, st)
			}
		} else if !stateGone(opts.StateDir) {
			vols = b.volumesOf(t, opts.K3d().ClusterName)
			if !strings.Contains(err.Error(), "occ dev down") {
				t.Errorf("up failed and kept its state without saying what finishes it: %v", err)
			}
		}
		if !stateGone(opts.StateDir) {
			if _, err := occdev.Down(context.Background(), occdev.DownOptions{StateDir: opts.StateDir}); err != nil {
				t.Fatalf("down after the restart during up: %v", err)
			}
		}
		if left := b.leftovers(t, opts.K3d().ClusterName, vols); len(left) > 0 {
			t.Errorf("left: %v", left)
		}
		if extra := b.newVolumes(t, volumesBefore, opts.K3d().ClusterName); len(extra) > 0 {
			t.Errorf("volumes left: %v", extra)
		}
	})
}

// The engine of a Compose environment restarts (the default engine, which the Compose bed runs
// on): the k3d node comes back by k3d's restart policy, PostgreSQL, the controller and
// worker-kubernetes by the one occ gives them, and the API answers again within recoveryBound
// without a new up; down then removes everything.
func TestEngineRestartCompose(t *testing.T) {
	if os.Getenv(engineRestartEnv) == "" {
		t.Skipf("stops and starts the default engine the other tests share: make test runs it on its own after them (%s=1)", engineRestartEnv)
	}
	host := os.Getenv("DOCKER_HOST")
	b := newComposeBed(t)
	b.forgetProducts(t)
	r := b.run(t)
	downAtEnd(t, r.opts.StateDir)
	if _, err := occdev.Up(context.Background(), r.opts); err != nil {
		t.Fatalf("up: %v", err)
	}
	vols := b.volumesOf(t, r.opts.K3d().ClusterName)
	away := restartEngine(t, host, "")
	took, st, err := waitRecovered(t, r.opts.StateDir, recoveryBound)
	t.Logf("engine away %s; environment whole again (API ready, services running) %s after the engine answered", away.Round(time.Millisecond), took.Round(time.Millisecond))
	if err != nil {
		t.Fatalf("the Compose environment did not come back within %s: %v\nlast status: %+v", recoveryBound, err, st.ControlPlane)
	}
	if _, err := occdev.Down(context.Background(), occdev.DownOptions{StateDir: r.opts.StateDir}); err != nil {
		t.Fatalf("down after the restart: %v", err)
	}
	if left := b.projectLeftovers(t, r, vols); len(left) > 0 {
		t.Errorf("left after down: %v", left)
	}
}
