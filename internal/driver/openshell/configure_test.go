package openshell

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/driver"
)

func mustConfig(t *testing.T, s string) driver.Configuration {
	t.Helper()
	c, err := driver.ParseConfiguration([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A dedicated Codex Agent gets exactly the Codex plugin settings the OpenShell SandboxDriver
// requires; its proxy setting goes, its other settings stay, and the caller's frozen copy is
// untouched.
func TestConfigureAgentCodexAddsSeedPluginSettings(t *testing.T) {
	d := newTestDriver(t, nil)
	in := mustConfig(t, `{"model":"gpt-5","plugins":{"entries":{"codex":{"config":{"appServer":{"networkProxy":{"port":3128},"sandbox":"workspace-write","keep":1}},"other":true},"github":{"enabled":false}}}}`)
	before := toJSON(t, in)
	harness := driver.Harness{ID: driver.HarnessCodex, Mode: driver.HarnessModeDedicated}
	out, err := d.ConfigureAgent(in, harness)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"gpt-5","plugins":{"entries":{"codex":{"config":{"appServer":{"approvalsReviewer":"user","keep":1,"sandbox":"danger-full-access"}},"enabled":true,"other":true},"github":{"enabled":false}}}}`
	if got := toJSON(t, out); got != want {
		t.Fatalf("configured\n got %s\nwant %s", got, want)
	}
	if toJSON(t, in) != before {
		t.Fatal("ConfigureAgent modified its read-only input")
	}
	if harness != (driver.Harness{ID: driver.HarnessCodex, Mode: driver.HarnessModeDedicated}) {
		t.Fatal("the Harness runtime changed")
	}
	// Status reads run the hook again on the frozen result: it must be a fixed point.
	again, err := d.ConfigureAgent(out, harness)
	if err != nil || toJSON(t, again) != want {
		t.Fatalf("second pass changed the configuration: %s, %v", toJSON(t, again), err)
	}

	// An Agent with no plugin block at all receives exactly the seed's fragment.
	empty, err := d.ConfigureAgent(nil, harness)
	if err != nil {
		t.Fatal(err)
	}
	seed := `{"plugins":{"entries":{"codex":{"config":{"appServer":{"approvalsReviewer":"user","sandbox":"danger-full-access"}},"enabled":true}}}}`
	if got := toJSON(t, empty); got != seed {
		t.Fatalf("empty configuration\n got %s\nwant %s", got, seed)
	}
}

// Native OpenClaw's default and main workspaces are pinned to the data mount; other Agents'
// workspaces are left alone.
func TestConfigureAgentOpenClawPinsWorkspace(t *testing.T) {
	d := newTestDriver(t, nil)
	in := mustConfig(t, `{"agents":{"defaults":{"workspace":"/home/node/ws","model":"m"},"entries":{"Main":{"workspace":"/elsewhere"},"helper":{"workspace":"/helper"}}},"gateway":{"port":1}}`)
	out, err := d.ConfigureAgent(in, driver.Harness{ID: driver.HarnessOpenClaw, Mode: driver.HarnessModeDedicated})
	if err != nil {
		t.Fatal(err)
	}
	agents := out["agents"].(map[string]any)
	if got := agents["defaults"].(map[string]any)["workspace"]; got != "/sandbox/enterprise" {
		t.Errorf("defaults.workspace = %v", got)
	}
	entries := agents["entries"].(map[string]any)
	if got := entries["Main"].(map[string]any)["workspace"]; got != "/sandbox/enterprise" {
		t.Errorf("entries.Main.workspace = %v", got)
	}
	if got := entries["helper"].(map[string]any)["workspace"]; got != "/helper" {
		t.Errorf("entries.helper.workspace = %v; a non-main Agent must be left alone", got)
	}
	if !reflect.DeepEqual(out["gateway"], in["gateway"]) || agents["defaults"].(map[string]any)["model"] != "m" {
		t.Error("unrelated settings changed")
	}
	if in["agents"].(map[string]any)["defaults"].(map[string]any)["workspace"] != "/home/node/ws" {
		t.Error("ConfigureAgent modified its input")
	}
}

// Revisions the driver cannot run are refused with the seed's sentences.
func TestConfigureAgentRefusals(t *testing.T) {
	d := newTestDriver(t, nil)
	cases := []struct {
		name    string
		config  string
		harness driver.Harness
		want    string
		code    driver.Code
	}{
		{"embedded harness", `{}`, driver.Harness{ID: "openclaw", Mode: "embedded"}, "OpenShell SandboxDriver supports only dedicated Harness revisions.", driver.CodeHarnessUnsupported},
		{"unknown runtime", `{}`, driver.Harness{ID: "claude", Mode: "dedicated"}, "OpenShell SandboxDriver does not support the selected Harness runtime.", driver.CodeHarnessUnsupported},
		{"plugins not an object", `{"plugins":[]}`, driver.Harness{ID: "codex", Mode: "dedicated"}, "plugins must be an object.", ""},
		{"appServer not an object", `{"plugins":{"entries":{"codex":{"config":{"appServer":"x"}}}}}`, driver.Harness{ID: "codex", Mode: "dedicated"}, "plugins.entries.codex.config.appServer must be an object.", ""},
		{"agents.defaults not an object", `{"agents":{"defaults":3}}`, driver.Harness{ID: "openclaw", Mode: "dedicated"}, "agents.defaults must be an object.", ""},
	}
	for _, tc := range cases {
		_, err := d.ConfigureAgent(mustConfig(t, tc.config), tc.harness)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || driver.CodeOf(err) != tc.code {
			t.Errorf("%s: err = %v (code %q); want %q (code %q)", tc.name, err, driver.CodeOf(err), tc.want, tc.code)
		}
	}
}

// Initial workspace files are admitted only for the data mount and a single main Agent.
func TestValidateWorkspaceSetup(t *testing.T) {
	d := newTestDriver(t, nil)
	oc := driver.Harness{ID: driver.HarnessOpenClaw, Mode: driver.HarnessModeDedicated}
	ok := WorkspaceSetup{Workspace: "/sandbox/enterprise", Files: []string{"AGENTS.md", "notes/today.md"}}
	if err := d.ValidateWorkspaceSetup(mustConfig(t, `{}`), oc, ok); err != nil {
		t.Fatalf("omitted roster: %v", err)
	}
	if err := d.ValidateWorkspaceSetup(mustConfig(t, `{"agents":{"entries":{"main":{}}}}`), oc, ok); err != nil {
		t.Fatalf("single main Agent: %v", err)
	}
	bad := []struct {
		name   string
		config string
		setup  WorkspaceSetup
	}{
		{"other workspace", `{}`, WorkspaceSetup{Workspace: "/home/node/workspace", Files: []string{"a"}}},
		{"two Agents", `{"agents":{"entries":{"main":{},"helper":{}}}}`, ok},
		{"non-main Agent", `{"agents":{"entries":{"helper":{}}}}`, ok},
		{"escaping file", `{}`, WorkspaceSetup{Workspace: "/sandbox/enterprise", Files: []string{"../etc/passwd"}}},
		{"absolute file", `{}`, WorkspaceSetup{Workspace: "/sandbox/enterprise", Files: []string{"/etc/passwd"}}},
	}
	for _, tc := range bad {
		if err := d.ValidateWorkspaceSetup(mustConfig(t, tc.config), oc, tc.setup); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}
