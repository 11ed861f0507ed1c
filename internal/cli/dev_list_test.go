package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/occdev/observe"
	"github.com/openclaw/occ/internal/occdev/state"
)

// isolateEnvironments gives the dev commands a fresh default state location and no variable
// that selects an environment.
func isolateEnvironments(t *testing.T) string {
	t.Helper()
	dir := isolate(t)
	for _, k := range []string{state.EnvDirectory, state.EnvEnvironment} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state-home"))
	return dir
}

// recordEnvironment writes the record of environment name as an `up` killed before it reached
// a cluster leaves it.
func recordEnvironment(t *testing.T, name string) string {
	t.Helper()
	dir, err := state.EnvironmentDir(name)
	if err != nil {
		t.Fatal(err)
	}
	d, err := state.Create(dir, state.State{Environment: name, Profile: "kubernetes", Cluster: state.Cluster{Provider: "existing"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// An engineer with nothing up asks what exists: the list is empty and says how to make one; a
// script gets an empty array, never null.
func TestDevListEmpty(t *testing.T) {
	isolateEnvironments(t)
	code, out, errOut := run(t, "dev", "list")
	if code != 0 || !strings.Contains(out, "occ dev up --name NAME") {
		t.Fatalf("exit %d, stdout %q, stderr %q: want the way to create one", code, out, errOut)
	}
	code, out, _ = run(t, "dev", "list", "-o", "json")
	if code != 0 || !strings.Contains(out, `"environments": []`) {
		t.Fatalf("exit %d, stdout %q: want an empty array", code, out)
	}
}

// An engineer with two worktrees has the default environment and feature-x: the list shows both
// with their profile, cluster provider's cluster and health, one line each, and why an unhealthy
// one is not well; the JSON document carries the same.
func TestDevListShowsEachEnvironment(t *testing.T) {
	isolateEnvironments(t)
	defDir := recordEnvironment(t, "default")
	featDir := recordEnvironment(t, "feature-x")
	code, out, errOut := run(t, "dev", "list")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "NAME") {
		t.Fatalf("want a header, two rows and a problem line each:\n%s", out)
	}
	for i, name := range []string{"default", "feature-x"} {
		if f := strings.Fields(lines[1+i]); len(f) != 6 || f[0] != name || f[1] != "kubernetes" || f[5] != observe.HealthUnknown {
			t.Fatalf("row %d = %q, want %s, its profile and health unknown", i, lines[1+i], name)
		}
		if !strings.HasPrefix(lines[3+i], name+": no cluster recorded yet") {
			t.Fatalf("problem line %q, want why %s's health is unknown", lines[3+i], name)
		}
	}
	code, out, errOut = run(t, "dev", "list", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var doc struct{ Environments []observe.Environment }
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(doc.Environments) != 2 || doc.Environments[0].StateDirectory != defDir || doc.Environments[1].StateDirectory != featDir ||
		doc.Environments[1].ClusterProvider != "existing" || doc.Environments[1].Health != observe.HealthUnknown {
		t.Fatalf("environments = %+v", doc.Environments)
	}
}

// Every dev command reaches the environment --name names, over OCC_DEVELOPMENT_ENVIRONMENT; a
// --state-dir wins over both, and a name given beside it that is not the recorded one is refused
// (a usage error) rather than acting on another environment.
func TestDevNameSelectsTheEnvironment(t *testing.T) {
	isolateEnvironments(t)
	aDir := recordEnvironment(t, "a")
	bDir := recordEnvironment(t, "b")
	status := func(env string, args ...string) (int, observe.Status, string) {
		t.Helper()
		t.Setenv(state.EnvEnvironment, env)
		code, out, errOut := run(t, append([]string{"dev", "status", "-o", "json"}, args...)...)
		var st observe.Status
		if code == 0 {
			if err := json.Unmarshal([]byte(out), &st); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, out)
			}
		}
		return code, st, errOut
	}
	if _, st, _ := status("a"); st.StateDirectory != aDir || st.Environment != "a" {
		t.Fatalf("variable a: status of %s (%s)", st.StateDirectory, st.Environment)
	}
	if _, st, _ := status("a", "--name", "b"); st.StateDirectory != bDir || st.Environment != "b" {
		t.Fatalf("--name b over variable a: status of %s (%s)", st.StateDirectory, st.Environment)
	}
	if _, st, _ := status("", "--state-dir", aDir); st.StateDirectory != aDir || st.Environment != "a" {
		t.Fatalf("--state-dir alone: status of %s (%s)", st.StateDirectory, st.Environment)
	}
	code, _, errOut := status("", "--state-dir", aDir, "--name", "b")
	if code != 2 || !strings.Contains(errOut, `"b"`) || !strings.Contains(errOut, `records "a"`) {
		t.Fatalf("--state-dir of a with --name b: exit %d, stderr %q; want a usage error naming both", code, errOut)
	}
	code, _, errOut = status("", "--name", "B")
	if code != 2 || !strings.Contains(errOut, "--name") || !strings.Contains(errOut, "lower-case") {
		t.Fatalf("--name B: exit %d, stderr %q; want the rule", code, errOut)
	}
	// down of b leaves a: its record is untouched.
	t.Setenv(state.EnvEnvironment, "")
	if code, _, errOut := run(t, "dev", "down", "--name", "b"); code != 0 {
		t.Fatalf("down --name b: exit %d, stderr %q", code, errOut)
	}
	if _, err := os.Stat(bDir); !os.IsNotExist(err) {
		t.Fatalf("b's state directory after its down: %v", err)
	}
	if _, err := state.Read(aDir); err != nil {
		t.Fatalf("a's record after b's down: %v", err)
	}
	for name, cmd := range devCommandFlags {
		c := &cobra.Command{Use: name}
		cmd(c)
		if c.Flags().Lookup("name") == nil {
			t.Errorf("occ dev %s has no --name", name)
		}
	}
}
