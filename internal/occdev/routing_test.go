package occdev

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/occ/internal/occdev/pins"
)

// The trusted proxy range is the nodes' IPv4 Pod ranges, never one wider than /16, and a
// cluster whose nodes have none is refused.
func TestNodePodCIDRs(t *testing.T) {
	node := func(name string, cidrs ...string) corev1.Node {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if len(cidrs) > 0 {
			n.Spec.PodCIDR, n.Spec.PodCIDRs = cidrs[0], cidrs
		}
		return n
	}
	got, err := nodePodCIDRs([]corev1.Node{node("b", "10.42.1.0/24", "fd00:10:42::/64"), node("a", "10.42.0.0/24"), node("c", "10.42.0.0/24")})
	if err != nil || strings.Join(got, ",") != "10.42.0.0/24,10.42.1.0/24" {
		t.Errorf("got %v, %v", got, err)
	}
	if _, err := nodePodCIDRs([]corev1.Node{node("wide", "10.0.0.0/8")}); err == nil || !strings.Contains(err.Error(), "node wide has Pod CIDR 10.0.0.0/8") {
		t.Errorf("a /8: %v", err)
	}
	if _, err := nodePodCIDRs([]corev1.Node{node("none")}); err == nil || !strings.Contains(err.Error(), "no node of the cluster has an IPv4 Pod CIDR") {
		t.Errorf("no Pod CIDR: %v", err)
	}
}

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
	if err == nil || !strings.Contains(err.Error(), optCertManagerManifest) || !strings.Contains(err.Error(), "record no digests") {
		t.Errorf("a routing manifest without routing pins: %v", err)
	}

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
	if d := strings.Join(describeRoutingFetch(p).Creates, " "); !strings.Contains(d, "cert-manager v1.18.4 from "+local) || !strings.Contains(d, "Envoy Gateway v1.6.7 from https://github.com/envoyproxy/gateway/releases/download/v1.6.7/install.yaml") {
		t.Errorf("fetch description %q", d)
	}
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
