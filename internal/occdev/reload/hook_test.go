package reload

import (
	"testing"

	"github.com/openclaw/occ/internal/occdev/profile"
	"github.com/openclaw/occ/internal/occdev/profile/composeprofile"
)

// noReload is a registered profile without a reload (no profile.Reloader).
type noReload struct{ profile.Profile }

// The recorded control plane's hook comes from the profiles the root hands in: a profile without
// reload steps, and a name none of them has, are refused naming the control planes reload can
// roll and those this occ knows, with down and up as the fix.
func TestHookOfTheRecordedControlPlane(t *testing.T) {
	profiles := map[string]profile.Profile{"compose": composeprofile.Profile{}, "note": noReload{}}
	if h, err := hookOf("/s", "", "compose", profiles); err != nil || h == nil || h.check == nil || h.builds == nil {
		t.Fatalf("compose: %+v, %v; want its check, build choice and steps", h, err)
	}
	for name, want := range map[string]string{
		"note":  `cannot reload the environment recorded in /s: its control plane "note" has no reload: occ dev reload rolls only a control plane whose profile gives reload steps (compose)`,
		"other": `cannot reload the environment recorded in /s: its control plane "other" is not one this occ knows (compose, note)`,
	} {
		_, err := hookOf("/s", "", name, profiles)
		if err == nil || err.Error() != want+"\nremove it with occ dev down --state-dir /s and bring it up again with occ dev up" {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The command that finishes an interrupted reload survives being pasted into a shell.
func TestReloadCommandQuoting(t *testing.T) {
	if got := reloadCommand("/opt/my tools/occ", "/tmp/it's here"); got != `'/opt/my tools/occ' dev reload --state-dir '/tmp/it'\''s here'` {
		t.Errorf("quoted: %s", got)
	}
}
