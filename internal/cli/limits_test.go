package cli

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runStdin is run with stdin.
func runStdin(t *testing.T, stdin []byte, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Execute(context.Background(), args, bytes.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

// A new user mistypes settings and inputs: a bad gateway-emulator flag value, --harness next to
// --revision, a dev setting outside its documented range are usage errors (exit 2) naming the
// setting; an input far larger than an Installation (a huge file) is refused with a clear error
// instead of exhausting memory; and --installation - reads standard input for every command,
// as validate - does.
func TestUsageErrorsAndInputLimits(t *testing.T) {
	dir := isolate(t)
	for _, k := range []string{"OCC_DEVELOPMENT_KUBERNETES_API_PORT", "OCC_DEVELOPMENT_KUBERNETES_DISK_THRESHOLD_PERCENT", "OCC_DEVELOPMENT_STARTUP_TIMEOUT_SECONDS"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(unreachableKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	inst := "../../testdata/installation/dev.yaml"
	rev := "../../testdata/revisions/codex.yaml"
	dryRun := func(args ...string) []string {
		return append([]string{"dev", "up", "--dry-run", "--cluster-provider", "existing", "--kubeconfig", kubeconfig,
			"--state-dir", filepath.Join(dir, "state")}, args...)
	}
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"emulator listens beyond loopback", nil, []string{"gateway-emulator", "--listen", "0.0.0.0:17670"}, "not a loopback address"},
		{"emulator listen without a port", nil, []string{"gateway-emulator", "--listen", "localhost"}, "missing port"},
		{"emulator negative admission limit", nil, []string{"gateway-emulator", "--admission-limit", "-3"}, "--admission-limit -3"},
		{"emulator certificate without key", nil, []string{"gateway-emulator", "--tls-cert", "/nonexistent.pem"}, "--tls-cert and --tls-key go together"},
		{"harness with revision", nil, []string{"sandbox", "configure-agent", "--installation", inst, "--revision", rev, "--harness", "openclaw"}, "--harness"},
		{"harness mode with revision", nil, []string{"sandbox", "configure-agent", "--installation", inst, "--revision", rev, "--harness-mode", "embedded"}, "--harness-mode"},
		{"disk threshold 0", nil, dryRun("--disk-threshold-percent", "0"), "--disk-threshold-percent"},
		{"disk threshold 0 from the environment", map[string]string{"OCC_DEVELOPMENT_KUBERNETES_DISK_THRESHOLD_PERCENT": "0"}, dryRun(), "OCC_DEVELOPMENT_KUBERNETES_DISK_THRESHOLD_PERCENT"},
		{"startup timeout 0", nil, dryRun("--startup-timeout", "0"), "--startup-timeout"},
		{"startup timeout 0s", nil, dryRun("--startup-timeout", "0s"), "--startup-timeout"},
		{"API port 0", nil, dryRun("--api-port", "0"), "--api-port"},
		{"API port 0 from the environment", map[string]string{"OCC_DEVELOPMENT_KUBERNETES_API_PORT": "0"}, dryRun(), "OCC_DEVELOPMENT_KUBERNETES_API_PORT"},
	} {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			code, out, errOut := run(t, c.args...)
			if code != 2 || !strings.Contains(errOut, c.want) {
				t.Errorf("exit %d, want 2 naming %q\nstdout %s\nstderr %s", code, c.want, out, errOut)
			}
		})
	}

	// A regular file far larger than any input occ takes (sparse: it costs no disk).
	huge := filepath.Join(dir, "huge.yaml")
	if f, err := os.Create(huge); err != nil {
		t.Fatal(err)
	} else if err := f.Truncate(64 << 20); err != nil {
		t.Fatal(err)
	} else {
		f.Close()
	}
	t.Run("validate a huge file", func(t *testing.T) {
		code, out, errOut := run(t, "sandbox", "validate", huge)
		if code != 1 || !strings.Contains(errOut, "larger than") || strings.Contains(errOut, "goroutine") {
			t.Errorf("exit %d, want 1 with a size refusal\nstdout %s\nstderr %s", code, out, errOut)
		}
	})
	t.Run("render --installation a huge file", func(t *testing.T) {
		code, _, errOut := run(t, "sandbox", "render", "--installation", huge, "--revision", rev)
		if code != 1 || !strings.Contains(errOut, "larger than") {
			t.Errorf("exit %d, want 1 with a size refusal\nstderr %s", code, errOut)
		}
	})
	t.Run("configure-agent --configuration a huge file", func(t *testing.T) {
		code, _, errOut := run(t, "sandbox", "configure-agent", "--installation", inst, "--configuration", huge, "--harness", "codex")
		if code != 1 || !strings.Contains(errOut, "larger than") {
			t.Errorf("exit %d, want 1 with a size refusal\nstderr %s", code, errOut)
		}
	})
	t.Run("emulator port taken", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		// A port another process holds is an operation that failed, not a usage error.
		code, _, errOut := run(t, "gateway-emulator", "--listen", l.Addr().String())
		if code != 1 || !strings.Contains(errOut, "address already in use") {
			t.Errorf("exit %d, want 1\nstderr %s", code, errOut)
		}
	})
	t.Run("render --installation -", func(t *testing.T) {
		data, err := os.ReadFile(inst)
		if err != nil {
			t.Fatal(err)
		}
		code, out, errOut := runStdin(t, data, "sandbox", "render", "--installation", "-", "--revision", rev)
		if code != 0 || !strings.Contains(out, `"request_id"`) {
			t.Errorf("exit %d, want the request rendered from standard input\nstdout %s\nstderr %s", code, out, errOut)
		}
	})
}
