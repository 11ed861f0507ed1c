package controlplane

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/occ/internal/testbed"
)

// Both profiles write Kubernetes Compute's node settings from the one development node: the
// runtime by digest on that node with its Pod bridge; a tag, a cluster of other than one node
// or a node without an IPv4 Pod range is refused with what to do, before an Installation is
// written.
func TestComputeExtrasFromTheOneNode(t *testing.T) {
	ctx := context.Background()
	c := testbed.Client(t)
	const ref = "docker.io/library/openclaw-enterprise-runtime@sha256:2222222222222222222222222222222222222222222222222222222222222222"
	addNode := func(name, podCIDR string) {
		t.Helper()
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}, Spec: corev1.NodeSpec{PodCIDR: podCIDR}}
		if _, err := c.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	}
	refused := func(image, want string) {
		t.Helper()
		if x, err := ComputeExtras(ctx, c, image); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ComputeExtras(%s) = %+v, %v; want a refusal saying %q", image, x, err, want)
		}
	}

	refused("openclaw-enterprise-runtime:kubernetes-quickstart", "not an in-cluster digest reference")
	refused(ref, "the development cluster has 0 nodes")
	addNode("k3d-occ-dev-compute-server-0", "")
	refused(ref, `node k3d-occ-dev-compute-server-0 has no IPv4 Pod range (spec.podCIDR "")`)
	if err := c.CoreV1().Nodes().Delete(ctx, "k3d-occ-dev-compute-server-0", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	addNode("k3d-occ-dev-compute-server-0", "10.42.0.0/24")

	x, err := ComputeExtras(ctx, c, ref)
	if err != nil {
		t.Fatal(err)
	}
	if x.Images.Gateway != ref || x.Images.Agent != ref || !x.Images.RequireImmutableDigest ||
		x.Runtime.GatewayNodeSelector[corev1.LabelHostname] != "k3d-occ-dev-compute-server-0" || x.Runtime.GatewayStorageClassName != StorageClassName ||
		x.Runtime.TransportSecretPrefix != TransportSecretPrefix || strings.Join(x.PluginStatusProxySourceCIDRs, ",") != "10.42.0.1/32" ||
		strings.Join(x.GatewayTrustedProxyCIDRs, ",") != "127.0.0.1/32" {
		t.Errorf("compute extras: %+v", x)
	}

	addNode("k3d-occ-dev-compute-agent-0", "10.42.1.0/24")
	refused(ref, "the development cluster has 2 nodes, but Agent gateways are placed on its one server node")
}
