package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An Agent author freezes a native OpenClaw revision whose roster makes a helper the default
// Agent: configure-agent refuses to freeze it and render refuses to render it, both naming the
// entry and the rule, and neither prints a request.
func TestNativeRosterDefaultRefusedByConfigureAndRender(t *testing.T) {
	isolate(t)
	raw, err := os.ReadFile("../../testdata/revisions/openclaw.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(raw), "      model: openai/gpt-5\n",
		"      model: openai/gpt-5\n    entries:\n      helper:\n        default: true\n", 1)
	rev := filepath.Join(t.TempDir(), "revision.yaml")
	if err := os.WriteFile(rev, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	inst := "../../testdata/installation/dev.yaml"
	for _, cmd := range []string{"configure-agent", "render"} {
		code, out, errOut := run(t, "sandbox", cmd, "--installation", inst, "--revision", rev)
		if code != 1 || out != "" || !strings.Contains(errOut, "agents.entries.helper.default") ||
			!strings.Contains(errOut, "admission refuses a roster that makes another Agent the default") {
			t.Errorf("%s: exit %d, want 1 naming the entry and the rule\nstdout %s\nstderr %s", cmd, code, out, errOut)
		}
	}
}
