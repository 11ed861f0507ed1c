package occdev_test

import (
	"bufio"
	"context"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/docker/docker/api/types/volume"

	"github.com/openclaw/occ/internal/occdev"
)

// killAllEnv runs the signal matrices at every step of `up`; by default they run killSubset.
const killAllEnv = "OCC_TEST_KILL_ALL_STEPS"

// killSubset are the default SIGKILL points: right after these steps finish, `up` is inside the
// next ones. After the claim (the pulls and the cluster's creation start), after the cluster's
// creation (the imports run in three lanes and the platform installs beside them), after the
// Gateway image's import (the Sandbox and supervisor imports are mid-stream), and after the
// policies (the Gateway's Helm install is running). The steps around them are killed the same
// way (OCC_TEST_KILL_ALL_STEPS=1 kills after every one: 32 of 32 at the last full run).
func killSubset(clusterName string) []string {
	return []string{
		"Claim the private state directory",
		"Create k3d cluster " + clusterName,
		"Import the OpenShell Gateway image into the cluster",
		"Apply the development NetworkPolicies and RBAC",
	}
}

// killSubsetOtherEngines are the default signal points on the classic store and on Podman, where
// the steps around them are the same as on the default engine: the claim, the cluster's
// creation, the imports.
func killSubsetOtherEngines(clusterName string) []string {
	return []string{
		"Claim the private state directory",
		"Create k3d cluster " + clusterName,
		"Import the OpenShell Gateway image into the cluster",
	}
}

// testSignalAtEachStep sends sig to `occ dev up`, the built binary, right after a step finishes,
// while the steps after it run.
//
// SIGKILL (a closed laptop lid, CI's timeout, the OOM killer): `occ dev status` then describes
// what is there, `occ dev down` exits 0.
//
// SIGINT (Ctrl-C): up rolls back by itself and exits 130, saying so.
//
// Either way nothing occ made is left in the end: no container, network or volume of the cluster
// (no volume the engine did not hold before up), no staging tag or pulled image, no state
// directory (with its lock), no temporary file, and the user's kubeconfig is as it was.
func testSignalAtEachStep(t *testing.T, b *k3dBed, sig syscall.Signal, subset func(clusterName string) []string) {
	opts := b.options(t)
	names := stepNames(t, opts)
	points := names
	if os.Getenv(killAllEnv) == "" {
		points = subset(opts.K3d().ClusterName)
		for _, p := range points {
			if !slices.Contains(names, p) {
				t.Fatalf("the flow has no step %q: %q", p, names)
			}
		}
		t.Logf("%s after %d of the %d steps; set %s=1 for every step", sig, len(points), len(names), killAllEnv)
	}
	bin := buildOCC(t)
	signalMatrix(t, sig, "k3d profile, "+string(b.kind)+" engine", points, func(t *testing.T, i int, point string) {
		b.forgetProducts(t)
		opts := b.options(t)
		// The cluster's step is named after this run's cluster.
		if strings.HasPrefix(point, "Create k3d cluster ") {
			point = "Create k3d cluster " + opts.K3d().ClusterName
		} else if os.Getenv(killAllEnv) != "" {
			point = stepNames(t, opts)[i]
		}
		signalUpAfter(t, b, bin, opts, b.pinFile, point, sig, nil)
	})
}

// signalMatrix runs check at each of the points (i its index), each in a subtest named after the
// point, and logs how many of them passed in the matrix named what.
func signalMatrix(t *testing.T, sig syscall.Signal, what string, points []string, check func(t *testing.T, i int, point string)) {
	passed := 0
	for i, point := range points {
		// k3d refuses a state directory with a comma, and the test's directory carries its name.
		t.Run(strings.ReplaceAll(point, ",", ""), func(t *testing.T) {
			check(t, i, point)
			if !t.Failed() {
				passed++
			}
		})
	}
	t.Logf("%s matrix (%s): %d points, %d passed", sig, what, len(points), passed)
}

