package openshell

import (
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/driver"
)

// seedRoster is the specification's rule on native OpenClaw rosters, which every refusal must quote.
const seedRoster = "admission refuses a roster that makes another Agent the default"

// An Agent author marks a helper Agent as the default in a native OpenClaw roster (in
// agents.entries or agents.list): the Sandbox's workspace is pinned only for main, so saving
// (configureAgent), workspace setup, render and provisioning all refuse it naming the entry;
// a roster that keeps main the default, and any Codex configuration, pass.
func TestNativeRosterWithAnotherDefaultRefused(t *testing.T) {
	d := newTestDriver(t, nil)
	oc := driver.Harness{ID: driver.HarnessOpenClaw, Mode: driver.HarnessModeDedicated}
	for _, tc := range []struct{ config, names string }{
		{`{"agents":{"entries":{"main":{},"helper":{"default":true}}}}`, "agents.entries.helper.default"},
		{`{"agents":{"entries":{"Helper":{"default":true}}}}`, "agents.entries.Helper.default"},
		{`{"agents":{"list":[{"id":"main"},{"id":"helper","default":true}]}}`, "agents.list[1].default"},
	} {
		cfg := mustConfig(t, tc.config)
		check := func(step string, err error) {
			t.Helper()
			if err == nil {
				t.Errorf("%s accepted %s", step, tc.config)
				return
			}
			if !strings.Contains(err.Error(), seedRoster) || !strings.Contains(err.Error(), tc.names) {
				t.Errorf("%s refusal of %s does not quote the rule and name %s:\n%v", step, tc.config, tc.names, err)
			}
		}
		_, err := d.ConfigureAgent(cfg, oc)
		check("configureAgent", err)
		check("validateWorkspaceSetup", d.ValidateWorkspaceSetup(cfg, oc, WorkspaceSetup{Workspace: "/sandbox/enterprise"}))
		hctx := openclawContext(testNamespace)
		hctx.Revision.Configuration = cfg
		_, err = d.RenderCreateSandbox(hctx)
		check("render", err)
	}
	for _, ok := range []string{
		`{}`,
		`{"agents":{"entries":{"main":{"default":true}}}}`,
		`{"agents":{"entries":{"Main":{"default":true},"helper":{"default":false}}}}`,
		`{"agents":{"list":[{"id":"main","default":true},{"id":"helper"}]}}`,
	} {
		if _, err := d.ConfigureAgent(mustConfig(t, ok), oc); err != nil {
			t.Errorf("configureAgent refused %s: %v", ok, err)
		}
	}
	codex := driver.Harness{ID: driver.HarnessCodex, Mode: driver.HarnessModeDedicated}
	if _, err := d.ConfigureAgent(mustConfig(t, `{"agents":{"entries":{"helper":{"default":true}}}}`), codex); err != nil {
		t.Errorf("a Codex configuration was refused for a native OpenClaw roster rule: %v", err)
	}
}
