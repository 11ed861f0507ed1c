package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeReplaced copies a repository fixture with one replacement applied and returns the copy.
func writeReplaced(t *testing.T, fixture, from, to string) string {
	t.Helper()
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), from) {
		t.Fatalf("%s lost %q", fixture, from)
	}
	path := filepath.Join(t.TempDir(), filepath.Base(fixture))
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), from, to, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// An engineer renders revisions the driver must refuse before anything is created: a
// credential source held by another Credential Gateway, and native OpenClaw on an
// Installation with user namespaces on. render exits non-zero with the rule.
func TestSandboxRenderRefusesOffline(t *testing.T) {
	const dev, codex, openclaw = "../../testdata/installation/dev.yaml", "../../testdata/revisions/codex.yaml", "../../testdata/revisions/openclaw.yaml"
	foreign := writeReplaced(t, codex, "credentialGatewayId: credential-gateway-openshell-development", "credentialGatewayId: credential-gateway-elsewhere")
	code, out, errOut := redactionRun(t, "sandbox", "render", "--installation", dev, "--revision", foreign)
	if code == 0 || !strings.Contains(errOut, "credential-gateway-elsewhere") {
		t.Errorf("render of a foreign credential source: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}

	userNS := writeReplaced(t, dev, "userNamespaces: false", "userNamespaces: true")
	code, out, errOut = redactionRun(t, "sandbox", "render", "--installation", userNS, "--revision", openclaw)
	if code == 0 || strings.Contains(out, `"user_namespaces": true`) || !strings.Contains(errOut, "kubernetes.userNamespaces: false") {
		t.Errorf("render of native OpenClaw with user namespaces: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	code, out, errOut = redactionRun(t, "sandbox", "configure-agent", "--installation", userNS, "--revision", openclaw)
	if code == 0 || !strings.Contains(errOut, "Agent save refuses dedicated OpenClaw otherwise") {
		t.Errorf("configure-agent of native OpenClaw with user namespaces: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
}