// signalUpAfter runs the built occ dev up (the Kubernetes-only profile on a k3d cluster, with
// pinFile) until it prints point, signals it, and checks what follows: after a SIGKILL status and
// down (afterKill), after another signal an exit that says it rolled back; either way nothing of
// the cluster is left, nor any of the extra objects left reports.
func signalUpAfter(t *testing.T, b *k3dBed, bin string, opts occdev.UpOptions, pinFile, point string, sig syscall.Signal, left func() []string) {
	t.Helper()
	downAtEnd(t, opts.StateDir)
	volumesBefore := b.allVolumes(t)
	tmp := t.TempDir()
	env := append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(t.TempDir(), "cache"), "OCC_DEVELOPMENT_STATE_DIRECTORY="+opts.StateDir, "TMPDIR="+tmp)
	up := exec.Command(bin, "dev", "up", "--cluster-provider", "k3d", "--control-plane", "kubernetes", "--cluster-name", opts.K3d().ClusterName,
		"--pin-file", pinFile, "--openshell-archive", b.archive, "--gateway-endpoint", opts.GatewayEndpoint, "--startup-timeout", "3m", "--engine", string(b.kind))
	up.Env = env
	run := runSignalledAfter(t, up, point, sig)
	werr, stderr := run.err, run.stderr
	var vols []string
	switch sig {
	case syscall.SIGKILL:
		if !run.killedBy(syscall.SIGKILL) {
			t.Fatalf("up was not killed after %q: %v", point, werr)
		}
		vols = b.volumesOf(t, opts.K3d().ClusterName)
		afterKill(t, b, bin, env, opts.StateDir, opts.K3d().ClusterName, vols)
	default:
		code := up.ProcessState.ExitCode()
		t.Logf("up after %s (exit %d):\n%s", sig, code, stderr)
		// A signal after the last step's line can meet an up that has nothing left to do.
		if code != 128+int(sig) && code != 0 {
			t.Errorf("exit code %d after %s, want %d", code, sig, 128+int(sig))
		}
		if code != 0 && !strings.Contains(stderr, "rolled back") && !strings.Contains(stderr, "interrupted") {
			t.Errorf("up does not say it was interrupted and rolled back:\n%s", stderr)
		}
		if code == 0 {
			downOut, err := exec.Command(bin, "dev", "down", "--state-dir", opts.StateDir).CombinedOutput()
			if err != nil {
				t.Fatalf("down after an up the signal did not stop: %v\n%s", err, downOut)
			}
		}
	}
	l := b.leftovers(t, opts.K3d().ClusterName, vols)
	if left != nil {
		l = append(l, left()...)
	}
	b.assertLeftNothing(t, sig, l, volumesBefore, opts.K3d().ClusterName, opts.StateDir, tmp)
}

// assertLeftNothing checks what a signalled run of `up` (and the `down` after a SIGKILL) left:
// nothing of left (the bed's leftovers of the cluster), no volume of the cluster the engine did
// not hold before, no state directory, nothing in the run's TMPDIR, and the user's kubeconfig as
// it was.
func (b *k3dBed) assertLeftNothing(t *testing.T, sig syscall.Signal, left []string, volumesBefore map[string]*volume.Volume, cluster, stateDir, tmp string) {
	t.Helper()
	if len(left) > 0 {
		t.Errorf("left after %s and down: %v", sig, left)
	}
	if extra := b.newVolumes(t, volumesBefore, cluster); len(extra) > 0 {
		t.Errorf("volumes left after %s: %v", sig, extra)
	}
	if !stateGone(stateDir) {
		t.Errorf("state directory left")
	}
	if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("temporary files left in TMPDIR: %v", names)
	}
	b.assertUserKubeconfig(t)
}

// signalled is a run of the built binary that a signal met.
type signalled struct {
	stdout, stderr string
	// err is what Wait returned.
	err error
}

// runSignalledAfter starts cmd and sends it sig as soon as step's finished line ("✓ step (1.2s)",
// the non-TTY progress on stdout) appears, then waits for it to end. It stops the test when the
// command ended before the step finished.
func runSignalledAfter(t *testing.T, cmd *exec.Cmd, step string, sig syscall.Signal) signalled {
	t.Helper()
	return runSignalledWhen(t, cmd, sig, "step "+step+" finished", func(line string) bool { return strings.HasPrefix(line, "✓ "+step+" ") }, nil)
}

// runSignalledWhen starts cmd and sends it sig at the first line of its stdout that atLine
// accepts, or when event is closed (nil: never), then waits for it to end. It stops the test
// when the command ended before either, saying it never saw what.
func runSignalledWhen(t *testing.T, cmd *exec.Cmd, sig syscall.Signal, what string, atLine func(string) bool, event <-chan struct{}) signalled {
	t.Helper()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The reader keeps reading after the signal: what the command prints then is part of the
	// run (Ctrl-C's error, the rollback).
	var seen strings.Builder
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- strings.TrimSpace(sc.Text())
		}
	}()
	hit, reading := false, true
	for !hit && reading {
		select {
		case line, ok := <-lines:
			if ok {
				seen.WriteString(line + "\n")
				hit = atLine(line)
			}
			reading = ok
		case <-event:
			hit = true
		}
	}
	if hit {
		_ = cmd.Process.Signal(sig)
	}
	for line := range lines {
		seen.WriteString(line + "\n")
	}
	werr := cmd.Wait()
	if !hit {
		t.Fatalf("%s ended (%v) before %s:\n%s\nstderr:\n%s", strings.Join(cmd.Args, " "), werr, what, seen.String(), stderr.String())
	}
	return signalled{stdout: seen.String(), stderr: stderr.String(), err: werr}
}

