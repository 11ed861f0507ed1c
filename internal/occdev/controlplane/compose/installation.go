package compose

import (
	"context"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/openclaw/occ/internal/occdev/platform"
)

// The Compose profile's Agent gateway settings (reference §5): the cluster's local-path storage
// and the prefix of the per-Agent transport Secrets Kubernetes Compute creates.
const (
	StorageClassName      = "local-path"
	TransportSecretPrefix = "openclaw-agent-transport"
)

// ComputeExtras is the Compose profile's part of Kubernetes Compute's configuration: the Agent
// runtime's in-cluster digest reference for gateways and agents (every image digest-pinned),
// Agent gateways placed on the cluster's one node, the node's Pod bridge as the plugin status
// proxy's source, and loopback as the only trusted proxy. It reads the node from the cluster.
func ComputeExtras(ctx context.Context, kube kubernetes.Interface, runtimeImage string) (*platform.ComputeExtras, error) {
	nodes, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list the cluster's nodes: %w", err)
	}
	if len(nodes.Items) != 1 {
		return nil, fmt.Errorf("the development cluster has %d nodes, but Agent gateways are placed on its one server node; use the k3d cluster occ creates", len(nodes.Items))
	}
	node := nodes.Items[0]
	prefix, err := netip.ParsePrefix(node.Spec.PodCIDR)
	if err != nil || !prefix.Addr().Is4() {
		return nil, fmt.Errorf("node %s has no IPv4 Pod range (spec.podCIDR %q): cannot tell where its bridge connects to Pods from", node.Name, node.Spec.PodCIDR)
	}
	hostname := node.Labels[corev1.LabelHostname]
	if hostname == "" {
		hostname = node.Name
	}
	return &platform.ComputeExtras{
		Images: platform.ComputeImages{Gateway: runtimeImage, Agent: runtimeImage, RequireImmutableDigest: true},
		Runtime: platform.ComputeRuntime{
			GatewayStorageClassName: StorageClassName,
			TransportSecretPrefix:   TransportSecretPrefix,
			GatewayNodeSelector:     map[string]string{corev1.LabelHostname: hostname},
		},
		PluginStatusProxySourceCIDRs: []string{netip.PrefixFrom(prefix.Masked().Addr().Next(), 32).String()},
		GatewayTrustedProxyCIDRs:     []string{"127.0.0.1/32"},
	}, nil
}
