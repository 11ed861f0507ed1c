package installation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/openclaw/occ/internal/contract"
)

// workspaceKinds are the typed forms of contract.WorkspaceResourceKinds, the objects the
// openshell-workspace chart renders and the only ones operatorWorkspaceResources accepts; each
// must convert to its typed form exactly.
var workspaceKinds = map[schema.GroupVersionKind]func() any{
	{Version: "v1", Kind: "ServiceAccount"}:                                  func() any { return &corev1.ServiceAccount{} },
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"}:        func() any { return &rbacv1.Role{} },
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"}: func() any { return &rbacv1.RoleBinding{} },
	{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"}:       func() any { return &networkingv1.NetworkPolicy{} },
}

// clusterScopedKinds are the built-in cluster-scoped kinds, by group. The Driver applies these
// lists inside one tenant Namespace, so a cluster-scoped object would escape it.
var clusterScopedKinds = map[string][]string{
	"":                             {"Namespace", "Node", "PersistentVolume", "ComponentStatus"},
	"rbac.authorization.k8s.io":    {"ClusterRole", "ClusterRoleBinding"},
	"storage.k8s.io":               {"StorageClass", "CSIDriver", "CSINode", "VolumeAttachment", "VolumeAttributesClass"},
	"apiextensions.k8s.io":         {"CustomResourceDefinition"},
	"apiregistration.k8s.io":       {"APIService"},
	"admissionregistration.k8s.io": {"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding"},
	"scheduling.k8s.io":            {"PriorityClass"},
	"node.k8s.io":                  {"RuntimeClass"},
	"networking.k8s.io":            {"IngressClass", "IPAddress", "ServiceCIDR"},
	"certificates.k8s.io":          {"CertificateSigningRequest", "ClusterTrustBundle"},
	"flowcontrol.apiserver.k8s.io": {"FlowSchema", "PriorityLevelConfiguration"},
	"resource.k8s.io":              {"DeviceClass", "ResourceSlice", "DeviceTaintRule"},
	"internal.apiserver.k8s.io":    {"StorageVersion"},
	"storagemigration.k8s.io":      {"StorageVersionMigration"},
	"authentication.k8s.io":        {"TokenReview", "SelfSubjectReview"},
	"authorization.k8s.io":         {"SubjectAccessReview", "SelfSubjectAccessReview", "SelfSubjectRulesReview"},
	"gateway.networking.k8s.io":    {"GatewayClass"},
	"policy.networking.k8s.io":     {"AdminNetworkPolicy", "BaselineAdminNetworkPolicy", "ClusterNetworkPolicy"},
	"cilium.io":                    {"CiliumClusterwideNetworkPolicy"},
	"crd.projectcalico.org":        {"GlobalNetworkPolicy", "GlobalNetworkSet"},
	"projectcalico.org":            {"GlobalNetworkPolicy", "GlobalNetworkSet"},
}

// ownershipMetadata are the label and annotation keys the Driver injects; a rendered object
// that already carries them would claim another Namespace's ownership.
func ownershipMetadata() []string { return contract.OwnershipMetadataKeys() }

// objects checks one list of Kubernetes objects. workspace selects the operatorWorkspaceResources
// allowlist; otherwise any namespace-scoped object except a Secret is accepted. seen holds
// Kind/name pairs across both lists, since two objects with one identity would overwrite each
// other on server-side apply.
//
// Messages name an object only as Kind/name: a refused Secret's data never reaches the output.
func (v *validator) objects(listPath string, objs Resources, workspace bool, seen map[string]string) {
	rule := msgNetworkObjects
	if workspace {
		rule = msgWorkspaceObjects
	}
	for i := range objs {
		p := indexPath(listPath, i)
		u := &objs[i]
		kind, _, _ := unstructured.NestedString(u.Object, "kind")
		apiVersion, _, _ := unstructured.NestedString(u.Object, "apiVersion")
		name, _, _ := unstructured.NestedString(u.Object, "metadata", "name")
		id := objectID(kind, name)
		if strings.EqualFold(kind, "Secret") || strings.EqualFold(kind, "SecretList") {
			desc := "gateway.networkPolicyResources"
			if workspace {
				desc = "gateway.operatorWorkspaceResources"
			}
			v.object(p, id, fmt.Sprintf("%s[%d] must not contain OpenShell credential-bearing Secrets. %s", desc, i, rule))
			continue
		}
		if !v.objectShape(p, u, id, rule) {
			continue
		}
		gv, err := schema.ParseGroupVersion(apiVersion)
		if err != nil {
			v.object(p+".apiVersion", id, "apiVersion must be group/version or version: "+err.Error()+". "+rule)
			continue
		}
		gvk := gv.WithKind(kind)
		if strings.HasSuffix(kind, "List") {
			v.object(p+".kind", id, "a List would hide its items from these checks; list each object on its own. "+rule)
			continue
		}
		if isClusterScoped(gvk) {
			v.object(p+".kind", id, "a cluster-scoped object cannot be applied inside a tenant Namespace. "+rule)
			continue
		}
		if workspace {
			if !contract.IsWorkspaceResourceKind(gvk) {
				v.object(p, id, fmt.Sprintf("gateway.operatorWorkspaceResources[%d] must be a workspace-chart ServiceAccount, Role, RoleBinding, or NetworkPolicy (v1, rbac.authorization.k8s.io/v1 or networking.k8s.io/v1). %s", i, rule))
				continue
			}
		}
		if newTyped, ok := workspaceKinds[gvk]; ok {
			// Built-in kinds are converted strictly, so a misspelled field in a rendered manifest
			// is refused here instead of being dropped silently by the apiserver.
			if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, newTyped(), true); err != nil {
				v.object(p, id, fmt.Sprintf("the %s does not match the Kubernetes %s schema: %s", kind, gvk.GroupVersion(), shownValue(err.Error())))
				continue
			}
		}
		key := gvk.GroupKind().String() + "/" + name
		if first, dup := seen[key]; dup {
			v.object(p, id, fmt.Sprintf("%s is already listed at %s; server-side apply would make one overwrite the other. List each object once.", id, first))
			continue
		}
		seen[key] = p
	}
}

