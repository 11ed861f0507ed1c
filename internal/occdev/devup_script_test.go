package occdev_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// scriptBed copies scripts/dev-up into a fresh checkout layout whose bin/occ is a fake that
// records its arguments, so the script is tested exactly as committed.
func scriptBed(t *testing.T, withBinOCC bool) (script, argsFile string) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "scripts", "dev-up"))
	if err != nil {
		t.Fatalf("read scripts/dev-up: %v", err)
	}
	root := t.TempDir()
	for _, d := range []string{"scripts", "bin"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script = filepath.Join(root, "scripts", "dev-up")
	if err := os.WriteFile(script, src, 0o755); err != nil {
		t.Fatal(err)
	}
	argsFile = filepath.Join(root, "occ-args")
	fake := "#!/bin/sh\nprintf '%s\\n' \"$0\" \"$@\" > '" + argsFile + "'\n"
	if withBinOCC {
		if err := os.WriteFile(filepath.Join(root, "bin", "occ"), []byte(fake), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return script, argsFile
}

func runScript(t *testing.T, script string, env map[string]string, path string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{script}, args...)...)
	cmd.Env = []string{"PATH=" + path, "HOME=" + t.TempDir()}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), stderr.String()
	}
	if err != nil {
		t.Fatalf("run %s: %v", script, err)
	}
	return 0, stderr.String()
}

// A developer runs scripts/dev-up with each combination of the three driver variables, and
// with none of them: the defaults and the valid ones reach `occ dev up` with the arguments
// intact, explicit invalid ones stop with the reference's message and exit 2 before occ runs.
func TestDevUpScriptValidatesTheDriverCombination(t *testing.T) {
	const sysPath = "/usr/bin:/bin"
	cases := []struct {
		name    string
		env     map[string]string
		code    int
		message string
	}{
		{name: "defaults are the supported combination", env: nil},
		{name: "kubernetes with openshell", env: map[string]string{"OCC_DEVELOPMENT_COMPUTE_DRIVER": "kubernetes", "OCC_DEVELOPMENT_SANDBOX_DRIVER": "openshell"}},
		{name: "kubernetes-only control plane", env: map[string]string{"OCC_DEVELOPMENT_COMPUTE_DRIVER": "kubernetes", "OCC_DEVELOPMENT_SANDBOX_DRIVER": "openshell", "OCC_DEVELOPMENT_CONTROL_PLANE": "kubernetes"}},
		{name: "compose control plane", env: map[string]string{"OCC_DEVELOPMENT_COMPUTE_DRIVER": "kubernetes", "OCC_DEVELOPMENT_SANDBOX_DRIVER": "openshell", "OCC_DEVELOPMENT_CONTROL_PLANE": "compose"}},
		{name: "kubernetes compute alone gets the openshell sandbox", env: map[string]string{"OCC_DEVELOPMENT_COMPUTE_DRIVER": "kubernetes"}},
		{name: "openshell alone gets kubernetes compute", env: map[string]string{"OCC_DEVELOPMENT_SANDBOX_DRIVER": "openshell"}},
		{name: "kubernetes compute without a sandbox", env: map[string]string{"OCC_DEVELOPMENT_COMPUTE_DRIVER": "kubernetes", "OCC_DEVELOPMENT_SANDBOX_DRIVER": "none"}, code: 2,
			message: "dev-up: configuration failed: occ dev up supports only OCC_DEVELOPMENT_COMPUTE_DRIVER=kubernetes with OCC_DEVELOPMENT_SANDBOX_DRIVER=openshell (got kubernetes with none); set both"},
		{name: "docker compute alone", env: map[string]string{"OCC_DEVELOPMENT_COMPUTE_DRIVER": "docker"}, code: 2,
			message: "dev-up: configuration failed: occ dev up supports only OCC_DEVELOPMENT_COMPUTE_DRIVER=kubernetes with OCC_DEVELOPMENT_SANDBOX_DRIVER=openshell (got docker with none); set both"},
		{name: "unknown sandbox driver", env: map[string]string{"OCC_DEVELOPMENT_SANDBOX_DRIVER": "gvisor"}, code: 2,
			message: "dev-up: configuration failed: OCC_DEVELOPMENT_SANDBOX_DRIVER must be none or openshell"},
		{name: "unknown control plane", env: map[string]string{"OCC_DEVELOPMENT_CONTROL_PLANE": "swarm"}, code: 2,
			message: "dev-up: configuration failed: OCC_DEVELOPMENT_CONTROL_PLANE must be compose or kubernetes"},
		{name: "unknown compute driver", env: map[string]string{"OCC_DEVELOPMENT_COMPUTE_DRIVER": "nomad"}, code: 2,
			message: "dev-up: configuration failed: OCC_DEVELOPMENT_COMPUTE_DRIVER must be docker or kubernetes"},
		{name: "openshell on docker compute", env: map[string]string{"OCC_DEVELOPMENT_COMPUTE_DRIVER": "docker", "OCC_DEVELOPMENT_SANDBOX_DRIVER": "openshell"}, code: 2,
			message: "dev-up: configuration failed: OCC_DEVELOPMENT_SANDBOX_DRIVER=openshell requires OCC_DEVELOPMENT_COMPUTE_DRIVER=kubernetes"},
		{name: "kubernetes control plane on docker compute", env: map[string]string{"OCC_DEVELOPMENT_COMPUTE_DRIVER": "docker", "OCC_DEVELOPMENT_CONTROL_PLANE": "kubernetes"}, code: 2,
			message: "dev-up: configuration failed: OCC_DEVELOPMENT_CONTROL_PLANE=kubernetes requires Kubernetes Compute"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			script, argsFile := scriptBed(t, true)
			code, stderr := runScript(t, script, tc.env, sysPath, "--dry-run", "--namespace", "two words")
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, stderr)
			}
			_, statErr := os.Stat(argsFile)
			if tc.code != 0 {
				if strings.TrimSpace(stderr) != tc.message {
					t.Fatalf("stderr %q, want exactly %q", stderr, tc.message)
				}
				if statErr == nil {
					t.Fatal("occ ran although the combination is invalid")
				}
				return
			}
			got, err := os.ReadFile(argsFile)
			if err != nil {
				t.Fatalf("occ was not executed: %v", err)
			}
			lines := strings.Split(strings.TrimSuffix(string(got), "\n"), "\n")
			want := []string{filepath.Join(filepath.Dir(filepath.Dir(script)), "bin", "occ"), "dev", "up", "--dry-run", "--namespace", "two words"}
			if strings.Join(lines, "|") != strings.Join(want, "|") {
				t.Fatalf("occ got argv %q, want %q", lines, want)
			}
		})
	}
}

