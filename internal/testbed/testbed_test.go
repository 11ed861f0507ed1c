package testbed_test

import (
	"context"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"github.com/openclaw/occ/internal/testbed"
)

func TestMain(m *testing.M) { os.Exit(testbed.Run(m)) }

// A tenant namespace is prepared the way the driver will do it: labelled, then policy and RBAC
// objects server-side applied by the `occ` field manager, a Pod brought to Ready by the test
// playing the kubelet, and the namespace deleted again.
func TestRealAPIServerBed(t *testing.T) {
	ctx := context.Background()
	c := testbed.Client(t)
	const ns = "bed-proof"
	apply := metav1.ApplyOptions{FieldManager: "occ", Force: true}

	created, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: ns, Labels: map[string]string{"openshell.ai/openclaw-workspace": "true"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	if created.Labels["openshell.ai/openclaw-workspace"] != "true" {
		t.Fatalf("namespace label not stored: %v", created.Labels)
	}

	np := networkingv1ac.NetworkPolicy("default-deny", ns).WithSpec(networkingv1ac.NetworkPolicySpec().
		WithPodSelector(metav1ac.LabelSelector()).
		WithPolicyTypes(networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress))
	if _, err := c.NetworkingV1().NetworkPolicies(ns).Apply(ctx, np, apply); err != nil {
		t.Fatalf("apply NetworkPolicy: %v", err)
	}
	if _, err := c.CoreV1().ServiceAccounts(ns).Apply(ctx, corev1ac.ServiceAccount("workspace", ns), apply); err != nil {
		t.Fatalf("apply ServiceAccount: %v", err)
	}
	role := rbacv1ac.Role("workspace", ns).WithRules(rbacv1ac.PolicyRule().
		WithAPIGroups("").WithResources("pods").WithVerbs("get", "list", "watch"))
	if _, err := c.RbacV1().Roles(ns).Apply(ctx, role, apply); err != nil {
		t.Fatalf("apply Role: %v", err)
	}
	binding := rbacv1ac.RoleBinding("workspace", ns).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName("workspace")).
		WithSubjects(rbacv1ac.Subject().WithKind("ServiceAccount").WithName("workspace").WithNamespace(ns))
	if _, err := c.RbacV1().RoleBindings(ns).Apply(ctx, binding, apply); err != nil {
		t.Fatalf("apply RoleBinding: %v", err)
	}
	got, err := c.NetworkingV1().NetworkPolicies(ns).Get(ctx, "default-deny", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read back NetworkPolicy: %v", err)
	}
	if len(got.ManagedFields) == 0 || got.ManagedFields[0].Manager != "occ" {
		t.Fatalf("NetworkPolicy not owned by field manager occ: %+v", got.ManagedFields)
	}

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "harness", Namespace: ns},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "example.invalid/harness:1"}}},
	}
	if _, err := c.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Pod: %v", err)
	}
	testbed.MarkPodReady(ctx, t, c, ns, "harness")
	ready, err := c.CoreV1().Pods(ns).Get(ctx, "harness", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("read back Pod: %v", err)
	}
	if !podReady(ready) {
		t.Fatalf("Pod is not Ready after the status patch: %+v", ready.Status)
	}

	if err := c.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete namespace: %v", err)
	}
	// The bed has no namespace controller, so a deleted namespace stays Terminating; the
	// apiserver marking it so is the observable effect of the delete.
	after, err := c.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err == nil && after.DeletionTimestamp == nil {
		t.Fatalf("namespace %s not marked for deletion", ns)
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
