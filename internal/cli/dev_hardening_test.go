package cli

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/observe"
	"github.com/openclaw/occ/internal/occdev/occdevtest"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/testbed"
)

// A new user previews `occ dev up` with settings that cannot work: a missing kubeconfig or
// context, or a Docker engine that is not running, is listed as a problem after the plan
// (exit 1, saying what to start), and a missing pin file, a malformed or credentialed
// --gateway-endpoint, a kubeconfig context given to the k3d provider or a remote DOCKER_HOST
// is a usage error (exit 2) naming the setting, the value and the rule; the password of a
// credentialed endpoint appears nowhere. None of them creates anything.
func TestDevUpDryRunReportsProblems(t *testing.T) {
	dir := isolateDev(t)
	stateDir := filepath.Join(dir, "dev-state")
	kubeconfig := testbed.Kubeconfig(t)
	const canary = "CANARY-hunter2-9c1f"
	cases := []struct {
		name    string
		env     map[string]string
		args    []string
		code    int
		stdout  []string
		stderr  []string
		nowhere string
	}{
		{name: "missing kubeconfig", args: []string{"--kubeconfig", filepath.Join(dir, "absent-kubeconfig")}, code: 1,
			stdout: []string{"would run 18 steps", "Problems (occ dev up would stop at these before creating anything):", "absent-kubeconfig: no such file or directory"},
			stderr: []string{"the dry run found 1 problem(s)"}},
		{name: "missing context", args: []string{"--kubeconfig", kubeconfig, "--context", "no-such-context"}, code: 1,
			stdout: []string{`has no context "no-such-context": pass an existing --context`}},
		{name: "missing pin file", args: []string{"--kubeconfig", kubeconfig, "--pin-file", filepath.Join(dir, "absent-pins.yaml")}, code: 2,
			stderr: []string{`--pin-file "` + filepath.Join(dir, "absent-pins.yaml") + `" does not exist`}},
		{name: "malformed gateway endpoint", args: []string{"--kubeconfig", kubeconfig, "--gateway-endpoint", "gateway:http"}, code: 2,
			stderr: []string{`--gateway-endpoint "gateway:http" port must be 1 to 65535`}},
		{name: "gateway endpoint with a scheme but no host", args: []string{"--kubeconfig", kubeconfig, "--gateway-endpoint", "http://"}, code: 2,
			stderr: []string{`"http://" must name a host`}},
		{name: "credentialed gateway endpoint", args: []string{"--kubeconfig", kubeconfig, "--gateway-endpoint", "http://admin:" + canary + "@127.0.0.1:30051"}, code: 2,
			stderr: []string{`"http://REDACTED@127.0.0.1:30051" must not carry credentials`}, nowhere: canary},
		{name: "credentialed host:port", args: []string{"--kubeconfig", kubeconfig, "--gateway-endpoint", "admin:" + canary + "@gw:30051"}, code: 2,
			stderr: []string{`"REDACTED@gw:30051" must not carry credentials`}, nowhere: canary},
		{name: "credentialed gateway endpoint with the k3d provider", args: []string{"--cluster-provider", "k3d", "--gateway-endpoint", "https://" + canary + "@127.0.0.1:30051/x"}, code: 2,
			stderr: []string{`"https://REDACTED@127.0.0.1:30051/x" must not carry credentials`}, nowhere: canary},
		{name: "the k3d provider with a context of the kubeconfig", args: []string{"--cluster-provider", "k3d", "--context", "kind-dev"}, code: 2,
			stderr: []string{`--context "kind-dev" selects an existing cluster, but --cluster-provider k3d creates its own`, "use --cluster-provider existing"}},
		{name: "a remote Docker engine", env: map[string]string{"DOCKER_HOST": "tcp://10.0.0.5:2376"}, args: []string{"--cluster-provider", "k3d"}, code: 2,
			stderr: []string{`DOCKER_HOST "tcp://10.0.0.5:2376" is not a local unix socket`, "set DOCKER_HOST=unix:///path/to/docker.sock"}},
		{name: "no Docker engine running", env: map[string]string{"DOCKER_HOST": "unix://" + filepath.Join(dir, "no-docker.sock")}, args: []string{"--cluster-provider", "k3d"}, code: 1,
			stdout: []string{"no usable container engine (Docker or Podman) for --engine auto; looked at:", "Docker at unix://" + filepath.Join(dir, "no-docker.sock") + " (from DOCKER_HOST): the socket", "does not exist; start the engine DOCKER_HOST names, or unset DOCKER_HOST", "Podman at "}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			code, out, errOut := run(t, append([]string{"dev", "up", "--dry-run", "--state-dir", stateDir}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", code, tc.code, out, errOut)
			}
			for _, w := range tc.stdout {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.stderr {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
			if tc.nowhere != "" && (strings.Contains(out, tc.nowhere) || strings.Contains(errOut, tc.nowhere)) {
				t.Errorf("the endpoint's password was echoed:\n%s\n%s", out, errOut)
			}
			for _, p := range []string{stateDir, filepath.Join(dir, "cache-home")} {
				if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("the dry run created %s", p)
				}
			}
		})
	}
}

// A script reads the JSON documents of the three commands: the dry run's startup timeout is a
// duration and a step that creates nothing says so in a note beside an empty list; status with
// nothing up still prints a document saying so (exit 0); down of nothing lists no removals as
// [] rather than null.
func TestDevJSONDocuments(t *testing.T) {
	dir := isolateDev(t)
	stateDir := filepath.Join(dir, "dev-state")
	code, out, errOut := run(t, "dev", "up", "--dry-run", "-o", "json", "--state-dir", stateDir, "--kubeconfig", testbed.Kubeconfig(t))
	if code != 0 {
		t.Fatalf("dry run: exit %d, stderr %s", code, errOut)
	}
	var raw struct {
		Plan  map[string]any `json:"plan"`
		Steps []struct {
			Name    string    `json:"name"`
			Creates *[]string `json:"creates"`
			Note    string    `json:"note"`
		} `json:"steps"`
		Problems *[]string `json:"problems"`
	}
	if err := json.Unmarshal([]byte(out), &raw); err != nil {
		t.Fatal(err)
	}
	if raw.Plan["startupTimeout"] != "10m0s" {
		t.Errorf("plan.startupTimeout = %#v, want \"10m0s\"", raw.Plan["startupTimeout"])
	}
	if raw.Problems == nil || len(*raw.Problems) != 0 {
		t.Errorf("problems = %v, want []", raw.Problems)
	}
	notes := 0
	for _, s := range raw.Steps {
		if s.Creates == nil {
			t.Errorf("step %q: creates is null or missing", s.Name)
			continue
		}
		for _, c := range *s.Creates {
			if strings.HasPrefix(c, "nothing") {
				t.Errorf("step %q lists %q among what it creates; that is a note", s.Name, c)
			}
		}
		if s.Note != "" {
			notes++
			if len(*s.Creates) != 0 {
				t.Errorf("step %q has a note and creates %v", s.Name, *s.Creates)
			}
		}
	}
	if notes < 3 {
		t.Errorf("only %d steps carry a note; the checks, waits and Health call do", notes)
	}

	code, out, errOut = run(t, "dev", "status", "-o", "json", "--state-dir", stateDir)
	if code != 0 {
		t.Fatalf("status without state: exit %d, stderr %s", code, errOut)
	}
	var st observe.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status without state printed no document: %v\n%q", err, out)
	}
	if st.Recorded || st.StateDirectory != stateDir || !strings.Contains(st.Note, "nothing is up") || st.Objects == nil {
		t.Errorf("status without state: %+v", st)
	}
	code, table, _ := run(t, "dev", "status", "--state-dir", stateDir)
	if code != 0 || !strings.Contains(table, "No development state at "+stateDir) {
		t.Errorf("status table without state: exit %d\n%s", code, table)
	}

	code, out, errOut = run(t, "dev", "down", "-o", "json", "--state-dir", stateDir)
	if code != 0 {
		t.Fatalf("down without state: exit %d, stderr %s", code, errOut)
	}
	if !strings.Contains(out, `"removed": []`) || !strings.Contains(out, `"leftAlone": []`) || strings.Contains(out, "null") {
		t.Errorf("down -o json:\n%s", out)
	}
}

