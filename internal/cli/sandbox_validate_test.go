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

const installationFixtures = "../../testdata/installation"

// runWithStdin executes occ in-process with stdin as the standard input.
func runWithStdin(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Execute(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// fixtureHeader returns the values of the "# key: value" header lines of an invalid fixture.
func fixtureHeader(data []byte, key string) []string {
	var vals []string
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "# ") {
			break
		}
		if k, v, ok := strings.Cut(strings.TrimPrefix(line, "# "), ": "); ok && k == key {
			vals = append(vals, v)
		}
	}
	return vals
}

// An engineer checks the development Installation before bringing the stack up.
func TestSandboxValidateDevInstallation(t *testing.T) {
	isolate(t)
	code, out, errOut := runWithStdin(t, "", "sandbox", "validate", filepath.Join(installationFixtures, "dev.yaml"))
	if code != 0 {
		t.Fatalf("exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if strings.Count(out, "\n") != 1 || !strings.Contains(out, "is valid: backend openshell (http://k3d-occ-dev-server-0:30051)") ||
		!strings.Contains(out, "workspace mode operator, 1 network policy") {
		t.Errorf("summary line = %q", out)
	}
	if errOut != "" {
		t.Errorf("stderr = %q, want nothing", errOut)
	}
}

// A script validates a valid Installation from a pipe and gets an empty JSON problem list.
func TestSandboxValidateStdinJSON(t *testing.T) {
	isolate(t)
	data, err := os.ReadFile(filepath.Join(installationFixtures, "dev.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runWithStdin(t, string(data), "sandbox", "validate", "-", "-o", "json")
	if code != 0 || strings.TrimSpace(out) != "[]" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and []", code, out, errOut)
	}
}

// Every invalid fixture exits 1 and prints its expected message; no Secret value is printed
// in table or JSON form.
func TestSandboxValidateInvalidFixtures(t *testing.T) {
	isolate(t)
	files, _ := filepath.Glob(filepath.Join(installationFixtures, "invalid", "*.yaml"))
	if len(files) < 60 {
		t.Fatalf("%d invalid fixtures, want at least 60", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			code, out, errOut := runWithStdin(t, "", "sandbox", "validate", f)
			if code != 1 {
				t.Fatalf("exit %d, want 1\nstdout %s\nstderr %s", code, out, errOut)
			}
			if strings.Contains(errOut, "Error: exit status") {
				t.Errorf("stderr repeats the exit status: %q", errOut)
			}
			path := fixtureHeader(data, "path")[0]
			for _, e := range fixtureHeader(data, "expect") {
				if !strings.Contains(errOut, path) || !strings.Contains(errOut, e) {
					t.Errorf("stderr lacks path %q or message %q:\n%s", path, e, errOut)
				}
			}

			jcode, jout, jerr := runWithStdin(t, "", "sandbox", "validate", "-o", "json", f)
			if jcode != 1 {
				t.Fatalf("-o json: exit %d, want 1 (stderr %q)", jcode, jerr)
			}
			var problems []struct{ Path, Value, Message string }
			if err := json.Unmarshal([]byte(jout), &problems); err != nil || len(problems) == 0 {
				t.Fatalf("-o json output is not a problem list (%v):\n%s", err, jout)
			}
			found := false
			for _, p := range problems {
				found = found || p.Path == path
			}
			if !found {
				t.Errorf("-o json has no problem at %s:\n%s", path, jout)
			}

			for _, canary := range fixtureHeader(data, "canary") {
				for _, s := range []string{out, errOut, jout, jerr} {
					if strings.Contains(s, canary) {
						t.Errorf("the Secret canary %q was printed:\n%s", canary, s)
					}
				}
			}
		})
	}
}

// A missing file is an ordinary error naming the file, and a missing argument a usage error.
func TestSandboxValidateFileErrors(t *testing.T) {
	isolate(t)
	code, _, errOut := runWithStdin(t, "", "sandbox", "validate", "/nonexistent/installation.yaml")
	if code != 1 || !strings.Contains(errOut, "read Installation /nonexistent/installation.yaml") {
		t.Errorf("missing file: exit %d, stderr %q", code, errOut)
	}
	if code, _, errOut := runWithStdin(t, "", "sandbox", "validate"); code != 2 {
		t.Errorf("no argument: exit %d, want 2 (stderr %q)", code, errOut)
	}
}
