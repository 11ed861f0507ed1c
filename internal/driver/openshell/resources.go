package openshell

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/installation"
	"github.com/openclaw/occ/internal/kube"
)

// FieldManager is the server-side apply field manager of everything this driver applies. It is
// distinct from Compute's ("occ") on purpose: server-side apply removes fields a manager stops
// applying, so sharing a manager on the Namespace would make the driver's label apply erase
// Compute's labels and the other way round.
const FieldManager = "occ-sandbox-openshell"

// configuredResource is one configured object prepared for a tenant namespace.
type configuredResource struct {
	// path names the configuration entry, e.g. gateway.networkPolicyResources[0].
	path string
	obj  *unstructured.Unstructured
}

func (r configuredResource) describe() string {
	return fmt.Sprintf("%s/%s", r.obj.GetKind(), r.obj.GetName())
}

// prepareResources returns the configured workspace resources followed by the network-policy
// resources, each deep-copied, forced into the tenant namespace and stamped with OCC ownership.
// Everything is checked before anything is applied, so a bad entry leaves the namespace
// untouched: first the Installation's own rules for these lists (kinds, Secrets, wildcard
// permissions; the validator applies the same), then what depends on the tenant namespace.
func (d *Driver) prepareResources(ns driver.Namespace) ([]configuredResource, error) {
	if problems := installation.ResourceProblems(&d.cfg.Gateway); len(problems) > 0 {
		return nil, problems
	}
	var out []configuredResource
	add := func(list installation.Resources, field string) error {
		for i := range list {
			path := fmt.Sprintf("gateway.%s[%d]", field, i)
			obj := list[i].DeepCopy()
			rendered := obj.GetNamespace()
			if rendered != "" && rendered != ns.Name {
				return plain(fmt.Sprintf("OpenShell resource %s/%s targets namespace %s, not %s.", obj.GetKind(), obj.GetName(), rendered, ns.Name), nil)
			}
			if err := checkOwnership(obj, ns.ID); err != nil {
				return err
			}
			obj.SetNamespace(ns.Name)
			labels := obj.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			labels[driver.LabelManagedBy] = driver.ManagedByValue
			labels[driver.LabelNamespace] = ns.ID
			obj.SetLabels(labels)
			ann := obj.GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			ann[driver.AnnotationNamespaceID] = ns.ID
			obj.SetAnnotations(ann)
			if obj.GetKind() == "RoleBinding" {
				if err := bindSubjectsToNamespace(obj, rendered, ns.Name); err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
			}
			out = append(out, configuredResource{path: path, obj: obj})
		}
		return nil
	}
	if err := add(d.cfg.Gateway.OperatorWorkspaceResources, "operatorWorkspaceResources"); err != nil {
		return nil, err
	}
	if err := add(d.cfg.Gateway.NetworkPolicyResources, "networkPolicyResources"); err != nil {
		return nil, err
	}
	return out, nil
}

// checkOwnership refuses an object that another OCC Namespace owns.
func checkOwnership(obj *unstructured.Unstructured, namespaceID string) error {
	if v, ok := obj.GetLabels()[driver.LabelNamespace]; ok && v != namespaceID {
		return plain("OpenShell bootstrap resource belongs to another Namespace.", errorf("%s/%s has %s=%q, not %q", obj.GetKind(), obj.GetName(), driver.LabelNamespace, v, namespaceID))
	}
	if v, ok := obj.GetAnnotations()[driver.AnnotationNamespaceID]; ok && v != namespaceID {
		return plain("OpenShell bootstrap resource belongs to another Namespace.", errorf("%s/%s has annotation %s=%q, not %q", obj.GetKind(), obj.GetName(), driver.AnnotationNamespaceID, v, namespaceID))
	}
	return nil
}

// bindSubjectsToNamespace points the workspace chart's ServiceAccount subjects at the tenant
// namespace. The chart is rendered once, for no namespace or for its render namespace; a
// subject left there would grant the Role to a ServiceAccount outside the tenant.
func bindSubjectsToNamespace(obj *unstructured.Unstructured, rendered, tenant string) error {
	subjects, found, err := unstructured.NestedSlice(obj.Object, "subjects")
	if err != nil || !found {
		return err
	}
	for i, s := range subjects {
		m, ok := s.(map[string]any)
		if !ok {
			return errorf("subjects[%d] must be an object", i)
		}
		if m["kind"] != "ServiceAccount" {
			continue
		}
		if ns, _ := m["namespace"].(string); ns == "" || ns == rendered {
			m["namespace"] = tenant
		} else if ns != tenant {
			return errorf("subjects[%d] binds ServiceAccount %v in namespace %s; workspace resources may bind only tenant ServiceAccounts", i, m["name"], ns)
		}
	}
	return unstructured.SetNestedSlice(obj.Object, subjects, "subjects")
}

// resourceClient resolves a prepared object's REST resource, refusing cluster-scoped kinds: the
// driver only ever writes inside the tenant namespace.
func resourceClient(objects *kube.Applier, r configuredResource) (dynamic.ResourceInterface, error) {
	gvk := r.obj.GroupVersionKind()
	mapping, err := objects.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("%s: resolve kind %s: %w", r.path, gvk, err)
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		return nil, plain(r.path+" must be a namespace-scoped Kubernetes object.", errorf("%s is cluster-scoped", gvk.Kind))
	}
	return objects.Dynamic.Resource(mapping.Resource).Namespace(r.obj.GetNamespace()), nil
}

// applyResource server-side applies a prepared object with the driver's field manager.
func applyResource(ctx context.Context, ri dynamic.ResourceInterface, r configuredResource) error {
	body, err := json.Marshal(r.obj.Object)
	if err != nil {
		return fmt.Errorf("encode %s: %w", r.describe(), err)
	}
	force := true
	if _, err := ri.Patch(ctx, r.obj.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: FieldManager, Force: &force}); err != nil {
		return fmt.Errorf("apply %s %s/%s: %w", r.obj.GetKind(), r.obj.GetNamespace(), r.obj.GetName(), err)
	}
	return nil
}
