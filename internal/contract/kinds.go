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