// A checkout without bin/occ falls back to occ on PATH, and fails clearly when there is none.
func TestDevUpScriptFindsOCC(t *testing.T) {
	script, argsFile := scriptBed(t, false)
	supported := map[string]string{"OCC_DEVELOPMENT_COMPUTE_DRIVER": "kubernetes", "OCC_DEVELOPMENT_SANDBOX_DRIVER": "openshell"}
	code, stderr := runScript(t, script, supported, "/usr/bin:/bin")
	if code != 1 || !strings.Contains(stderr, "occ is required at") || !strings.Contains(stderr, "run make build") {
		t.Fatalf("without any occ: exit %d, stderr %q; want exit 1 naming bin/occ and make build", code, stderr)
	}

	pathDir := t.TempDir()
	fake := "#!/bin/sh\nprintf '%s\\n' \"$0\" \"$@\" > '" + argsFile + "'\n"
	if err := os.WriteFile(filepath.Join(pathDir, "occ"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	code, stderr = runScript(t, script, supported, pathDir+":/usr/bin:/bin", "--dry-run")
	if code != 0 {
		t.Fatalf("with occ on PATH: exit %d, stderr %q", code, stderr)
	}
	got, err := os.ReadFile(argsFile)
	if err != nil || !strings.HasPrefix(string(got), filepath.Join(pathDir, "occ")+"\ndev\nup\n--dry-run") {
		t.Fatalf("occ on PATH not executed with dev up: %q (%v)", got, err)
	}
}

// A CI job whose cache missed the bundle runs scripts/dev-up with OCC_DEVELOPMENT_BUNDLE naming
// where the bundle goes: the script creates it first, then hands over to up (which reads the
// variable); with the bundle restored from the cache, it only runs up.
func TestDevUpScriptCreatesAMissingBundle(t *testing.T) {
	script, argsFile := scriptBed(t, true)
	appending := "#!/bin/sh\nprintf '%s ' \"$@\" >> '" + argsFile + "'\necho >> '" + argsFile + "'\n"
	if err := os.WriteFile(filepath.Join(filepath.Dir(filepath.Dir(script)), "bin", "occ"), []byte(appending), 0o755); err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(t.TempDir(), "occ-bundle.tar")
	env := map[string]string{"OCC_DEVELOPMENT_BUNDLE": bundle}
	if code, stderr := runScript(t, script, env, "/usr/bin:/bin", "--offline"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got, _ := os.ReadFile(argsFile)
	if want := "dev bundle create --out " + bundle + " \ndev up --offline \n"; string(got) != want {
		t.Errorf("calls:\n%s\nwant:\n%s", got, want)
	}
	if err := os.WriteFile(bundle, []byte("restored"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(argsFile); err != nil {
		t.Fatal(err)
	}
	if code, stderr := runScript(t, script, env, "/usr/bin:/bin", "--offline"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got, _ := os.ReadFile(argsFile); string(got) != "dev up --offline \n" {
		t.Errorf("with the bundle restored, calls:\n%s", got)
	}
}
