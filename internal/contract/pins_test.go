// An external test: the pins package shows its URLs through this package's RedactURL.
package contract_test

import (
	"testing"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/occdev/pins"
)

// A message that names "the pinned OpenShell" names the version occ actually installs.
func TestPinnedOpenShellVersionIsThePinFile(t *testing.T) {
	set, err := pins.Default()
	if err != nil {
		t.Fatal(err)
	}
	if set.OpenShell.Version != contract.PinnedOpenShellVersion {
		t.Fatalf("PinnedOpenShellVersion = %s, but pins.yaml pins OpenShell %s", contract.PinnedOpenShellVersion, set.OpenShell.Version)
	}
}
