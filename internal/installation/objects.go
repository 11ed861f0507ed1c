package installation

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/strictyaml"
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
	roles := workspaceRoles(objs)
	for i := range objs {
		p := indexPath(listPath, i)
		u := &objs[i]
		kind, _, _ := unstructured.NestedString(u.Object, "kind")
		apiVersion, _, _ := unstructured.NestedString(u.Object, "apiVersion")
		name, _, _ := unstructured.NestedString(u.Object, "metadata", "name")
		id := objectID(kind, name)
		// A kind padded with spaces or written in another case is still a Secret to a reader,
		// and must never get past this check by looking like another kind.
		if k := strings.TrimSpace(kind); strings.EqualFold(k, "Secret") || strings.EqualFold(k, "SecretList") {
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
		if workspace && !contract.IsWorkspaceResourceKind(gvk) {
			v.object(p, id, fmt.Sprintf("gateway.operatorWorkspaceResources[%d] must be a workspace-chart ServiceAccount, Role, RoleBinding, or NetworkPolicy (v1, rbac.authorization.k8s.io/v1 or networking.k8s.io/v1). %s", i, rule))
			continue
		}
		if !workspace && !contract.IsNetworkingResourceKind(gvk) {
			v.object(p, id, fmt.Sprintf("gateway.networkPolicyResources[%d] is a %s (%s), not an object for provider networking: it accepts only %s. Put workspace objects in gateway.operatorWorkspaceResources. %s", i, kind, apiVersion, networkingKindList(), rule))
			continue
		}
		if newTyped, ok := workspaceKinds[gvk]; ok {
			// Built-in kinds are converted strictly, so a misspelled field in a rendered manifest
			// is refused here instead of being dropped silently by the apiserver.
			typed := newTyped()
			if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, typed, true); err != nil {
				v.object(p, id, fmt.Sprintf("the %s does not match the Kubernetes %s schema: %s", kind, gvk.GroupVersion(), shownValue(schemaProblem(u.Object, newTyped(), err))))
				continue
			}
			if workspace {
				v.rbac(p, id, typed, roles)
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

// schemaProblem words a schema mismatch of obj with the field it is at. The unstructured
// converter names unknown fields but not a value of the wrong type ("unrecognized type:
// string"); decoding the object's JSON form into the typed struct names the field
// ("metadata.labels holds a bool where the schema wants string"). Secrets never get here: they are refused
// first, so no message can carry their data.
func schemaProblem(obj map[string]any, typed any, convErr error) string {
	js, err := json.Marshal(obj)
	if err != nil {
		return convErr.Error()
	}
	var te *json.UnmarshalTypeError
	if err := json.Unmarshal(js, typed); errors.As(err, &te) && te.Field != "" {
		return fmt.Sprintf("%s holds %s where the schema wants %s", te.Field, aJSONKind(te.Value), te.Type)
	}
	return convErr.Error()
}

// aJSONKind is the kind json.UnmarshalTypeError reports ("bool", "number 1.5"), with an article.
func aJSONKind(v string) string {
	kind, _, _ := strings.Cut(v, " ")
	switch kind {
	case "object", "array":
		return "an " + kind
	}
	return "a " + kind
}

// msgWildcardPermissions is the specification's rule on the permissions workspace resources
// grant, quoted verbatim.
const msgWildcardPermissions = "Do not grant wildcard tenant permissions."

// workspaceRoles are the names of the Roles a workspace resource list holds, the only Roles
// its RoleBindings may bind.
func workspaceRoles(objs Resources) []string {
	var out []string
	for i := range objs {
		if objs[i].GetAPIVersion() == rbacv1.SchemeGroupVersion.String() && objs[i].GetKind() == "Role" {
			out = append(out, objs[i].GetName())
		}
	}
	return out
}

// rbac refuses the permissions a workspace Role or RoleBinding must not grant: a rule with a
// wildcard verb, API group or resource, and a binding to a ClusterRole or to a Role the same
// list does not hold (whose rules these checks cannot see).
func (v *validator) rbac(p, id string, typed any, roles []string) {
	switch o := typed.(type) {
	case *rbacv1.Role:
		for j, r := range o.Rules {
			rp := indexPath(p+".rules", j)
			for _, f := range []struct {
				key    string
				values []string
				fix    string
			}{
				{"verbs", r.Verbs, "list the verbs the workspace needs (for example get, list, watch)"},
				{"apiGroups", r.APIGroups, `list the API groups (the core group is "")`},
				{"resources", r.Resources, "list the resources (for example pods)"},
			} {
				for _, val := range f.values {
					if val == rbacv1.VerbAll || strings.HasPrefix(val, "*/") {
						v.object(rp+"."+f.key, id, fmt.Sprintf("%s %s rule %d grants %s %q to every tenant workload it binds; %s.", msgWildcardPermissions, id, j, f.key, val, f.fix))
						break
					}
				}
			}
		}
	case *rbacv1.RoleBinding:
		ref := o.RoleRef
		known := "it holds no Role"
		if len(roles) > 0 {
			known = "it holds Role " + strings.Join(roles, ", Role ")
		}
		switch {
		case ref.Kind != "Role":
			v.object(p+".roleRef", id, fmt.Sprintf("%s %s binds %s %s: a workspace RoleBinding may bind only a Role listed in gateway.operatorWorkspaceResources (%s), whose rules these checks see; a ClusterRole's permissions are not reviewed here. Bind the workspace chart's Role instead.", msgWildcardPermissions, id, ref.Kind, ref.Name, known))
		case !slices.Contains(roles, ref.Name):
			v.object(p+".roleRef", id, fmt.Sprintf("%s binds Role %s, which gateway.operatorWorkspaceResources does not hold (%s): a workspace RoleBinding may bind only a Role of the same rendered set, whose rules these checks see. Add the Role or bind one that is listed.", id, ref.Name, known))
		}
	}
}

// networkingKindList names NetworkingResourceKinds for messages.
func networkingKindList() string {
	var names []string
	for _, k := range contract.NetworkingResourceKinds() {
		names = append(names, k.Kind+" of "+k.Group)
	}
	return strings.Join(names, ", ")
}

// kindPattern is the shape of a Kubernetes kind name.
var kindPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*$`)

// ResourceProblems applies the rules of gateway.operatorWorkspaceResources and
// gateway.networkPolicyResources, the same the validator applies, to a configuration built
// or changed in code. The Driver calls it before it applies anything, so a configuration that
// skipped validation is refused with the same words.
func ResourceProblems(g *GatewayConfig) Problems {
	v := &validator{strictyaml.NewReport(nil, nil, contract.RedactURL)}
	seen := map[string]string{}
	v.objects(pathGateway+".operatorWorkspaceResources", g.OperatorWorkspaceResources, true, seen)
	v.objects(pathGateway+".networkPolicyResources", g.NetworkPolicyResources, false, seen)
	return Problems(v.Problems)
}

// objectShape checks the fields every applied object needs. It never shows field values other
// than the object's kind and name.
func (v *validator) objectShape(p string, u *unstructured.Unstructured, id, rule string) bool {
	ok := true
	for _, f := range []string{"apiVersion", "kind"} {
		if s, isString := u.Object[f].(string); !isString || strings.TrimSpace(s) == "" {
			v.object(p+"."+f, id, "a Kubernetes resource object needs a nonempty string "+f+". "+rule)
			ok = false
		} else if f == "kind" && !kindPattern.MatchString(s) {
			v.object(p+".kind", id, "kind must be a Kubernetes kind name: letters and digits, starting with a letter, without spaces (for example NetworkPolicy). "+rule)
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