// objectShape checks the fields every applied object needs. It never shows field values other
// than the object's kind and name.
func (v *validator) objectShape(p string, u *unstructured.Unstructured, id, rule string) bool {
	ok := true
	for _, f := range []string{"apiVersion", "kind"} {
		if s, isString := u.Object[f].(string); !isString || strings.TrimSpace(s) == "" {
			v.object(p+"."+f, id, "a Kubernetes resource object needs a nonempty string "+f+". "+rule)
			ok = false
		}
	}
	meta, isMap := u.Object["metadata"].(map[string]any)
	if !isMap {
		v.object(p+".metadata", id, "a Kubernetes resource object needs metadata with a name. "+rule)
		return false
	}
	name, isString := meta["name"].(string)
	switch {
	case !isString || strings.TrimSpace(name) == "":
		v.object(p+".metadata.name", id, "a Kubernetes resource object needs a nonblank metadata.name. "+rule)
		ok = false
	case len(validation.IsDNS1123Subdomain(name)) > 0 && len(pathSegmentProblems(name)) > 0:
		v.object(p+".metadata.name", id, "metadata.name must be a valid Kubernetes object name. "+rule)
		ok = false
	}
	if ns, present := meta["namespace"]; present && ns != nil && ns != "" {
		v.object(p+".metadata.namespace", id, "remove metadata.namespace: the Driver injects the Compute-owned tenant Namespace, and an object that names another Namespace is refused at apply. "+rule)
		ok = false
	}
	if _, present := meta["generateName"]; present {
		v.object(p+".metadata.generateName", id, "remove metadata.generateName: server-side apply needs a fixed metadata.name. "+rule)
		ok = false
	}
	for _, field := range []string{"labels", "annotations"} {
		m, _ := meta[field].(map[string]any)
		for _, k := range ownershipMetadata() {
			if _, present := m[k]; present {
				v.object(childPath(p+".metadata."+field, k), id, "remove this key: the Driver injects OCC ownership metadata for the tenant Namespace before server-side apply. "+rule)
				ok = false
			}
		}
	}
	return ok
}

// pathSegmentProblems is the name rule for kinds such as Role whose names are path segments.
func pathSegmentProblems(name string) []string {
	if name == "." || name == ".." || strings.ContainsAny(name, "/%") || len(name) > validation.DNS1123SubdomainMaxLength {
		return []string{"not a valid path segment name"}
	}
	return nil
}

func isClusterScoped(gvk schema.GroupVersionKind) bool {
	for _, k := range clusterScopedKinds[gvk.Group] {
		if k == gvk.Kind {
			return true
		}
	}
	return false
}

// objectID names an object for messages as Kind/name, bounded in length.
func objectID(kind, name string) string {
	if kind == "" {
		kind = "<no kind>"
	}
	if name == "" {
		name = "<no name>"
	}
	return shownValue(kind + "/" + name)
}