// kubectl habits work: -n is --namespace, every occ dev command's help has examples, and the
// shell completes --control-plane and --cluster-provider values.
func TestDevCommandConventions(t *testing.T) {
	dir := isolateDev(t)
	code, out, errOut := run(t, "dev", "up", "--dry-run", "-o", "json", "-n", "my-platform", "--state-dir", filepath.Join(dir, "s"), "--kubeconfig", testbed.Kubeconfig(t))
	if code != 0 {
		t.Fatalf("-n: exit %d, stderr %s", code, errOut)
	}
	var dr occdev.DryRun
	if err := json.Unmarshal([]byte(out), &dr); err != nil || dr.Plan.Namespace != "my-platform" {
		t.Errorf("-n my-platform: namespace %q (%v)", dr.Plan.Namespace, err)
	}
	for _, cmd := range [][]string{{"dev"}, {"dev", "up"}, {"dev", "down"}, {"dev", "status"}} {
		code, out, _ := run(t, append(cmd, "--help")...)
		if code != 0 || !strings.Contains(out, "Examples:\n  occ dev") && !strings.Contains(out, "Examples:\n  # ") {
			t.Errorf("%s --help has no Examples section:\n%s", strings.Join(cmd, " "), out)
		}
	}
	for flag, want := range map[string][]string{"--control-plane": {"compose", "kubernetes"}, "--cluster-provider": {"existing", "k3d"}} {
		code, out, errOut := run(t, "__complete", "dev", "up", flag, "")
		if code != 0 {
			t.Fatalf("complete %s: exit %d, stderr %s", flag, code, errOut)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != len(want)+1 || strings.Join(lines[:len(want)], ",") != strings.Join(want, ",") || lines[len(want)] != ":4" {
			t.Errorf("completion of %s: %q, want %q then the no-file directive", flag, lines, want)
		}
	}
}

// The developer's cluster is stopped after `up`: `occ dev status` shows every object as
// unknown with the refused connection, never as missing, and exits 1.
func TestDevStatusOfStoppedClusterExitsNonZero(t *testing.T) {
	b := occdevtest.New(t)
	isolateDev(t)
	kubeconfig := b.CopyKubeconfig()
	live, err := os.ReadFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	opts := b.Options()
	opts.Kubeconfig = kubeconfig
	if _, err := occdev.Up(context.Background(), opts); err != nil {
		t.Fatalf("up: %v", err)
	}
	occdevtest.PointKubeconfig(t, kubeconfig, occdevtest.DeadServer(t))
	code, out, errOut := run(t, "dev", "status", "--state-dir", b.StateDir)
	if code != 1 || !strings.Contains(errOut, "is unknown") || !strings.Contains(errOut, "connection refused") {
		t.Errorf("status of a stopped cluster: exit %d, stderr %s", code, errOut)
	}
	if strings.Contains(out, "missing") || !strings.Contains(out, "unknown") || !strings.Contains(out, "not reachable") {
		t.Errorf("status table of a stopped cluster:\n%s", out)
	}
	if err := os.WriteFile(kubeconfig, live, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := run(t, "dev", "down", "--state-dir", b.StateDir); code != 0 {
		t.Fatalf("down: exit %d, %s", code, errOut)
	}
}

// The developer previews `up` on a state directory that already records an environment: the
// dry run says `up` would refuse it and names the down command, and leaves the record as it was.
func TestDevUpDryRunReportsARecordedEnvironment(t *testing.T) {
	dir := isolateDev(t)
	stateDir := filepath.Join(dir, "dev-state")
	d, err := state.Create(stateDir, state.State{Profile: "kubernetes", Cluster: state.Cluster{Provider: "existing"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(filepath.Join(stateDir, state.FileName))
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ := run(t, "dev", "up", "--dry-run", "--state-dir", stateDir, "--kubeconfig", testbed.Kubeconfig(t))
	if code != 1 || !strings.Contains(out, stateDir+" already records a development environment") || !strings.Contains(out, "dev down --state-dir "+stateDir) {
		t.Fatalf("dry run over a recorded environment: exit %d\n%s", code, out)
	}
	if after, err := os.ReadFile(filepath.Join(stateDir, state.FileName)); err != nil || string(after) != string(before) {
		t.Fatalf("the dry run changed the record: %v", err)
	}
}
