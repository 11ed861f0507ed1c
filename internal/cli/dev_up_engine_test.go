package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev"
)

// The summary names the network of the engine the cluster runs in: Podman's on Podman, Docker's
// otherwise (and for a summary without a kind).
func TestUpSummaryNamesTheEngineNetwork(t *testing.T) {
	for kind, want := range map[string]string{"podman": "Podman", "docker": "Docker", "": "Docker"} {
		sum := &occdev.Summary{Engine: "x", EngineKind: kind, ClusterProvider: "k3d", Cluster: "occ-dev-abc", Kubeconfig: "/s/kubeconfig",
			ContainerKubeconfig: "/s/container-kubeconfig", StateDirectory: "/s", DownCommand: occdev.DownCommand("occ", "/s")}
		var out bytes.Buffer
		if err := printUpSummary(&out, sum); err != nil {
			t.Fatal(err)
		}
		if line := "/s/container-kubeconfig (kubeconfig for containers on the cluster's " + want + " network)"; !strings.Contains(out.String(), line) {
			t.Errorf("kind %q: summary lacks %q:\n%s", kind, line, out.String())
		}
	}
}
