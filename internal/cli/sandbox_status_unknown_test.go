package cli

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// closedAddr returns a loopback host:port nothing listens on (a listener opened and closed).
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// unreachableBed writes an Installation whose gateway endpoint and a kubeconfig whose cluster
// both point at loopback ports nothing listens on: a laptop whose port-forwards died.
func unreachableBed(t *testing.T) (installationPath, kubeconfig string) {
	t.Helper()
	dir := t.TempDir()
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "installation", "dev.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const old = "endpoint: http://k3d-occ-dev-server-0:30051"
	if !strings.Contains(string(raw), old) {
		t.Fatalf("dev.yaml no longer contains %q; update the test", old)
	}
	y := strings.Replace(string(raw), old, "endpoint: http://"+closedAddr(t), 1)
	y = strings.Replace(y, "requestTimeoutMs: 30000", "requestTimeoutMs: 1000", 1)
	installationPath = filepath.Join(dir, "installation.yaml")
	kubeconfig = filepath.Join(dir, "kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: gone
  cluster:
    server: https://%s
    insecure-skip-tls-verify: true
contexts:
- name: gone
  context: {cluster: gone, user: gone}
current-context: gone
users:
- name: gone
  user: {token: not-a-secret}
`, closedAddr(t))
	for p, data := range map[string]string{installationPath: y, kubeconfig: kc} {
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return installationPath, kubeconfig
}

// An engineer asks for a revision's status while neither the cluster nor the gateway answers:
// status must say it could not look (unknown, with the cause) and exit non-zero, never report
// the namespace and the Sandbox as absent.
func TestSandboxStatusUnreachableIsUnknown(t *testing.T) {
	isolate(t)
	inst, kubeconfig := unreachableBed(t)
	revision := filepath.Join("..", "..", "testdata", "revisions", "codex.yaml")
	args := []string{"sandbox", "status", "--installation", inst, "--kubeconfig", kubeconfig, "--revision", revision}

	code, out, errOut := run(t, args...)
	t.Logf("exit %d\nstdout:\n%sstderr:\n%s", code, out, errOut)
	if code != exitError {
		t.Errorf("table: exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if strings.Contains(out, "absent") {
		t.Errorf("table reports something absent although nothing could be read:\n%s", out)
	}
	for _, want := range []string{"(OCC Namespace ns_acme): unknown (", "connection refused", "Harness Pod unknown"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "Sandbox     os-") || !strings.Contains(out, ": unknown (") {
		t.Errorf("table does not report the Sandbox as unknown:\n%s", out)
	}
	if !strings.Contains(errOut, "status is incomplete") {
		t.Errorf("stderr %q does not say the status is incomplete", errOut)
	}

	code, out, errOut = run(t, append(args, "-o", "json")...)
	if code != exitError {
		t.Errorf("json: exit %d, want 1 (stderr %q)", code, errOut)
	}
	var doc struct {
		Namespace map[string]any `json:"namespace"`
		Sandbox   map[string]any `json:"sandbox"`
		Pods      []any          `json:"pods"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("json output %q: %v", out, err)
	}
	for part, m := range map[string]map[string]any{"namespace": doc.Namespace, "sandbox": doc.Sandbox} {
		if _, ok := m["exists"]; ok {
			t.Errorf("%s carries \"exists\" although it could not be read: %v", part, m)
		}
		if m["state"] != "unknown" || m["cause"] == nil || m["cause"] == "" {
			t.Errorf("%s = %v, want state unknown with a cause", part, m)
		}
	}
	if doc.Pods != nil {
		t.Errorf("pods = %v, want null (not listed) rather than an empty list", doc.Pods)
	}
}
