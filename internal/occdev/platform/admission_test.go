package platform

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/testbed"
)

// admittedPods asks the real apiserver which Pods the policy's ingress peers select: for each
// peer, the namespaces its namespace selector matches (the policy's own namespace when it has
// none), then the Pods there its Pod selector matches. This is the selection a CNI enforces;
// the bed has no CNI, so the test checks what is selected, not packets.
func admittedPods(ctx context.Context, t *testing.T, c kubernetes.Interface, p *networkingv1.NetworkPolicy) []string {
	t.Helper()
	var admitted []string
	for _, rule := range p.Spec.Ingress {
		for _, peer := range rule.From {
			namespaces := []string{p.Namespace}
			if peer.NamespaceSelector != nil {
				sel, err := metav1.LabelSelectorAsSelector(peer.NamespaceSelector)
				if err != nil {
					t.Fatalf("namespace selector %+v: %v", peer.NamespaceSelector, err)
				}
				list, err := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
				if err != nil {
					t.Fatalf("list namespaces %q: %v", sel, err)
				}
				namespaces = nil
				for _, ns := range list.Items {
					namespaces = append(namespaces, ns.Name)
				}
			}
			sel, err := metav1.LabelSelectorAsSelector(peer.PodSelector)
			if err != nil {
				t.Fatalf("pod selector %+v: %v", peer.PodSelector, err)
			}
			for _, ns := range namespaces {
				pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
				if err != nil {
					t.Fatalf("list Pods in %s with %q: %v", ns, sel, err)
				}
				for _, pod := range pods.Items {
					admitted = append(admitted, pod.Namespace+"/"+pod.Name)
				}
			}
		}
	}
	slices.Sort(admitted)
	return slices.Compact(admitted)
}

// The Gateway ingress policy, as the real apiserver stores it, admits an Agent Gateway Pod in a
// namespace OCE labelled as a gateway namespace, and neither the same Pod in an unlabelled
// namespace, nor a Pod there without the gateway role, nor an unrelated Pod; the OCE API and
// tenant supervisors stay admitted.
func TestGatewayIngressAdmitsAgentGatewaysOnTheRealAPIServer(t *testing.T) {
	ctx := context.Background()
	c := testbed.Client(t)
	const system, tenant, gateways, stray = "adm-oce-system", "adm-tenant", "adm-gateways", "adm-stray"
	for name, labels := range map[string]map[string]string{
		system:   nil,
		tenant:   {contract.LabelOperatorWorkspace: contract.OperatorWorkspaceValue, contract.LabelNamespace: "ns-1"},
		gateways: {contract.LabelGatewayNamespace: "ns-1", contract.LabelNamespace: "ns-1"},
		stray:    {contract.LabelNamespace: "ns-1"},
	} {
		if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create namespace %s: %v", name, err)
		}
	}
	pod := func(ns, name string, labels map[string]string) {
		t.Helper()
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/c@sha256:" + sha}}},
		}
		if _, err := c.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create Pod %s/%s: %v", ns, name, err)
		}
	}
	agentGateway := agentGatewayPodLabels()
	pod(system, "oce-api", map[string]string{contract.LabelName: oceAppName, contract.LabelInstance: oceAppName, contract.LabelComponent: "api"})
	pod(system, "oce-migrate", map[string]string{contract.LabelName: oceAppName, contract.LabelInstance: oceAppName, contract.LabelComponent: "migrate"})
	pod(tenant, "supervisor", supervisorPodLabels())
	pod(tenant, "harness", map[string]string{contract.LabelManagedBy: contract.ManagedByOCE})
	pod(gateways, "agent-gateway", agentGateway)
	pod(gateways, "agent-harness", map[string]string{contract.LabelManagedBy: contract.ManagedByOCE, contract.LabelWorkloadRole: "harness"})
	pod(stray, "agent-gateway", agentGateway)

	created, err := c.NetworkingV1().NetworkPolicies(system).Create(ctx, gatewayIngressPolicy(system), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the apiserver refused the Gateway ingress policy: %v", err)
	}
	got := admittedPods(ctx, t, c, created)
	want := []string{gateways + "/agent-gateway", system + "/oce-api", tenant + "/supervisor"}
	if !slices.Equal(got, want) {
		t.Fatalf("the Gateway ingress policy admits %v, want exactly %v", got, want)
	}
	if ports := created.Spec.Ingress[0].Ports; len(ports) != 1 || *ports[0].Protocol != corev1.ProtocolTCP || ports[0].Port.IntValue() != GatewayPort {
		t.Fatalf("admitted ports %+v, want only TCP %d", ports, GatewayPort)
	}
}

const sha = "0000000000000000000000000000000000000000000000000000000000000000"
