package kubernetes

import (
	"context"
	"fmt"
	"net/netip"
	"regexp"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
)

// InstallationInput is what the Kubernetes-only profile contributes to the development
// Installation (fact sheet behaviour §5); the platform's Installation builder writes it. The
// YAML tags are the Installation's key names.
type InstallationInput struct {
	// Authentication is how OCE's Kubernetes drivers reach the cluster: from inside it.
	Authentication Authentication
	// GatewayEndpoint is the OpenShell Backend endpoint: the Gateway Service's cluster DNS name,
	// checked to resolve to a Service with a ClusterIP and the Gateway port.
	GatewayEndpoint string
	// GatewayClusterIP is the Gateway Service's ClusterIP (network.providerHarness.address).
	GatewayClusterIP string
	// GatewayClients are the Pods admitted to Agent gateways (network.gatewayClients): the
	// development proxy in the platform namespace.
	GatewayClients []APIClient
	// Images are Kubernetes Compute's images: the Agent runtime's in-cluster digest for both
	// the gateway and the agent, and the demand that every image be digest-pinned.
	Images ComputeImages
	// Runtime places Agent gateways on the cluster's node and storage.
	Runtime ComputeRuntime
	// PluginStatusProxySourceCIDRs is the node's pod-bridge address as a /32, where the
	// kubelet's connections to Pods come from (network.pluginStatusProxySourceCidrs).
	PluginStatusProxySourceCIDRs []string
	// GatewayTrustedProxyCIDRs is loopback only: no routing proxy is installed.
	GatewayTrustedProxyCIDRs []string
}

// Authentication is a Kubernetes driver's authentication block.
type Authentication struct {
	Mode string `yaml:"mode" json:"mode"`
}

// ComputeImages is drivers.compute.configuration.images.
type ComputeImages struct {
	Gateway                string `yaml:"gateway" json:"gateway"`
	Agent                  string `yaml:"agent" json:"agent"`
	RequireImmutableDigest bool   `yaml:"requireImmutableDigest" json:"requireImmutableDigest"`
}

// ComputeRuntime is drivers.compute.configuration.runtime.
type ComputeRuntime struct {
	GatewayStorageClassName string            `yaml:"gatewayStorageClassName" json:"gatewayStorageClassName"`
	TransportSecretPrefix   string            `yaml:"transportSecretPrefix" json:"transportSecretPrefix"`
	GatewayNodeSelector     map[string]string `yaml:"gatewayNodeSelector" json:"gatewayNodeSelector"`
}

// InstallationRequest says where the Gateway runs and which runtime image was imported.
type InstallationRequest struct {
	// Namespace is the platform namespace, home of the Gateway and of the proxy.
	Namespace string
	// GatewayService and GatewayPort name the Gateway's Service (the platform's constants).
	GatewayService string
	GatewayPort    int32
	// RuntimeImage is the Agent runtime's in-cluster digest reference.
	RuntimeImage string
}

// digestReference is the rule OCE applies to images (the chart's and Compute's).
var digestReference = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/-]*@sha256:[a-f0-9]{64}$`)

// transportSecretPrefix names the per-Agent transport Secrets Compute creates.
const transportSecretPrefix = "openclaw-agent-transport"

// BuildInstallationInput reads the Gateway Service and the cluster's node and returns the
// profile's Installation input.
func BuildInstallationInput(ctx context.Context, client clientset.Interface, req InstallationRequest) (InstallationInput, error) {
	if !digestReference.MatchString(req.RuntimeImage) {
		return InstallationInput{}, fmt.Errorf("Agent runtime image %q is not an in-cluster digest reference (<repository>@sha256:<64 hex>): import it into the cluster first", req.RuntimeImage)
	}
	svc, err := client.CoreV1().Services(req.Namespace).Get(ctx, req.GatewayService, metav1.GetOptions{})
	if err != nil {
		return InstallationInput{}, fmt.Errorf("read the OpenShell Gateway Service %s/%s: %w", req.Namespace, req.GatewayService, err)
	}
	ip, err := netip.ParseAddr(svc.Spec.ClusterIP)
	if err != nil {
		return InstallationInput{}, fmt.Errorf("OpenShell Gateway returned an invalid ClusterIP %q on Service %s/%s: the Backend endpoint needs a ClusterIP Service", svc.Spec.ClusterIP, req.Namespace, req.GatewayService)
	}
	if !servesPort(svc, req.GatewayPort) {
		return InstallationInput{}, fmt.Errorf("OpenShell Gateway Service %s/%s does not serve port %d: the pinned Gateway chart is not the one occ expects", req.Namespace, req.GatewayService, req.GatewayPort)
	}
	node, err := onlyNode(ctx, client)
	if err != nil {
		return InstallationInput{}, err
	}
	bridge, err := podBridge(node)
	if err != nil {
		return InstallationInput{}, err
	}
	hostname := node.Labels[corev1.LabelHostname]
	if hostname == "" {
		hostname = node.Name
	}
	return InstallationInput{
		Authentication:   Authentication{Mode: "inCluster"},
		GatewayEndpoint:  fmt.Sprintf("http://%s.%s.svc.cluster.local:%d", req.GatewayService, req.Namespace, req.GatewayPort),
		GatewayClusterIP: ip.String(),
		GatewayClients:   []APIClient{{Namespace: req.Namespace, PodLabels: ProxyPodLabels()}},
		Images:           ComputeImages{Gateway: req.RuntimeImage, Agent: req.RuntimeImage, RequireImmutableDigest: true},
		Runtime: ComputeRuntime{
			GatewayStorageClassName: StorageClassName,
			TransportSecretPrefix:   transportSecretPrefix,
			GatewayNodeSelector:     map[string]string{corev1.LabelHostname: hostname},
		},
		PluginStatusProxySourceCIDRs: []string{netip.PrefixFrom(bridge, 32).String()},
		GatewayTrustedProxyCIDRs:     []string{"127.0.0.1/32"},
	}, nil
}

func servesPort(svc *corev1.Service, port int32) bool {
	for _, p := range svc.Spec.Ports {
		if p.Port == port {
			return true
		}
	}
	return false
}

// onlyNode returns the cluster's single node: the profile's k3d cluster has one server and no
// agents, and Agent gateways are pinned to it.
func onlyNode(ctx context.Context, client clientset.Interface) (*corev1.Node, error) {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list the cluster's nodes: %w", err)
	}
	if len(nodes.Items) != 1 {
		return nil, fmt.Errorf("the Kubernetes-only profile expects a cluster with exactly one node, found %d", len(nodes.Items))
	}
	return &nodes.Items[0], nil
}

// podBridge is the first address of the node's Pod range, which the node's bridge holds.
func podBridge(node *corev1.Node) (netip.Addr, error) {
	p, err := netip.ParsePrefix(node.Spec.PodCIDR)
	if err != nil || !p.Addr().Is4() {
		return netip.Addr{}, fmt.Errorf("node %s has no IPv4 Pod range (spec.podCIDR %q): cannot tell where its bridge connects to Pods from", node.Name, node.Spec.PodCIDR)
	}
	return p.Masked().Addr().Next(), nil
}
