package occdev

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/openclaw/occ/internal/kube"
	"github.com/openclaw/occ/internal/occdev/state"
)

// Ownership labels on every object `up` creates directly. The state label carries the state's
// random id, so an object is adopted (on a repeated step) or deleted (by `down`) only when it
// is exactly this state's: another developer's or another tool's object with the same name
// is refused, never taken over.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedByOCC   = "occ"
	LabelDevState  = "occ.openclaw.dev/dev-state"
)

// Object is a recorded object: a Kubernetes object, or the Helm release (kind
// state.TypeHelmRelease), which Helm itself tracks together with everything it installed.
type Object = state.Object

func objectOf(u *unstructured.Unstructured) Object {
	return Object{Type: state.TypeKubernetes, APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName(), UID: string(u.GetUID())}
}

// recorder is where steps write what they create; it is the private state in production.
type recorder interface {
	Record(o Object) error
}

// objectClient creates, deletes and inspects recorded objects through the dynamic client.
type objectClient struct {
	dyn     dynamic.Interface
	mapper  meta.ResettableRESTMapper
	stateID string
	rec     recorder
}

// toUnstructured converts a typed object, filling apiVersion and kind from client-go's scheme,
// so manifests can be written as k8s.io/api structs and still travel one generic path.
func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u, nil
	}
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return nil, fmt.Errorf("unknown object type %T: %v", obj, err)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("convert %T: %w", obj, err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvks[0])
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}

func (c *objectClient) resource(apiVersion, kind, namespace string) (dynamic.ResourceInterface, error) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, fmt.Errorf("apiVersion %q: %w", apiVersion, err)
	}
	mapping, err := c.mapper.RESTMapping(schema.GroupKind{Group: gv.Group, Kind: kind}, gv.Version)
	if err != nil {
		return nil, err
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		// A namespaced object must say where it goes: occ never falls back to a default
		// namespace, where it would mix with objects it does not own.
		if namespace == "" {
			return nil, fmt.Errorf("%s is namespaced but names no namespace", kind)
		}
		return c.dyn.Resource(mapping.Resource).Namespace(namespace), nil
	}
	return c.dyn.Resource(mapping.Resource), nil
}

// owned reports whether the live object carries this state's ownership label.
func (c *objectClient) owned(u *unstructured.Unstructured) bool {
	return u.GetLabels()[LabelDevState] == c.stateID
}

// ensure creates obj labelled as this state's, or adopts an existing object only when it
// already carries exactly this state's label (a repeated step); converge then server-side
// applies obj over it, otherwise the adopted object is kept as it is. The object is recorded
// before the create call and again with its uid afterwards.
func (c *objectClient) ensure(ctx context.Context, typed runtime.Object, converge bool) (*unstructured.Unstructured, error) {
	obj, err := toUnstructured(typed)
	if err != nil {
		return nil, err
	}
	obj = obj.DeepCopy()
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelManagedBy] = ManagedByOCC
	labels[LabelDevState] = c.stateID
	obj.SetLabels(labels)
	what := kube.Describe(obj)

	ri, err := c.resource(obj.GetAPIVersion(), obj.GetKind(), obj.GetNamespace())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	for attempt := 0; attempt < 2; attempt++ {
		live, err := ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
		switch {
		case err == nil:
			return c.adopt(ctx, ri, obj, live, converge)
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("read %s: %w", what, err)
		}
		if err := c.rec.Record(objectOf(obj)); err != nil {
			return nil, fmt.Errorf("record %s in state before creating it: %w", what, err)
		}
		created, err := ri.Create(ctx, obj, metav1.CreateOptions{FieldManager: kube.FieldManager})
		if apierrors.IsAlreadyExists(err) {
			continue // created by someone else since the read: decide on ownership again
		}
		if err != nil {
			return nil, fmt.Errorf("create %s: %w", what, err)
		}
		if err := c.rec.Record(objectOf(created)); err != nil {
			return nil, fmt.Errorf("record %s in state: %w", what, err)
		}
		return created, nil
	}
	return nil, fmt.Errorf("create %s: it keeps appearing and disappearing; retry", what)
}

