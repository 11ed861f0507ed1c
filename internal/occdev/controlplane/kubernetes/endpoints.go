package kubernetes

import (
	"context"
	"fmt"
	"net/netip"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientset "k8s.io/client-go/kubernetes"
)

// PostgresPodIP reads the PostgreSQL Pod's IPv4 address, which the chart's egress policies
// admit as a /32.
func PostgresPodIP(ctx context.Context, client clientset.Interface, namespace string) (netip.Addr, error) {
	pod, err := client.CoreV1().Pods(namespace).Get(ctx, PostgresPod, metav1.GetOptions{})
	if err != nil {
		return netip.Addr{}, fmt.Errorf("resolve PostgreSQL Pod IP: %w", err)
	}
	ip, err := netip.ParseAddr(pod.Status.PodIP)
	if err != nil || !ip.Is4() {
		return netip.Addr{}, fmt.Errorf("resolve PostgreSQL Pod IP: Pod %s/%s reports %q, not an IPv4 address", namespace, PostgresPod, pod.Status.PodIP)
	}
	return ip, nil
}

// KubernetesAPIEndpoint reads the API server's own address and port from the EndpointSlice of
// Service default/kubernetes, which the API server maintains itself (k3s reports the node
// address and 6443). The chart admits the API only there, so Pods can reach it without the
// Service's virtual IP.
func KubernetesAPIEndpoint(ctx context.Context, client clientset.Interface) (netip.AddrPort, error) {
	slices, err := client.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{
		LabelSelector: discoveryv1.LabelServiceName + "=kubernetes",
	})
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("resolve Kubernetes API endpoint IP: %w", err)
	}
	for _, s := range slices.Items {
		if s.AddressType != discoveryv1.AddressTypeIPv4 || len(s.Ports) == 0 || s.Ports[0].Port == nil {
			continue
		}
		port := *s.Ports[0].Port
		if port < 1 || port > 65535 {
			return netip.AddrPort{}, fmt.Errorf("Kubernetes API endpoint reported an invalid port %d", port)
		}
		for _, ep := range s.Endpoints {
			for _, a := range ep.Addresses {
				ip, err := netip.ParseAddr(a)
				if err == nil && ip.Is4() {
					return netip.AddrPortFrom(ip, uint16(port)), nil
				}
			}
		}
	}
	return netip.AddrPort{}, fmt.Errorf("resolve Kubernetes API endpoint IP: the EndpointSlices of Service default/kubernetes list no IPv4 address with a port")
}
