package compute

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	applymetav1 "k8s.io/client-go/applyconfigurations/meta/v1"
	applynetworkingv1 "k8s.io/client-go/applyconfigurations/networking/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/kube"
)

// Compute stamps driver.LabelManagedBy, driver.LabelNamespace and driver.AnnotationNamespaceID
// on the physical namespace and on every baseline object. They let a later run (or a human)
// tell an OCC-owned namespace from a stranger's of the same name, and they are what namespace
// adoption checks exactly.

// Names of the baseline objects in every physical namespace.
const (
	ResourceQuotaName             = "occ-baseline-quota"
	LimitRangeName                = "occ-container-defaults"
	DenyIngressNetworkPolicyName  = "occ-default-deny-ingress"
	DenyEgressNetworkPolicyName   = "occ-default-deny-egress"
	namespaceTerminatingRetryHint = "wait for the namespace to finish terminating, then retry"
)

// Baseline is the Kubernetes isolation Compute applies to every physical namespace before any
// Sandbox driver sees it: a ResourceQuota, container defaults in a LimitRange, and
// default-deny ingress and egress NetworkPolicies. Drivers may add narrower allows (the
// OpenShell supervisor callback policy, for instance); they can never remove these.
type Baseline struct {
	// Quota is the ResourceQuota's hard limits.
	Quota corev1.ResourceList
	// DefaultRequests and DefaultLimits are the LimitRange container defaults, applied to any
	// container that does not declare its own.
	DefaultRequests corev1.ResourceList
	DefaultLimits   corev1.ResourceList
}

// DefaultBaseline returns the development profile's values: at most ten Pods, and containers
// that declare nothing get 100m/256Mi requested and 2 CPUs/2Gi as limits.
func DefaultBaseline() Baseline {
	return Baseline{
		Quota: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")},
		DefaultRequests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("100m"),
			corev1.ResourceMemory: resource.MustParse("256Mi"),
		},
		DefaultLimits: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("2"),
			corev1.ResourceMemory: resource.MustParse("2Gi"),
		},
	}
}

// Validate checks the baseline before anything is applied, so a bad value never leaves a
// namespace half-isolated.
func (b Baseline) Validate() error {
	if len(b.Quota) == 0 {
		return fmt.Errorf("baseline quota is empty: Compute refuses to prepare a namespace without a ResourceQuota; set at least pods")
	}
	for name, limit := range b.DefaultLimits {
		req, ok := b.DefaultRequests[name]
		if ok && req.Cmp(limit) > 0 {
			return fmt.Errorf("baseline container default request %s=%s exceeds its limit %s: lower the request or raise the limit", name, req.String(), limit.String())
		}
	}
	for name, q := range b.Quota {
		if q.Sign() < 0 {
			return fmt.Errorf("baseline quota %s=%s is negative: quotas must be non-negative quantities", name, q.String())
		}
	}
	return nil
}

// ownershipLabels are the labels on the namespace and on every baseline object.
func ownershipLabels(namespaceID string) map[string]string {
	return map[string]string{driver.LabelManagedBy: driver.ManagedByValue, driver.LabelNamespace: namespaceID}
}

// EnsurePhysicalNamespace creates the Kubernetes namespace for an OCC Namespace, or adopts an
// existing one only when it carries exactly this Namespace's ownership labels. A namespace of
// the derived name that belongs to someone else, or to another OCC Namespace, is refused
// rather than taken over; one that is terminating is reported as retryable.
//
// The namespace is created with a plain Create rather than an apply: an apply would silently
// take over a same-named namespace created by someone else between our read and our write,
// whereas Create fails with AlreadyExists and sends us back to the ownership check.
func EnsurePhysicalNamespace(ctx context.Context, c kubernetes.Interface, namespaceID string) (string, error) {
	name, err := PhysicalNamespaceName(namespaceID)
	if err != nil {
		return "", err
	}
	ns, err := c.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		ns = &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      ownershipLabels(namespaceID),
			Annotations: map[string]string{driver.AnnotationNamespaceID: namespaceID},
		}}
		_, err = c.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{FieldManager: kube.FieldManager})
		if err == nil {
			return name, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("create namespace %s for OCC Namespace %s: %w", name, namespaceID, err)
		}
		// A concurrent preparation (or someone else) won the race: judge what is there now.
		ns, err = c.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return "", fmt.Errorf("read namespace %s for OCC Namespace %s: %w", name, namespaceID, err)
	}
	if err := checkNamespaceOwnership(ns, namespaceID); err != nil {
		return "", err
	}
	if ns.DeletionTimestamp != nil {
		return "", fmt.Errorf("namespace %s for OCC Namespace %s is terminating: %s", name, namespaceID, namespaceTerminatingRetryHint)
	}
	return name, nil
}

