package occdev

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/pins"
)

// The embedded pins record no routing image digests: the plan installs no routing controllers
// and says why, and a local routing manifest selected then is refused as a bad setting. With
// pins that record them, the plan installs both and takes a local copy of a manifest.
func TestPlanRouting(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	sock := dockerAt("unix:///run/user/1000/docker.sock")
	p, err := resolvePlan(UpOptions{StateDir: "/var/lib/occ-dev", Docker: sock})
	if err != nil {
		t.Fatal(err)
	}
	if p.installsRouting() || !strings.Contains(p.Routing.Skipped, "record no digests for the routing controllers' images") || !strings.Contains(p.Routing.Skipped, "DEPENDENCY_UNAVAILABLE") {
		t.Errorf("routing of the embedded pins: %+v", p.Routing)
	}
	if steps := stepNamesOf(p); strings.Contains(steps, "routing") {
		t.Errorf("a plan without routing has routing steps: %s", steps)
	}
	local := filepath.Join(t.TempDir(), "cert-manager.yaml")
	if err := os.WriteFile(local, []byte("kind: Namespace\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = resolvePlan(UpOptions{StateDir: "/var/lib/occ-dev", Docker: sock, CertManagerManifest: local})
	if err == nil || !strings.Contains(err.Error(), "--cert-manager-manifest ("+EnvCertManagerManifest+")") || !strings.Contains(err.Error(), "record no digests") {
		t.Errorf("a routing manifest without routing pins: %v", err)
	}

	pinFile := routedPinFile(t)
	p, err = resolvePlan(UpOptions{StateDir: "/var/lib/occ-dev", Docker: sock, PinFile: pinFile, CertManagerManifest: local})
	if err != nil {
		t.Fatal(err)
	}
	if !p.installsRouting() || strings.Join(p.Routing.Controllers, ",") != "cert-manager v1.18.4,Envoy Gateway v1.6.7" || p.Routing.Manifests[pins.KeyRoutingCertManager] != local {
		t.Errorf("routing of resolved pins: %+v", p.Routing)
	}
	steps := stepNamesOf(p)
	for _, want := range []string{"Fetch and verify the routing controller manifests", "Apply the routing controller manifests", "Wait for the Agent Sandbox and routing controllers and the Gateway"} {
		if !strings.Contains(steps, want) {
			t.Errorf("the plan lacks step %q: %s", want, steps)
		}
	}
	// The selected manifest is only read; the other is downloaded into the cache, by its pin.
	d := describeRoutingFetch(p)
	if !strings.Contains(d.Note, "cert-manager v1.18.4 from "+local) || len(d.Files) != 1 ||
		filepath.Base(d.Files[0].Path) != p.pins.Routing.EnvoyGateway.Manifest.SHA256 || !strings.Contains(d.Files[0].Note, "Envoy Gateway v1.6.7 manifest from https://github.com/envoyproxy/gateway/releases/download/v1.6.7/install.yaml") {
		t.Errorf("fetch description %+v", d)
	}
}

// routedPinFile writes the built-in pins, with digests recorded for one image of each routing
// controller (cert-manager's controller, Envoy Gateway), to a pin file of the test's own.
func routedPinFile(t *testing.T) string {
	t.Helper()
	set, err := pins.Default()
	if err != nil {
		t.Fatal(err)
	}
	digest := "@sha256:" + strings.Repeat("ab", 32)
	set.Routing.CertManager.Images = []pins.Image{mustImage(t, "quay.io/jetstack/cert-manager-controller:v1.18.4"+digest)}
	set.Routing.EnvoyGateway.Images = []pins.Image{mustImage(t, "docker.io/envoyproxy/gateway:v1.6.7"+digest)}
	data, err := pins.Encode(set, "")
	if err != nil {
		t.Fatal(err)
	}
	pinFile := filepath.Join(t.TempDir(), "pins.yaml")
	if err := os.WriteFile(pinFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return pinFile
}

func mustImage(t *testing.T, ref string) pins.Image {
	t.Helper()
	img, err := pins.ParseImage(ref)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// stepNamesOf lists the names of the plan's steps, lanes included, one per line.
func stepNamesOf(p *Plan) string {
	var names []string
	var walk func([]Step)
	walk = func(steps []Step) {
		for _, s := range steps {
			names = append(names, s.Name)
			for _, l := range s.Lanes {
				walk(l.Steps)
			}
		}
	}
	walk(upSteps(p))
	return strings.Join(names, "\n")
}
