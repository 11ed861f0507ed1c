package kubeobj

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/kube"
	"github.com/openclaw/occ/internal/occdev/state"
)

// Ownership labels on every object a development state creates directly. The state label
// carries the state's owner id, so an object is adopted (on a repeated step) or deleted (by
// `down`) only when it is exactly this state's: another developer's or another tool's object
// with the same name is refused, never taken over.
const (
	LabelManagedBy = driver.LabelManagedBy
	ManagedByOCC   = "occ"
	LabelDevState  = "occ.openclaw.dev/dev-state"
)

// OwnerLabels are the ownership labels of owner's objects (also put on Helm releases).
func OwnerLabels(owner string) map[string]string {
	return map[string]string{LabelManagedBy: ManagedByOCC, LabelDevState: owner}
}

// Mode says what Ensure does with an object this state already owns.
type Mode int

const (
	// Converge server-side applies the wanted object over the adopted one.
	Converge Mode = iota
	// Keep leaves the adopted object as it is (a generated key must not be regenerated on a
	// repeated step).
	Keep
)

// Ref is the record of a live or wanted object.
func Ref(u *unstructured.Unstructured) state.Object {
	return state.Object{Type: TypeObject, APIVersion: u.GetAPIVersion(), Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName(), UID: string(u.GetUID())}
}

// ToUnstructured converts a typed object, filling apiVersion and kind from client-go's scheme,
// so manifests can be written as k8s.io/api structs and still travel one generic path.
func ToUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
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

