package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/driver/compute"
)

// An Agent author freezes a configuration holding numbers JSON can write but a float64 cannot
// hold exactly (a 23-digit integer, 1e400): configure-agent keeps each as the same number
// literal, in the frozen revision (YAML and JSON) and for a bare --configuration, and the
// frozen revision reads back with the same values.
func TestConfigureAgentKeepsExactNumbers(t *testing.T) {
	isolate(t)
	inst := "../../testdata/installation/dev.yaml"
	raw, err := os.ReadFile("../../testdata/revisions/openclaw.yaml")
	if err != nil {
		t.Fatal(err)
	}
	numbers := "  big: 12345678901234567890123\n  tiny: 1e400\n  ratio: 0.1000000000000000055511151231257827\n  quoted: \"1e400\"\n"
	src := strings.Replace(string(raw), "configuration:\n", "configuration:\n"+numbers, 1)
	dir := t.TempDir()
	rev := filepath.Join(dir, "revision.yaml")
	if err := os.WriteFile(rev, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := run(t, "sandbox", "configure-agent", "--installation", inst, "--revision", rev)
	if code != 0 {
		t.Fatalf("configure-agent: exit %d\n%s", code, errOut)
	}
	for _, want := range []string{"big: 12345678901234567890123\n", "tiny: 1e400\n", "ratio: 0.1000000000000000055511151231257827\n", `quoted: "1e400"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the frozen revision lacks %q:\n%s", want, out)
		}
	}
	frozen := filepath.Join(dir, "frozen.yaml")
	if err := os.WriteFile(frozen, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	rf, err := compute.LoadRevisionFile(frozen)
	if err != nil {
		t.Fatalf("the frozen revision does not read back: %v", err)
	}
	for key, want := range map[string]any{"big": json.Number("12345678901234567890123"), "tiny": json.Number("1e400"), "quoted": "1e400"} {
		if got := rf.Configuration[key]; got != want {
			t.Errorf("frozen %s = %#v, want %#v", key, got, want)
		}
	}
	code, out, errOut = run(t, "sandbox", "configure-agent", "--installation", inst, "--revision", rev, "-o", "json")
	if code != 0 || !strings.Contains(out, `"big": 12345678901234567890123`) || !strings.Contains(out, `"tiny": 1e400`) {
		t.Errorf("configure-agent -o json: exit %d\n%s%s", code, out, errOut)
	}

	cfg := filepath.Join(dir, "configuration.yaml")
	if err := os.WriteFile(cfg, []byte("agents: {defaults: {model: openai/gpt-5}}\n"+strings.ReplaceAll(numbers, "  ", "")), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run(t, "sandbox", "configure-agent", "--installation", inst, "--configuration", cfg, "--harness", "openclaw")
	if code != 0 {
		t.Fatalf("configure-agent --configuration: exit %d\n%s", code, errOut)
	}
	for _, want := range []string{`"big": 12345678901234567890123`, `"tiny": 1e400`, `"quoted": "1e400"`} {
		if !strings.Contains(out, want) {
			t.Errorf("the transformed configuration lacks %s:\n%s", want, out)
		}
	}
}

// An engineer freezes a Codex revision whose environment carries the raw app-server token as a
// literal: configure-agent refuses it, as render would, naming the variable and never the
// token, and prints no revision.
func TestConfigureAgentRefusesLiteralAppServerToken(t *testing.T) {
	isolate(t)
	const canary = "CANARY-app-server-token-3b7e"
	raw, err := os.ReadFile("../../testdata/revisions/codex.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(raw), "  env:\n", "  env:\n    - name: APP_SERVER_TOKEN\n      value: "+canary+"\n", 1)
	rev := filepath.Join(t.TempDir(), "revision.yaml")
	if err := os.WriteFile(rev, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"table", "json", "yaml"} {
		code, out, errOut := run(t, "sandbox", "configure-agent", "--installation", "../../testdata/installation/dev.yaml", "--revision", rev, "-o", format)
		if code != 1 || out != "" || !strings.Contains(errOut, "APP_SERVER_TOKEN") {
			t.Errorf("-o %s: exit %d, want 1 naming APP_SERVER_TOKEN and printing no revision\nstdout %s\nstderr %s", format, code, out, errOut)
		}
		if strings.Contains(out+errOut, canary) {
			t.Errorf("-o %s printed the token:\n%s%s", format, out, errOut)
		}
	}
}
