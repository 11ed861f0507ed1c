package kubernetes

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/occ/internal/occdev/platform"
)

const runtimeRef = "docker.io/library/openclaw-enterprise-runtime@sha256:2222222222222222222222222222222222222222222222222222222222222222"

// gatewayService stands in for the pinned Gateway chart's Service.
func gatewayService(ns, clusterIP string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "openshell-gateway", Namespace: ns},
		Spec: corev1.ServiceSpec{
			ClusterIP: clusterIP,
			Selector:  map[string]string{"app.kubernetes.io/name": "openshell"},
			Ports:     []corev1.ServicePort{{Name: "grpc", Port: 8080}},
		},
	}
}

// createNode registers the k3d server node the way k3s does (hostname label, Pod range).
func createNode(t *testing.T, b *bed) *corev1.Node {
	t.Helper()
	name := "k3d-occ-dev-" + suffix(t) + "-server-0"
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
		Spec:       corev1.NodeSpec{PodCIDR: "10.42.0.0/24"},
	}
	created, err := b.client.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.client.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
	return created
}

// The Kubernetes-only Installation: in-cluster authentication, the Gateway by its Service's
// cluster DNS name (checked to have a ClusterIP and the Gateway port), and Compute's images by
// in-cluster digest with requireImmutableDigest, Agent gateways pinned to the one node.
func TestInstallationInputForTheProfile(t *testing.T) {
	b := newBed(t)
	ctx := context.Background()
	svc, err := b.client.CoreV1().Services(b.ns).Create(ctx, gatewayService(b.ns, ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node := createNode(t, b)
	in, err := BuildInstallationInput(ctx, b.client, InstallationRequest{Namespace: b.ns, GatewayService: "openshell-gateway", GatewayPort: 8080, RuntimeImage: runtimeRef})
	if err != nil {
		t.Fatalf("BuildInstallationInput: %v", err)
	}
	if in.Authentication.Mode != "inCluster" {
		t.Errorf("authentication = %+v", in.Authentication)
	}
	if want := "http://openshell-gateway." + b.ns + ".svc.cluster.local:8080"; in.GatewayEndpoint != want {
		t.Errorf("endpoint %q, want %q", in.GatewayEndpoint, want)
	}
	if in.GatewayClusterIP != svc.Spec.ClusterIP || svc.Spec.ClusterIP == "" {
		t.Errorf("ClusterIP %q, Service has %q", in.GatewayClusterIP, svc.Spec.ClusterIP)
	}
	if c := in.Compute; c == nil || c.Images != (platform.ComputeImages{Gateway: runtimeRef, Agent: runtimeRef, RequireImmutableDigest: true}) ||
		c.Runtime.GatewayNodeSelector[corev1.LabelHostname] != node.Name || c.Runtime.GatewayStorageClassName != StorageClassName || c.Runtime.TransportSecretPrefix != "openclaw-agent-transport" ||
		len(c.PluginStatusProxySourceCIDRs) != 1 || c.PluginStatusProxySourceCIDRs[0] != "10.42.0.1/32" || len(c.GatewayTrustedProxyCIDRs) != 1 || c.GatewayTrustedProxyCIDRs[0] != "127.0.0.1/32" {
		t.Errorf("compute = %+v, want the runtime by digest on node %s with its bridge 10.42.0.1/32", c, node.Name)
	}
	if len(in.GatewayClients) != 1 || in.GatewayClients[0].Namespace != b.ns || in.GatewayClients[0].PodLabels[labelName] != DevelopmentClient {
		t.Errorf("gatewayClients = %+v", in.GatewayClients)
	}

	if _, err := BuildInstallationInput(ctx, b.client, InstallationRequest{Namespace: b.ns, GatewayService: "openshell-gateway", GatewayPort: 8080, RuntimeImage: "openclaw-enterprise-runtime:kubernetes-quickstart"}); err == nil || !strings.Contains(err.Error(), "not an in-cluster digest reference") {
		t.Errorf("a tag runtime image was accepted: %v", err)
	}
	if _, err := BuildInstallationInput(ctx, b.client, InstallationRequest{Namespace: b.ns, GatewayService: "openshell-gateway", GatewayPort: 9090, RuntimeImage: runtimeRef}); err == nil || !strings.Contains(err.Error(), "does not serve port 9090") {
		t.Errorf("a Gateway Service without the port was accepted: %v", err)
	}
}

// A headless Gateway Service has no ClusterIP the Backend could use: the reference's message.
func TestInstallationInputRefusesAHeadlessGateway(t *testing.T) {
	b := newBed(t)
	ctx := context.Background()
	if _, err := b.client.CoreV1().Services(b.ns).Create(ctx, gatewayService(b.ns, corev1.ClusterIPNone), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err := BuildInstallationInput(ctx, b.client, InstallationRequest{Namespace: b.ns, GatewayService: "openshell-gateway", GatewayPort: 8080, RuntimeImage: runtimeRef})
	if err == nil || !strings.Contains(err.Error(), "OpenShell Gateway returned an invalid ClusterIP") {
		t.Fatalf("a headless Gateway Service was accepted: %v", err)
	}
}