func (c *Conn) resource(apiVersion, kind, namespace string) (dynamic.ResourceInterface, error) {
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

// servedWait bounds how long Ensure waits for a kind the apiserver does not serve yet.
const servedWait = 15 * time.Second

// resourceOnceServed is resource for a kind the mapping does not know: its CRD may have become
// Established a moment ago, and the apiserver's discovery, which the mapping reads, can lag
// behind that condition (measured on the bed: a route applied right after the routing
// controllers' CRDs). The mapping is refreshed and asked again every 250 ms, up to servedWait;
// then the no-match error stands.
func (c *Conn) resourceOnceServed(ctx context.Context, apiVersion, kind, namespace string) (dynamic.ResourceInterface, error) {
	deadline := time.Now().Add(servedWait)
	for {
		c.mapper.Reset()
		ri, err := c.resource(apiVersion, kind, namespace)
		if !meta.IsNoMatchError(err) || time.Now().After(deadline) {
			return ri, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// owned reports whether the live object carries this state's ownership label.
func (c *Conn) owned(u *unstructured.Unstructured) bool {
	return u.GetLabels()[LabelDevState] == c.owner
}

// Ensure creates obj labelled as this state's, or adopts an existing object only when it
// already carries exactly this state's label (a repeated step); Converge then server-side
// applies obj over it, Keep leaves it as it is. The object is recorded before the create call
// and again with its uid afterwards.
func (c *Conn) Ensure(ctx context.Context, typed runtime.Object, mode Mode) (*unstructured.Unstructured, error) {
	if c.rec == nil {
		return nil, errors.New("this connection records nothing, so it creates nothing (a bug in occ)")
	}
	obj, err := ToUnstructured(typed)
	if err != nil {
		return nil, err
	}
	obj = obj.DeepCopy()
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range OwnerLabels(c.owner) {
		labels[k] = v
	}
	obj.SetLabels(labels)
	what := kube.Describe(obj)

	ri, err := c.resource(obj.GetAPIVersion(), obj.GetKind(), obj.GetNamespace())
	if meta.IsNoMatchError(err) {
		ri, err = c.resourceOnceServed(ctx, obj.GetAPIVersion(), obj.GetKind(), obj.GetNamespace())
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	for attempt := 0; attempt < 2; attempt++ {
		live, err := ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
		switch {
		case err == nil:
			return c.adopt(ctx, ri, obj, live, mode)
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("read %s: %w", what, err)
		}
		if err := c.rec.Record(Ref(obj)); err != nil {
			return nil, fmt.Errorf("record %s in state before creating it: %w", what, err)
		}
		created, err := ri.Create(ctx, obj, metav1.CreateOptions{FieldManager: kube.FieldManager})
		if apierrors.IsAlreadyExists(err) {
			continue // created by someone else since the read: decide on ownership again
		}
		if err != nil {
			return nil, fmt.Errorf("create %s: %w", what, err)
		}
		if err := c.rec.Record(Ref(created)); err != nil {
			return nil, fmt.Errorf("record %s in state: %w", what, err)
		}
		return created, nil
	}
	return nil, fmt.Errorf("create %s: it keeps appearing and disappearing; retry", what)
}

// adopt accepts an existing object only on exact ownership, then converges it to obj.
func (c *Conn) adopt(ctx context.Context, ri dynamic.ResourceInterface, obj, live *unstructured.Unstructured, mode Mode) (*unstructured.Unstructured, error) {
	what := kube.Describe(obj)
	if !c.owned(live) {
		return nil, fmt.Errorf("%s already exists and is not owned by this development state (label %s=%s is missing): "+
			"occ never takes over objects it did not create; remove it or use another cluster or --namespace", what, LabelDevState, c.owner)
	}
	if live.GetDeletionTimestamp() != nil {
		return nil, fmt.Errorf("%s is being deleted: wait until it is gone, then retry", what)
	}
	if err := c.rec.Record(Ref(live)); err != nil {
		return nil, fmt.Errorf("record %s in state: %w", what, err)
	}
	if mode == Keep {
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

// live reads a recorded object and says whether it is still the one `up` created.
func (c *Conn) live(ctx context.Context, o state.Object) (state.Inspection, *unstructured.Unstructured, error) {
	ri, err := c.resource(o.APIVersion, o.Kind, o.Namespace)
	if meta.IsNoMatchError(err) {
		// The kind itself is gone (its CRD was deleted), and with it every object of the kind.
		return state.Inspection{State: state.Missing, Detail: "its kind is no longer served"}, nil, nil
	}
	if err != nil {
		return state.Inspection{}, nil, fmt.Errorf("%s: %w", o, err)
	}
	u, err := ri.Get(ctx, o.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return state.Inspection{State: state.Missing}, nil, nil
	}
	if err != nil {
		return state.Inspection{}, nil, fmt.Errorf("read %s: %w", o, err)
	}
	switch {
	case o.UID != "" && string(u.GetUID()) != o.UID:
		return state.Inspection{State: state.Changed, Detail: fmt.Sprintf("recorded uid %s, live uid %s", o.UID, u.GetUID())}, u, nil
	case o.UID == "" && !c.owned(u):
		return state.Inspection{State: state.Changed, Detail: "it does not carry this state's ownership label"}, u, nil
	case u.GetDeletionTimestamp() != nil:
		return state.Inspection{State: state.Terminating}, u, nil
	}
	return state.Inspection{State: state.Present}, u, nil
}

// Inspect reports whether a recorded object is still the one `up` created.
func (c *Conn) Inspect(ctx context.Context, o state.Object) state.Inspection {
	in, _, err := c.live(ctx, o)
	if err != nil {
		return state.Inspection{State: state.Unknown, Detail: err.Error()}
	}
	return in
}

// Remove deletes a recorded object if, and only if, it is still the one `up` created (a UID
// precondition on the delete). A missing object counts as gone, an object replaced by someone
// else is left alone, and a Namespace counts as removed once its deletion has started, because
// the namespace controller finishes it.
func (c *Conn) Remove(ctx context.Context, o state.Object) (state.Removal, error) {
	in, u, err := c.live(ctx, o)
	if err != nil {
		return state.Removal{}, err
	}
	switch in.State {
	case state.Missing, state.Terminating:
		return state.Removal{Outcome: state.AlreadyGone}, nil
	case state.Changed:
		return state.Removal{Outcome: state.LeftAlone, Detail: "not the object occ created (" + in.Detail + ")"}, nil
	}
	ri, err := c.resource(o.APIVersion, o.Kind, o.Namespace)
	if err != nil {
		return state.Removal{}, fmt.Errorf("%s: %w", o, err)
	}
	uid := u.GetUID()
	policy := metav1.DeletePropagationBackground
	err = ri.Delete(ctx, o.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}, PropagationPolicy: &policy})
	switch {
	case err == nil:
		return state.Removal{Outcome: state.Removed}, nil
	case apierrors.IsNotFound(err):
		return state.Removal{Outcome: state.AlreadyGone}, nil
	case apierrors.IsConflict(err):
		return state.Removal{Outcome: state.LeftAlone, Detail: "not the object occ created (replaced while deleting)"}, nil
	default:
		return state.Removal{}, fmt.Errorf("delete %s: %w", o, err)
	}
}
