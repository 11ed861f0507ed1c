package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/driver/compute"
)

// An engineer renders a native OpenClaw revision on an Installation that sets the session
// capacity: render says how many retained session workers Compute keeps for it (the setting
// applies to native OpenClaw only), and a Codex render says nothing about it.
func TestRenderNamesNativeSessionCapacity(t *testing.T) {
	dev, err := os.ReadFile(filepath.Join(repoRoot, "testdata", "installation", "dev.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	inst := filepath.Join(t.TempDir(), "installation.yaml")
	src := strings.Replace(string(dev), "        gatewayStorageClassName: local-path\n",
		"        gatewayStorageClassName: local-path\n        nativeOpenClawSessionCapacity: 3\n", 1)
	if err := os.WriteFile(inst, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	off, err := OpenOffline(inst, nil)
	if err != nil {
		t.Fatal(err)
	}
	notes := func(rev string) string {
		rf, err := compute.LoadRevisionFile(filepath.Join(repoRoot, "testdata", "revisions", rev))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := off.Render(rf); err != nil {
			t.Fatalf("render %s: %v", rev, err)
		}
		n, err := off.RenderNotes(rf)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(n, "\n")
	}
	if got := notes("openclaw.yaml"); !strings.Contains(got, "3 retained native session workers") || !strings.Contains(got, "runtime.nativeOpenClawSessionCapacity") {
		t.Errorf("OpenClaw render notes do not name the capacity 3:\n%s", got)
	}
	if got := notes("codex.yaml"); strings.Contains(got, "nativeOpenClawSessionCapacity") {
		t.Errorf("a Codex render names the native OpenClaw capacity:\n%s", got)
	}
}
