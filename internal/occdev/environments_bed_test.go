package occdev_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/observe"
	"github.com/openclaw/occ/internal/occdev/state"
)

// An engineer with two worktrees brings up two environments side by side (one through the
// library, one through the built binary with --name): each gets its own state directory and
// cluster, `occ dev list` shows both healthy, and each `down` leaves the other's cluster,
// containers and state exactly as they were.
func TestEnvironmentsSideBySide(t *testing.T) {
	// The binary is built before the bed moves HOME (and with it Go's build cache).
	startBuild()
	b := newK3dBed(t, nil)
	b.forgetProducts(t)
	start := time.Now()
	lap := func(what string) { t.Logf("%s: %s", what, time.Since(start).Round(time.Millisecond)) }
	bin := buildOCC(t)
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	for _, k := range []string{state.EnvDirectory, state.EnvEnvironment} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	oneDir, _ := state.EnvironmentDir("one")
	twoDir, _ := state.EnvironmentDir("two")
	downAtEnd(t, oneDir)
	downAtEnd(t, twoDir)

	one := b.options(t)
	one.StateDir, one.Environment = "", "one"
	steps := &recordedProgress{}
	one.Progress = steps.sink
	if _, err := occdev.Up(context.Background(), one); err != nil {
		t.Fatalf("up of environment one: %v", err)
	}
	lap("up of one")
	t.Logf("its steps:\n%s", strings.Join(steps.lines, "\n"))

	two := b.options(t)
	run := func(args ...string) (string, string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+two.CacheDir)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		return out.String(), errOut.String(), err
	}
	out, errOut, err := run("dev", "up", "--name", "two", "--cluster-provider", "k3d", "--control-plane", "kubernetes", "--cluster-name", two.K3d().ClusterName,
		"--pin-file", b.pinFile, "--openshell-archive", b.archive, "--gateway-endpoint", two.GatewayEndpoint, "--startup-timeout", "3m", "--engine", string(b.kind))
	if err != nil {
		t.Fatalf("occ dev up --name two: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	lap("up --name two")
	if !strings.Contains(out, twoDir) {
		t.Errorf("up --name two does not name its state directory %s:\n%s", twoDir, out)
	}

	doc := listEnvironments(t, run, "one", "two")
	for i, want := range []struct{ name, dir, cluster string }{{"one", oneDir, one.K3d().ClusterName}, {"two", twoDir, two.K3d().ClusterName}} {
		e := doc.Environments[i]
		if e.Name != want.name || e.StateDirectory != want.dir || e.Cluster != want.cluster || e.Engine != b.kind || e.Profile != "kubernetes" || e.Health != observe.HealthHealthy {
			t.Errorf("list entry %d = %+v, want %s in %s with cluster %s on %s, healthy", i, e, want.name, want.dir, want.cluster, b.kind)
		}
	}
	lap("list -o json")
	table, _, err := run("dev", "list")
	t.Logf("occ dev list:\n%s", table)
	if err != nil || !strings.Contains(table, one.K3d().ClusterName) || !strings.Contains(table, two.K3d().ClusterName) {
		t.Errorf("list table lacks a cluster (%v):\n%s", err, table)
	}

	// Each down leaves the other: its cluster's containers, its record, its health.
	twoContainers := b.containerIDs(t, two.K3d().ClusterName)
	if out, errOut, err := run("dev", "down", "--name", "one"); err != nil {
		t.Fatalf("occ dev down --name one: %v\n%s\n%s", err, out, errOut)
	}
	lap("down --name one")
	if !stateGone(oneDir) || len(b.containerIDs(t, one.K3d().ClusterName)) != 0 {
		t.Fatalf("down --name one left its state or containers")
	}
	if got := b.containerIDs(t, two.K3d().ClusterName); !slices.Equal(got, twoContainers) {
		t.Errorf("two's containers after one's down: %v, want %v", got, twoContainers)
	}
	st, err := occdev.GetStatus(context.Background(), occdev.StatusOptions{Environment: "two"})
	if err != nil || st.StateDirectory != twoDir || st.ClusterState != observe.ClusterExists || !st.Reachable || st.Unknown() != 0 {
		t.Fatalf("two after one's down: %+v (%v), want its cluster there and answering", st, err)
	}
	if _, err := occdev.Down(context.Background(), occdev.DownOptions{Environment: "two"}); err != nil {
		t.Fatalf("down of environment two: %v", err)
	}
	lap("down of two")
	if !stateGone(twoDir) || len(b.containerIDs(t, two.K3d().ClusterName)) != 0 {
		t.Fatalf("down of two left its state or containers")
	}
	if _, err := os.Stat(filepath.Dir(twoDir)); err != nil {
		t.Logf("the environments' directory: %v", err)
	}
}

// listEnvironments runs `occ dev list -o json` through run and requires it to list exactly the
// two environments named.
func listEnvironments(t *testing.T, run func(args ...string) (string, string, error), one, two string) (doc struct{ Environments []observe.Environment }) {
	t.Helper()
	out, errOut, err := run("dev", "list", "-o", "json")
	if err != nil {
		t.Fatalf("occ dev list: %v\n%s", err, errOut)
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("list -o json: %v\n%s", err, out)
	}
	if len(doc.Environments) != 2 {
		t.Fatalf("list shows %d environments, want %s and %s:\n%s", len(doc.Environments), one, two, out)
	}
	return doc
}
