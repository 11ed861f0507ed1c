package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// run executes occ in-process with captured streams and an isolated config home.
func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Execute(context.Background(), args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

func isolate(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	// t.Setenv restores the caller's value afterwards; the variable itself must be absent.
	t.Setenv("OCC_OUTPUT", "")
	os.Unsetenv("OCC_OUTPUT")
	return dir
}

// A script reads the version as JSON.
func TestVersionJSON(t *testing.T) {
	isolate(t)
	code, out, errOut := run(t, "version", "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var v VersionInfo
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("version -o json is not JSON: %v\n%s", err, out)
	}
	if v.Version == "" || !strings.HasPrefix(v.GoVersion, "go") || v.Commit == "" {
		t.Fatalf("incomplete version info: %+v", v)
	}
}

// Mistyped commands, flags, argument counts and output formats are usage errors (exit 2).
func TestUsageErrorsExitTwo(t *testing.T) {
	isolate(t)
	for _, args := range [][]string{
		{"no-such-command"},
		{"version", "--no-such-flag"},
		{"version", "extra"},
		{"version", "-o", "xml"},
		{"completion", "powershell"},
	} {
		code, _, errOut := run(t, args...)
		if code != 2 {
			t.Errorf("occ %s: exit %d, want 2 (stderr %q)", strings.Join(args, " "), code, errOut)
		}
		if !strings.HasPrefix(errOut, "Error: ") {
			t.Errorf("occ %s: stderr %q does not start with Error:", strings.Join(args, " "), errOut)
		}
	}
}

// The output format resolves flag > OCC_OUTPUT > config file.
func TestSettingsPrecedence(t *testing.T) {
	dir := isolate(t)
	if err := os.MkdirAll(filepath.Join(dir, "occ"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "occ", "config.yaml"), []byte("output: yaml\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, out, _ := run(t, "version"); !strings.Contains(out, "goVersion: ") {
		t.Fatalf("config file output: yaml not applied: %q", out)
	}
	t.Setenv("OCC_OUTPUT", "json")
	if _, out, _ := run(t, "version"); !strings.HasPrefix(out, "{") {
		t.Fatalf("OCC_OUTPUT=json did not win over the config file: %q", out)
	}
	if _, out, _ := run(t, "version", "-o", "table"); !strings.HasPrefix(out, "occ ") {
		t.Fatalf("-o table did not win over OCC_OUTPUT: %q", out)
	}
}

// A broken config file is reported with its path, not ignored.
func TestBrokenConfigFileNamed(t *testing.T) {
	dir := isolate(t)
	path := filepath.Join(dir, "occ", "config.yaml")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("output: [unterminated\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := run(t, "version")
	if code != 1 || !strings.Contains(errOut, path) {
		t.Fatalf("exit %d, stderr %q: want 1 naming %s", code, errOut, path)
	}
}

// Completion scripts are produced for the three supported shells.
func TestCompletion(t *testing.T) {
	isolate(t)
	for _, shell := range []string{"bash", "zsh", "fish"} {
		code, out, errOut := run(t, "completion", shell)
		if code != 0 || !strings.Contains(out, "occ") {
			t.Errorf("completion %s: exit %d, %d bytes, stderr %q", shell, code, len(out), errOut)
		}
	}
}
