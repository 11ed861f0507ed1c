package state

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// Ref makes the record entry of a live Kubernetes object: its kind, apiVersion, namespace, name
// and UID, and nothing else. Only metadata is read, so recording a Secret can never copy its
// data into state.json. Typed objects returned by client-go carry no apiVersion/kind, so those
// come from the client-go scheme when the object does not say.
func Ref(obj runtime.Object) (Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return Object{}, fmt.Errorf("record object: %w", err)
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Empty() {
		kinds, _, err := scheme.Scheme.ObjectKinds(obj)
		if err != nil || len(kinds) == 0 {
			return Object{}, fmt.Errorf("record %T %q: unknown kind; set apiVersion and kind on the object", obj, m.GetName())
		}
		gvk = kinds[0]
	}
	apiVersion, kind := gvk.ToAPIVersionAndKind()
	return Object{
		Type:       TypeKubernetes,
		Kind:       kind,
		APIVersion: apiVersion,
		Namespace:  m.GetNamespace(),
		Name:       m.GetName(),
		UID:        string(m.GetUID()),
	}, nil
}
