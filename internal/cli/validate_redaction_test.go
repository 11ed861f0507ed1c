package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// redactionRun executes occ in-process with an isolated configuration and no OCC_OUTPUT, so
// each output format is exactly the one the arguments select.
func redactionRun(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("OCC_OUTPUT", "")
	os.Unsetenv("OCC_OUTPUT")
	var out, errOut bytes.Buffer
	code = Execute(context.Background(), args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// writeInstallationWithEndpoint writes the development Installation with the Backend endpoint
// replaced, and returns its path.
func writeInstallationWithEndpoint(t *testing.T, endpoint string) string {
	t.Helper()
	dev, err := os.ReadFile("../../testdata/installation/dev.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const from = "endpoint: http://k3d-occ-dev-server-0:30051"
	if !bytes.Contains(dev, []byte(from)) {
		t.Fatal("dev.yaml lost its Backend endpoint")
	}
	path := filepath.Join(t.TempDir(), "installation.yaml")
	data := strings.Replace(string(dev), from, "endpoint: \""+endpoint+"\"", 1)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// An engineer pastes a gateway URL with a password into the Installation and runs validate in
// every output format, then render: each refuses it, names the fix (auth.bearerTokenFile) and
// never prints the password.
func TestSandboxCommandsNeverEchoEndpointCredentials(t *testing.T) {
	const canary = "CANARY-cli-userinfo-6e0d"
	for _, endpoint := range []string{
		"http://admin:" + canary + "@k3d-occ-dev-server-0:30051",
		"admin:" + canary + "@k3d-occ-dev-server-0:30051",
		"https://" + canary + "@openshell.example.com",
	} {
		file := writeInstallationWithEndpoint(t, endpoint)
		for _, format := range []string{"table", "json", "yaml"} {
			code, out, errOut := redactionRun(t, "sandbox", "validate", file, "-o", format)
			if code != 1 {
				t.Errorf("validate -o %s of %s: exit %d, want 1\nstdout %s\nstderr %s", format, endpoint, code, out, errOut)
			}
			if strings.Contains(out+errOut, canary) {
				t.Errorf("validate -o %s printed the credential:\nstdout %s\nstderr %s", format, out, errOut)
			}
			if !strings.Contains(out+errOut, "auth.bearerTokenFile") {
				t.Errorf("validate -o %s does not name the fix auth.bearerTokenFile:\nstdout %s\nstderr %s", format, out, errOut)
			}
		}
		code, out, errOut := redactionRun(t, "sandbox", "render", "--installation", file, "--revision", "../../testdata/revisions/codex.yaml")
		if code == 0 {
			t.Errorf("render with %s succeeded:\n%s", endpoint, out)
		}
		if strings.Contains(out+errOut, canary) {
			t.Errorf("render printed the credential:\nstdout %s\nstderr %s", out, errOut)
		}
	}
}
