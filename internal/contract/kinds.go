package contract

import "k8s.io/apimachinery/pkg/runtime/schema"

// WorkspaceResourceKinds are the objects the openshell-workspace chart renders and the only
// ones gateway.operatorWorkspaceResources accepts: the development launcher refuses a render
// that produces anything else, and the Installation validator refuses any other kind.
func WorkspaceResourceKinds() []schema.GroupVersionKind {
	return []schema.GroupVersionKind{
		{Version: "v1", Kind: "ServiceAccount"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"},
		{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
		{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"},
	}
}

// IsWorkspaceResourceKind reports whether gvk is one of WorkspaceResourceKinds.
func IsWorkspaceResourceKind(gvk schema.GroupVersionKind) bool {
	for _, k := range WorkspaceResourceKinds() {
		if k == gvk {
			return true
		}
	}
	return false
}

// IsServiceAccount reports whether gvk is the core ServiceAccount, the kind whose count native
// OpenClaw containment limits.
func IsServiceAccount(gvk schema.GroupVersionKind) bool {
	return gvk == schema.GroupVersionKind{Version: "v1", Kind: "ServiceAccount"}
}

// NetworkingResourceKinds are the objects for provider networking that
// gateway.networkPolicyResources accepts, by group and kind (any served version): Kubernetes
// NetworkPolicies and the namespaced policies of the common CNI providers. Anything else (a
// ServiceAccount, a Role) would slip past the checks that apply to workspace objects.
func NetworkingResourceKinds() []schema.GroupKind {
	return []schema.GroupKind{
		{Group: "networking.k8s.io", Kind: "NetworkPolicy"},
		{Group: "cilium.io", Kind: "CiliumNetworkPolicy"},
		{Group: "projectcalico.org", Kind: "NetworkPolicy"},
		{Group: "crd.projectcalico.org", Kind: "NetworkPolicy"},
	}
}

// IsNetworkingResourceKind reports whether gvk is one of NetworkingResourceKinds.
func IsNetworkingResourceKind(gvk schema.GroupVersionKind) bool {
	for _, k := range NetworkingResourceKinds() {
		if k == gvk.GroupKind() {
			return true
		}
	}
	return false
}
