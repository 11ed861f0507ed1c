package kube

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

// Applier server-side applies arbitrary objects (rendered chart output, configured workspace
// resources) through the dynamic client, resolving kinds with a cached discovery mapper.
type Applier struct {
	Dynamic dynamic.Interface
	Mapper  meta.RESTMapper
}

// NewApplier builds an Applier for cfg.
func NewApplier(cfg *rest.Config) (*Applier, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	return &Applier{Dynamic: dyn, Mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}, nil
}

// resource returns the dynamic resource client for obj, namespaced when the kind is.
func (a *Applier) resource(obj *unstructured.Unstructured) (dynamic.ResourceInterface, bool, error) {
	gvk := obj.GroupVersionKind()
	mapping, err := a.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, false, fmt.Errorf("resolve kind %s: %w", gvk, err)
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return a.Dynamic.Resource(mapping.Resource).Namespace(obj.GetNamespace()), true, nil
	}
	return a.Dynamic.Resource(mapping.Resource), false, nil
}

// Namespaced reports whether obj's kind is namespace-scoped on this server.
func (a *Applier) Namespaced(obj *unstructured.Unstructured) (bool, error) {
	_, namespaced, err := a.resource(obj)
	return namespaced, err
}

// Apply server-side applies obj with occ's field manager, taking ownership of conflicting
// fields (occ is the declared owner of everything it applies), and returns the live object.
func (a *Applier) Apply(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ri, _, err := a.resource(obj)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", Describe(obj), err)
	}
	force := true
	live, err := ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: FieldManager, Force: &force})
	if err != nil {
		return nil, fmt.Errorf("apply %s: %w", Describe(obj), err)
	}
	return live, nil
}

// Get reads the live copy of obj.
func (a *Applier) Get(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ri, _, err := a.resource(obj)
	if err != nil {
		return nil, err
	}
	return ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
}

// Delete removes obj; a missing object is not an error, so deletion is safe to repeat.
// A non-empty uid makes the delete conditional: an object recreated by someone else since
// it was recorded is left alone.
func (a *Applier) Delete(ctx context.Context, obj *unstructured.Unstructured, uid types.UID) error {
	ri, _, err := a.resource(obj)
	if err != nil {
		return err
	}
	opts := metav1.DeleteOptions{}
	if uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	if err := ri.Delete(ctx, obj.GetName(), opts); err != nil && !IsNotFound(err) {
		return fmt.Errorf("delete %s: %w", Describe(obj), err)
	}
	return nil
}

// Describe names an object as Kind namespace/name (or Kind name when cluster-scoped).
func Describe(obj *unstructured.Unstructured) string {
	if ns := obj.GetNamespace(); ns != "" {
		return fmt.Sprintf("%s %s/%s", obj.GetKind(), ns, obj.GetName())
	}
	return fmt.Sprintf("%s %s", obj.GetKind(), obj.GetName())
}
