package kubernetes

import (
	"context"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"

	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/platform"
)

// InstallationInput is what the Kubernetes-only profile contributes to the development
// Installation; the platform's Installation builder writes it. The
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
	// Compute is Kubernetes Compute's part read from the cluster, as for every control plane
	// (controlplane.ComputeExtras): the Agent runtime by in-cluster digest, every image
	// digest-pinned, Agent gateways on the one node.
	Compute *platform.ComputeExtras
}

// Authentication is a Kubernetes driver's authentication block.
type Authentication struct {
	Mode string `yaml:"mode" json:"mode"`
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

// BuildInstallationInput reads the Gateway Service and the cluster's node and returns the
// profile's Installation input.
func BuildInstallationInput(ctx context.Context, client clientset.Interface, req InstallationRequest) (InstallationInput, error) {
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
	extras, err := controlplane.ComputeExtras(ctx, client, req.RuntimeImage)
	if err != nil {
		return InstallationInput{}, err
	}
	return InstallationInput{
		Authentication:   Authentication{Mode: "inCluster"},
		GatewayEndpoint:  fmt.Sprintf("http://%s.%s.svc.cluster.local:%d", req.GatewayService, req.Namespace, req.GatewayPort),
		GatewayClusterIP: ip.String(),
		GatewayClients:   []APIClient{{Namespace: req.Namespace, PodLabels: ProxyPodLabels()}},
		Compute:          extras,
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