// adopt accepts an existing object only on exact ownership, then converges it to obj.
func (c *objectClient) adopt(ctx context.Context, ri dynamic.ResourceInterface, obj, live *unstructured.Unstructured, converge bool) (*unstructured.Unstructured, error) {
	what := kube.Describe(obj)
	if !c.owned(live) {
		return nil, fmt.Errorf("%s already exists and is not owned by this development state (label %s=%s is missing): "+
			"occ never takes over objects it did not create; remove it or use another cluster or --namespace", what, LabelDevState, c.stateID)
	}
	if live.GetDeletionTimestamp() != nil {
		return nil, fmt.Errorf("%s is being deleted: wait until it is gone, then retry", what)
	}
	if err := c.rec.Record(objectOf(live)); err != nil {
		return nil, fmt.Errorf("record %s in state: %w", what, err)
	}
	if !converge {
		return live, nil
	}
	obj.SetResourceVersion("")
	body, err := obj.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", what, err)
	}
	force := true
	applied, err := ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: kube.FieldManager, Force: &force})
	if err != nil {
		return nil, fmt.Errorf("apply %s: %w", what, err)
	}
	return applied, nil
}

// Liveness of a recorded object compared with the cluster.
const (
	LivePresent     = "present"
	LiveMissing     = "missing"
	LiveChanged     = "changed"
	LiveTerminating = "terminating"
)

// live reads a recorded object and says whether it is still the one `up` created.
func (c *objectClient) live(ctx context.Context, o Object) (string, *unstructured.Unstructured, error) {
	ri, err := c.resource(o.APIVersion, o.Kind, o.Namespace)
	if meta.IsNoMatchError(err) {
		// The kind itself is gone (its CRD was deleted), and with it every object of the kind.
		return LiveMissing, nil, nil
	}
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", o, err)
	}
	u, err := ri.Get(ctx, o.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return LiveMissing, nil, nil
	}
	if err != nil {
		return "", nil, fmt.Errorf("read %s: %w", o, err)
	}
	if (o.UID != "" && string(u.GetUID()) != o.UID) || (o.UID == "" && !c.owned(u)) {
		return LiveChanged, u, nil
	}
	if u.GetDeletionTimestamp() != nil {
		return LiveTerminating, u, nil
	}
	return LivePresent, u, nil
}

// errNotOurs reports a recorded name now held by an object `up` did not create.
var errNotOurs = errors.New("not the object occ created")

// remove deletes a recorded object if, and only if, it is still the one `up` created. It
// reports whether anything of ours remains: a missing object, or one replaced by someone else
// (a different uid, no ownership label), counts as gone; a Namespace counts as gone once its
// deletion has started, because the namespace controller finishes it.
func (c *objectClient) remove(ctx context.Context, o Object) (note string, err error) {
	state, u, err := c.live(ctx, o)
	if err != nil {
		return "", err
	}
	switch state {
	case LiveMissing:
		return "", nil
	case LiveChanged:
		return fmt.Sprintf("left %s alone: %v (uid or ownership label differs)", o, errNotOurs), nil
	case LiveTerminating:
		return "", nil
	}
	ri, err := c.resource(o.APIVersion, o.Kind, o.Namespace)
	if err != nil {
		return "", fmt.Errorf("%s: %w", o, err)
	}
	uid := u.GetUID()
	policy := metav1.DeletePropagationBackground
	err = ri.Delete(ctx, o.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &policy})
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return "", nil
	case apierrors.IsConflict(err):
		return fmt.Sprintf("left %s alone: %v (replaced while deleting)", o, errNotOurs), nil
	default:
		return "", fmt.Errorf("delete %s: %w", o, err)
	}
}
