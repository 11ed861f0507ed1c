package kubeobj

import (
	"context"
	"fmt"
	"sort"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/openclaw/occ/internal/kube"
	"github.com/openclaw/occ/internal/occdev/step"
)

// EnsureManifest ensures every object of a release manifest (Converge). Namespaces and
// CustomResourceDefinitions go first, and the CRDs must be Established (waited for by watch, up
// to timeout) before anything else, so a manifest that also carries custom resources applies
// in one pass.
func (c *Conn) EnsureManifest(ctx context.Context, objs []*unstructured.Unstructured, timeout time.Duration) error {
	ordered := ManifestOrder(objs)
	crdsDone := false
	for i, u := range ordered {
		if rank(u) == 2 && !crdsDone {
			if err := c.waitCRDsEstablished(ctx, ordered[:i], timeout); err != nil {
				return err
			}
			crdsDone = true
		}
		if _, err := c.Ensure(ctx, u, Converge); err != nil {
			return err
		}
	}
	if !crdsDone {
		return c.waitCRDsEstablished(ctx, ordered, timeout)
	}
	return nil
}

// rank is an object's place in ManifestOrder: namespaces, then CRDs, then everything else.
func rank(u *unstructured.Unstructured) int {
	switch u.GroupVersionKind().GroupKind().String() {
	case "Namespace":
		return 0
	case "CustomResourceDefinition.apiextensions.k8s.io":
		return 1
	}
	return 2
}

// ManifestOrder is objs in the order EnsureManifest applies them: namespaces, then CRDs, then
// everything else, each in file order.
func ManifestOrder(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	ordered := append([]*unstructured.Unstructured(nil), objs...)
	sort.SliceStable(ordered, func(i, j int) bool { return rank(ordered[i]) < rank(ordered[j]) })
	return ordered
}

// DescribeManifest is the dry run's account of EnsureManifest of objs: each object as its
// record names it, in the order they are applied.
func DescribeManifest(objs []*unstructured.Unstructured) []step.Object {
	ordered := ManifestOrder(objs)
	out := make([]runtime.Object, len(ordered))
	for i, u := range ordered {
		out[i] = u
	}
	return Describe(out, nil)
}

// waitCRDsEstablished waits by watch until every CRD among objs serves, then refreshes the
// kind mapping so the new kinds resolve.
func (c *Conn) waitCRDsEstablished(ctx context.Context, objs []*unstructured.Unstructured, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	crds := apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")
	ri := c.dyn.Resource(crds)
	for _, u := range objs {
		if u.GetKind() != "CustomResourceDefinition" {
			continue
		}
		sel := fields.OneTermEqualSelector("metadata.name", u.GetName()).String()
		lw := &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				o.FieldSelector = sel
				return ri.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				o.FieldSelector = sel
				return ri.Watch(ctx, o)
			},
		}
		err := kube.WaitForNamedObject(ctx, lw, &unstructured.Unstructured{}, "CustomResourceDefinition "+u.GetName(), func(o runtime.Object) bool {
			crd, ok := o.(*unstructured.Unstructured)
			if !ok {
				return false
			}
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == string(apiextensionsv1.Established) && m["status"] == string(apiextensionsv1.ConditionTrue) {
					return true
				}
			}
			return false
		})
		if err != nil {
			return fmt.Errorf("wait up to %s for CustomResourceDefinition %s to be established (raise --startup-timeout if the apiserver is slow): %w", timeout, u.GetName(), err)
		}
	}
	c.ResetMapper()
	return nil
}