// checkNamespaceOwnership refuses a namespace without this OCC Namespace's exact labels.
func checkNamespaceOwnership(ns *corev1.Namespace, namespaceID string) error {
	for k, want := range ownershipLabels(namespaceID) {
		if got, ok := ns.Labels[k]; !ok || got != want {
			return fmt.Errorf("refusing Kubernetes namespace %s without exact OCC Namespace ownership: label %s is %q, want %q; it belongs to someone else, so delete or rename it, or use another OCC Namespace ID",
				ns.Name, k, got, want)
		}
	}
	return nil
}

// ApplyBaseline server-side applies the baseline isolation objects into the physical namespace
// with occ's field manager. Applying is idempotent: the same inputs leave the same objects,
// however often it runs. The quota and container defaults go first and the default-deny
// policies last, so that at no point can a Pod in the namespace reach further than the final
// state allows (there are no Pods before Compute asks for one).
func ApplyBaseline(ctx context.Context, c kubernetes.Interface, namespaceID, namespace string, b Baseline) error {
	if err := b.Validate(); err != nil {
		return err
	}
	labels := ownershipLabels(namespaceID)
	annotations := map[string]string{driver.AnnotationNamespaceID: namespaceID}
	opts := metav1.ApplyOptions{FieldManager: kube.FieldManager, Force: true}

	quota := applycorev1.ResourceQuota(ResourceQuotaName, namespace).
		WithLabels(labels).WithAnnotations(annotations).
		WithSpec(applycorev1.ResourceQuotaSpec().WithHard(b.Quota))
	if _, err := c.CoreV1().ResourceQuotas(namespace).Apply(ctx, quota, opts); err != nil {
		return fmt.Errorf("apply ResourceQuota %s/%s: %w", namespace, ResourceQuotaName, err)
	}

	item := applycorev1.LimitRangeItem().WithType(corev1.LimitTypeContainer)
	if len(b.DefaultRequests) > 0 {
		item = item.WithDefaultRequest(b.DefaultRequests)
	}
	if len(b.DefaultLimits) > 0 {
		item = item.WithDefault(b.DefaultLimits)
	}
	limits := applycorev1.LimitRange(LimitRangeName, namespace).
		WithLabels(labels).WithAnnotations(annotations).
		WithSpec(applycorev1.LimitRangeSpec().WithLimits(item))
	if _, err := c.CoreV1().LimitRanges(namespace).Apply(ctx, limits, opts); err != nil {
		return fmt.Errorf("apply LimitRange %s/%s: %w", namespace, LimitRangeName, err)
	}

	for _, p := range []struct {
		name string
		typ  networkingv1.PolicyType
	}{
		{DenyIngressNetworkPolicyName, networkingv1.PolicyTypeIngress},
		{DenyEgressNetworkPolicyName, networkingv1.PolicyTypeEgress},
	} {
		// An empty pod selector selects every Pod; a policy type with no rules denies all
		// traffic of that direction. Other policies can only add allows on top.
		np := applynetworkingv1.NetworkPolicy(p.name, namespace).
			WithLabels(labels).WithAnnotations(annotations).
			WithSpec(applynetworkingv1.NetworkPolicySpec().
				WithPodSelector(applymetav1.LabelSelector()).
				WithPolicyTypes(p.typ))
		if _, err := c.NetworkingV1().NetworkPolicies(namespace).Apply(ctx, np, opts); err != nil {
			return fmt.Errorf("apply NetworkPolicy %s/%s: %w", namespace, p.name, err)
		}
	}
	return nil
}
