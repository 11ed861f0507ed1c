package kubernetes

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TenantBindings bind the chart's unbound tenant ClusterRoles to the OCE service accounts for
// all namespaces. Production operators bind them per tenant namespace; the disposable
// development cluster has no operator, so the worker gets its tenant rights everywhere and the
// API its Secret and configuration rights. The ClusterRole names are
// <release>-openclaw-tenant-*, which is why the release must be named openclaw-enterprise.
func TenantBindings(namespace string, own Ownership) []*rbacv1.ClusterRoleBinding {
	bind := func(name, role, serviceAccount string) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: own.with(nil)},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: ReleaseName + "-openclaw-" + role},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: serviceAccount, Namespace: namespace}},
		}
	}
	return []*rbacv1.ClusterRoleBinding{
		bind(TenantWorkerBinding, "tenant-worker", WorkerServiceAccount),
		bind(TenantConfigurationBinding, "tenant-configuration", APIServiceAccount),
		bind(TenantSecretsBinding, "tenant-api", APIServiceAccount),
	}
}
