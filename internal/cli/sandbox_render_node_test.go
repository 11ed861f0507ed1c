package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// Rendering a revision that enrolls a workspace node works offline: stdout is still only the
// request (the setup code is neither read nor shown), and stderr says which Secret render left
// unread and what provisioning adds from it. A revision without a setup code gets no note about
// one (only the native session capacity every OpenClaw render names).
func TestSandboxRenderNotesUnreadSetupSecret(t *testing.T) {
	isolate(t)
	inst := filepath.Join("..", "..", "testdata", "installation", "dev.yaml")
	rev := filepath.Join("..", "..", "testdata", "revisions", "openclaw-node.yaml")
	code, out, errOut := run(t, "sandbox", "render", "--installation", inst, "--revision", rev, "--kubeconfig", "/nonexistent")
	if code != 0 {
		t.Fatalf("render: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, `"oce-runtime-`) || strings.Contains(out, "OPENCLAW_NODE_SETUP_CODE") || strings.Contains(out, "workspace-node-enrollment") {
		t.Fatalf("rendered request:\n%s", out)
	}
	if !strings.HasPrefix(errOut, "note: OPENCLAW_NODE_SETUP_CODE is a reference to Secret agent-researcher-node-setup key setup-code, which render has not read") ||
		!strings.Contains(errOut, "workspace-node-enrollment") {
		t.Fatalf("stderr %q", errOut)
	}

	plain := filepath.Join("..", "..", "testdata", "revisions", "openclaw.yaml")
	if code, _, errOut := run(t, "sandbox", "render", "--installation", inst, "--revision", plain); code != 0 ||
		strings.Contains(errOut, "OPENCLAW_NODE_SETUP_CODE") || strings.Count(errOut, "note: ") != 1 || !strings.Contains(errOut, "nativeOpenClawSessionCapacity") {
		t.Fatalf("render without a setup code: exit %d, stderr %q", code, errOut)
	}
}
