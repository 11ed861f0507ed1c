package installation

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/occdev/pins"
)

// An engineer leaves drivers.sandbox or drivers.credential_gateway without an id; the Backend
// problem must say what to do, never advise setting a key to an empty id.
func TestNoMessageAdvisesAnEmptyValue(t *testing.T) {
	for _, fx := range loadFixtures(t) {
		_, err := Parse(fx.data)
		if err == nil {
			continue
		}
		for _, bad := range []string{`to ""`, `to "",`, `Set it to ""`} {
			if strings.Contains(err.Error(), bad) {
				t.Errorf("%s: a message advises an empty value (%s):\n%s", fx.name, bad, err)
			}
		}
	}
}

// An engineer pastes a gateway URL with user:password into the Installation. Validation
// refuses it and names the fix, and no problem (text or JSON) repeats the credential, whatever
// form the endpoint takes.
func TestEndpointCredentialsNeverEchoed(t *testing.T) {
	dev, err := os.ReadFile(filepath.Join(fixtureDir, "dev.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const canary = "CANARY-userinfo-31f9"
	for _, endpoint := range []string{
		"http://admin:" + canary + "@k3d-occ-dev-server-0:30051",
		"https://" + canary + "@openshell.example.com",
		"http://" + canary + ":@k3d-occ-dev-server-0:30051",
		"admin:" + canary + "@k3d-occ-dev-server-0:30051",
		"http://admin:" + canary + "@k3d-occ-dev-server-0:30051/path?q=1",
		"http://admin:" + canary + "@@k3d-occ-dev-server-0:99999",
		"ftp://admin:" + canary + "@host",
	} {
		src := strings.Replace(string(dev), "endpoint: http://k3d-occ-dev-server-0:30051", "endpoint: \""+endpoint+"\"", 1)
		_, err := Parse([]byte(src))
		if err == nil {
			t.Errorf("%s: accepted", endpoint)
			continue
		}
		js, _ := json.Marshal(err)
		if strings.Contains(err.Error(), canary) || strings.Contains(string(js), canary) {
			t.Errorf("the credential was echoed:\n%s\n%s", err, js)
		}
		if !strings.Contains(err.Error(), "auth.bearerTokenFile") {
			t.Errorf("%s: the refusal does not name the fix auth.bearerTokenFile:\n%s", endpoint, err)
		}
	}
}

// Messages that cite an OpenShell version name the pinned one (internal/occdev/pins), not a
// version occ does not install.
func TestMessagesNameThePinnedOpenShell(t *testing.T) {
	set, err := pins.Default()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msgUniqueNames, "OpenShell "+set.OpenShell.Version+" ") {
		t.Errorf("message %q does not name the pinned OpenShell %s", msgUniqueNames, set.OpenShell.Version)
	}
	for _, fx := range loadFixtures(t) {
		if _, err := Parse(fx.data); err != nil && strings.Contains(err.Error(), "v0.1.5") {
			t.Errorf("%s: a message names v0.1.5, which is not the pinned OpenShell:\n%s", fx.name, err)
		}
	}
}

// The workspace objects the validator converts strictly are exactly the kinds the development
// chart render admits (package contract), so neither can accept what the other refuses.
func TestWorkspaceKindsAreTheContractKinds(t *testing.T) {
	want := contract.WorkspaceResourceKinds()
	if len(workspaceKinds) != len(want) {
		t.Fatalf("%d typed workspace kinds, contract lists %d", len(workspaceKinds), len(want))
	}
	for _, gvk := range want {
		if workspaceKinds[gvk] == nil {
			t.Errorf("%s has no typed form", gvk)
		}
	}
}

// An engineer reads a problem and goes to the line: every problem in an invalid fixture that is
// about a key (not the document as a whole) names the line of that key, or of the block a
// missing key belongs in.
func TestEveryProblemNamesItsLine(t *testing.T) {
	for _, fx := range loadFixtures(t) {
		_, err := Parse(fx.data)
		var problems Problems
		if !errors.As(err, &problems) {
			t.Fatalf("%s: %v", fx.name, err)
		}
		for _, p := range problems {
			// A problem about the document, or a key missing from its top level, has no line.
			if top, _, _ := strings.Cut(strings.SplitN(p.Path, "[", 2)[0], "."); p.Path == documentPath || !strings.Contains(string(fx.data), "\n"+top+":") {
				continue
			}
			if p.Line <= 0 || !strings.Contains(p.Message, "line "+strconv.Itoa(p.Line)) {
				t.Errorf("%s: problem without its line: %+v", fx.name, p)
			}
		}
	}
}
