package controlplane

import (
	"context"
	"fmt"
	"net/netip"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/openclaw/occ/internal/occdev/platform"
)

// Kubernetes Compute's Agent gateway settings in the development cluster, the same for both
// profiles: k3s's local-path storage and the prefix of the per-Agent transport
// Secrets Compute creates.
const (
	StorageClassName      = "local-path"
	TransportSecretPrefix = "openclaw-agent-transport"
)

// digestReference is the rule OCE applies to the images Compute runs: a repository and a
// sha256 digest, never a tag alone.
var digestReference = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]*@sha256:[a-f0-9]{64}$`)

// IsDigestReference reports whether ref names an image by repository and sha256 digest.
func IsDigestReference(ref string) bool { return digestReference.MatchString(ref) }

// ComputeExtras is a control plane's part of Kubernetes Compute's configuration, read from
// the development cluster: the Agent runtime's in-cluster digest reference for gateways and
// agents (every image required to be digest-pinned), Agent gateways placed on the cluster's
// one node, that node's Pod bridge as the plugin status proxy's source, and loopback as the
// only trusted proxy.
func ComputeExtras(ctx context.Context, kube kubernetes.Interface, runtimeImage string) (*platform.ComputeExtras, error) {
	if !IsDigestReference(runtimeImage) {
		return nil, fmt.Errorf("Agent runtime image %q is not an in-cluster digest reference (<repository>@sha256:<64 hex>): import it into the cluster first", runtimeImage)
	}
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
		// The node's bridge holds the first address of its Pod range.
		PluginStatusProxySourceCIDRs: []string{netip.PrefixFrom(prefix.Masked().Addr().Next(), 32).String()},
		GatewayTrustedProxyCIDRs:     []string{"127.0.0.1/32"},
	}, nil
}
