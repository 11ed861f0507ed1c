package openshell

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openclaw/occ/internal/installation"
)

// A workspace chart rendered with tenant-wide permissions, or provider networking objects that
// smuggle in other kinds, reach ensureNamespace through a library caller that skipped
// validation: the driver applies the Installation's own resource rules first, so a Role with
// wildcard verbs or resources, a RoleBinding to cluster-admin or to a Role the set does not
// hold, a ServiceAccount among the networking objects and a Secret whose kind hides behind a
// trailing space are all refused, naming the object, with no Kubernetes write and no gateway
// call (the real apiserver shows nothing was created).
func TestEnsureNamespaceRefusesUnsafeResources(t *testing.T) {
	object := func(apiVersion, kind, name string, fields map[string]any) unstructured.Unstructured {
		o := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name}}
		for k, v := range fields {
			o[k] = v
		}
		return unstructured.Unstructured{Object: o}
	}
	const rbac = "rbac.authorization.k8s.io/v1"
	cases := []struct {
		name   string
		config func(*installation.SandboxConfiguration)
		want   []string
	}{
		{"Role with wildcard verbs", func(c *installation.SandboxConfiguration) {
			c.Gateway.OperatorWorkspaceResources[1] = object(rbac, "Role", "openshell-sandbox", map[string]any{
				"rules": []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"pods"}, "verbs": []any{"*"}}}})
		}, []string{"Role/openshell-sandbox", "Do not grant wildcard tenant permissions."}},
		{"Role with wildcard resources", func(c *installation.SandboxConfiguration) {
			c.Gateway.OperatorWorkspaceResources[1] = object(rbac, "Role", "openshell-sandbox", map[string]any{
				"rules": []any{map[string]any{"apiGroups": []any{"*"}, "resources": []any{"*"}, "verbs": []any{"get"}}}})
		}, []string{"Role/openshell-sandbox", "Do not grant wildcard tenant permissions."}},
		{"RoleBinding to cluster-admin", func(c *installation.SandboxConfiguration) {
			c.Gateway.OperatorWorkspaceResources[2] = object(rbac, "RoleBinding", "openshell-sandbox", map[string]any{
				"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
				"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "openshell-sandbox"}}})
		}, []string{"RoleBinding/openshell-sandbox", "ClusterRole cluster-admin"}},
		{"RoleBinding to a Role outside the set", func(c *installation.SandboxConfiguration) {
			c.Gateway.OperatorWorkspaceResources[2] = object(rbac, "RoleBinding", "openshell-sandbox", map[string]any{
				"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "namespace-admin"},
				"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": "openshell-sandbox"}}})
		}, []string{"RoleBinding/openshell-sandbox", "Role namespace-admin"}},
		{"ServiceAccount among the networking objects", func(c *installation.SandboxConfiguration) {
			c.Gateway.NetworkPolicyResources = append(c.Gateway.NetworkPolicyResources, object("v1", "ServiceAccount", "second-sandbox", nil))
		}, []string{"ServiceAccount/second-sandbox", "objects for provider networking"}},
		{"Secret with a trailing space in its kind", func(c *installation.SandboxConfiguration) {
			c.Gateway.NetworkPolicyResources = append(c.Gateway.NetworkPolicyResources, object("v1", "Secret ", "gateway-token", map[string]any{"stringData": map[string]any{"token": "CANARY-ensure-7d1e"}}))
		}, []string{"must not contain OpenShell credential-bearing Secrets"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{})
			before := e.resourceVersions()
			d := e.driver(tc.config)
			e.counter.reset()
			err := d.EnsureNamespace(e.ctx, e.nctx())
			if err == nil {
				t.Fatal("ensureNamespace accepted the resources")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the refusal lacks %q:\n%v", w, err)
				}
			}
			if strings.Contains(err.Error(), "CANARY-ensure-7d1e") {
				t.Errorf("the refusal shows the Secret's data:\n%v", err)
			}
			if n := e.counter.writes.Load(); n != 0 {
				t.Fatalf("%d Kubernetes writes: %v", n, e.counter.log)
			}
			if calls := e.gw.Journal().Calls(); len(calls) != 0 {
				t.Fatalf("gateway calls %v", e.methods())
			}
			if after := e.resourceVersions(); strings.Join(after, ",") != strings.Join(before, ",") || strings.Join(after, "") != "" {
				t.Fatalf("configured objects were created or changed: %v -> %v", before, after)
			}
			if sas, err := e.admin.CoreV1().ServiceAccounts(e.ns.Name).List(e.ctx, metav1.ListOptions{}); err != nil || len(sas.Items) > 1 {
				t.Fatalf("ServiceAccounts in the tenant namespace: %v %v", sas, err)
			}
		})
	}
}