// killedBy says whether the run ended by sig itself (a SIGKILL cannot be handled).
func (s signalled) killedBy(sig syscall.Signal) bool {
	var exit *exec.ExitError
	return errors.As(s.err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == sig
}

// afterKill runs `occ dev status`, which must describe what a killed up left, then `occ dev
// down`, which must finish with exit 0.
func afterKill(t *testing.T, b *k3dBed, bin string, env []string, stateDir, cluster string, vols []string) {
	t.Helper()
	run := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		o, err := cmd.CombinedOutput()
		return string(o), err
	}
	status, err := run("dev", "status")
	t.Logf("occ dev status after the kill:\n%s", status)
	// A part status cannot look at (images in a node the run never recorded) makes it exit 1,
	// saying so; anything else is a failure.
	if err != nil && !strings.Contains(status, "Error: the state of ") {
		t.Errorf("occ dev status after the kill: %v", err)
	}
	if stateGone(stateDir) && !strings.Contains(status, "nothing is up") {
		t.Errorf("status without a state directory does not say nothing is up:\n%s", status)
	}
	if len(vols) > 0 && !stateGone(stateDir) && !strings.Contains(status, "k3d cluster:   exists") {
		t.Errorf("the node of cluster %s exists, and status does not say so:\n%s", cluster, status)
	}
	downOut, err := run("dev", "down")
	if err != nil {
		t.Fatalf("occ dev down after the kill: %v\n%s", err, downOut)
	}
}

// allVolumes is every volume the engine holds now, by name.
func (b *k3dBed) allVolumes(t testing.TB) map[string]*volume.Volume {
	t.Helper()
	list, err := b.Engine.API.VolumeList(context.Background(), volume.ListOptions{})
	if err != nil {
		t.Fatalf("list volumes: %v", err)
	}
	all := map[string]*volume.Volume{}
	for _, v := range list.Volumes {
		all[v.Name] = v
	}
	return all
}

// newVolumes are the volumes the engine holds now that it did not hold in before and that belong
// to one of owners (a cluster or a Compose project): named after it, or labelled with it. Other
// tests share the engine (packages run side by side), so a volume of theirs is no leftover of
// this one.
func (b *k3dBed) newVolumes(t testing.TB, before map[string]*volume.Volume, owners ...string) []string {
	t.Helper()
	if len(owners) == 0 || slices.Contains(owners, "") {
		t.Fatalf("newVolumes needs the names of the cluster or project whose volumes it looks for, got %q", owners)
	}
	var extra []string
	for name, v := range b.allVolumes(t) {
		if before[name] != nil {
			continue
		}
		for _, o := range owners {
			if strings.Contains(name, o) || slices.Contains(slices.Collect(maps.Values(v.Labels)), o) {
				extra = append(extra, name)
				break
			}
		}
	}
	slices.Sort(extra)
	return extra
}

// testKillDuringDown: `occ dev down`, the built binary, is killed right after it reports its
// first removal, with the rest still recorded. `status` still reads the state, a second `down`
// finishes with exit 0, and nothing is left.
func testKillDuringDown(t *testing.T, b *k3dBed) {
	b.forgetProducts(t)
	opts := b.options(t)
	downAtEnd(t, opts.StateDir)
	volumesBefore := b.allVolumes(t)
	if _, err := occdev.Up(context.Background(), opts); err != nil {
		t.Fatalf("up: %v", err)
	}
	vols := b.volumesOf(t, opts.K3d().ClusterName)
	bin := buildOCC(t)
	tmp := t.TempDir()
	env := append(os.Environ(), "OCC_DEVELOPMENT_STATE_DIRECTORY="+opts.StateDir, "TMPDIR="+tmp)
	down := exec.Command(bin, "dev", "down")
	down.Env = env
	run := runSignalledWhen(t, down, syscall.SIGKILL, "its first removal", func(line string) bool { return strings.HasPrefix(line, "removed ") }, nil)
	if !run.killedBy(syscall.SIGKILL) {
		t.Fatalf("down was not killed after its first removal (%v):\n%s", run.err, run.stdout)
	}
	t.Logf("down, killed after:\n%s", run.stdout)
	if stateGone(opts.StateDir) {
		t.Fatal("the killed down removed the state directory, with objects still recorded")
	}
	// The cluster went first: status says so, and that everything inside it went with it.
	st := exec.Command(bin, "dev", "status")
	st.Env = env
	status, err := st.CombinedOutput()
	if err != nil || !strings.Contains(string(status), "k3d cluster:   missing") || strings.Contains(string(status), "unknown") {
		t.Errorf("status after the killed down (%v) does not say the cluster and everything in it are gone:\n%s", err, status)
	}
	afterKill(t, b, bin, env, opts.StateDir, opts.K3d().ClusterName, nil)
	if left := b.leftovers(t, opts.K3d().ClusterName, vols); len(left) > 0 {
		t.Errorf("left after the killed down and another: %v", left)
	}
	if extra := b.newVolumes(t, volumesBefore, opts.K3d().ClusterName); len(extra) > 0 {
		t.Errorf("volumes left: %v", extra)
	}
	if !stateGone(opts.StateDir) {
		t.Error("state directory left after the second down")
	}
	if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
		t.Errorf("temporary files left in TMPDIR: %d", len(entries))
	}
	b.assertUserKubeconfig(t)
}
