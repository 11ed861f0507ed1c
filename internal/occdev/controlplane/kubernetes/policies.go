package kubernetes

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// chartComponents selects the OCE chart's Pods of the given components.
func chartComponents(components ...string) metav1.LabelSelector {
	return metav1.LabelSelector{
		MatchLabels: map[string]string{labelName: oceAppName, labelInstance: ReleaseName},
		MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: labelComponent, Operator: metav1.LabelSelectorOpIn, Values: components,
		}},
	}
}

func tcpPort(port int32) []networkingv1.NetworkPolicyPort {
	p := intstr.FromInt32(port)
	return []networkingv1.NetworkPolicyPort{{Protocol: ptr(corev1.ProtocolTCP), Port: &p}}
}

// RestartEgressPolicies keep the control plane working after `k3d cluster stop/start`. The
// chart admits PostgreSQL and the Kubernetes API only as the /32 addresses they had at install
// time, and both can change when the node restarts; these policies admit the PostgreSQL Pods by
// label and the API server by the node network's subnet on the API port.
func RestartEgressPolicies(namespace string, own Ownership, nodeSubnet netip.Prefix, apiPort int32) []*networkingv1.NetworkPolicy {
	return []*networkingv1.NetworkPolicy{
		{
			ObjectMeta: metav1.ObjectMeta{Name: PostgresEgressPolicy, Namespace: namespace, Labels: own.with(nil)},
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: chartComponents("api", "worker", "initialization"),
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
				Egress: []networkingv1.NetworkPolicyEgressRule{{
					To:    []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: postgresLabels()}}},
					Ports: tcpPort(PostgresPort),
				}},
			},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: KubernetesEgressPolicy, Namespace: namespace, Labels: own.with(nil)},
			Spec: networkingv1.NetworkPolicySpec{
				PodSelector: chartComponents("api", "worker", "initialization", "collector"),
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
				Egress: []networkingv1.NetworkPolicyEgressRule{{
					To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: nodeSubnet.String()}}},
					Ports: tcpPort(apiPort),
				}},
			},
		},
	}
}

// SelectNodeSubnet picks, among the node network's subnets (the engine's IPAM configuration of
// the cluster network), the IPv4 subnet that contains the Kubernetes API endpoint. It must be
// canonical and no broader than /16: the policy opens the API port to the whole subnet.
func SelectNodeSubnet(network string, subnets []string, endpoint netip.Addr) (netip.Prefix, error) {
	var tried []string
	for _, s := range subnets {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil || !p.Addr().Is4() {
			tried = append(tried, s)
			continue
		}
		if p.Masked() != p {
			return netip.Prefix{}, fmt.Errorf("network %s reports subnet %s, which is not canonical (its network address is %s)", network, s, p.Masked())
		}
		if !p.Contains(endpoint) {
			tried = append(tried, s)
			continue
		}
		if p.Bits() < 16 {
			return netip.Prefix{}, fmt.Errorf("k3d network subnet %s is broader than /16: the restart egress policy would open the Kubernetes API port to all of it; give the cluster network a /16 or narrower subnet", p)
		}
		return p, nil
	}
	return netip.Prefix{}, fmt.Errorf("k3d network %s has no IPv4 subnet containing the Kubernetes API endpoint %s (subnets: %s)", network, endpoint, strings.Join(tried, ", "))
}
