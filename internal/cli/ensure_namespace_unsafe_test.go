package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/occ/internal/driver/compute"
)

// An operator runs `occ sandbox ensure-namespace` with an Installation whose workspace chart
// grants tenant-wide permissions (a Role with '*' verbs, a RoleBinding to cluster-admin) or whose
// provider networking objects smuggle in a ServiceAccount or a disguised Secret: the command
// refuses the Installation before anything exists, so the real apiserver holds no tenant
// namespace and the gateway received no call.
func TestEnsureNamespaceRefusesUnsafeResourcesBeforeAnything(t *testing.T) {
	b := newE2EBed(t)
	raw, err := os.ReadFile(b.installation)
	if err != nil {
		t.Fatal(err)
	}
	src := string(raw)
	for i, c := range []struct{ name, old, new, want string }{
		{"wildcard verbs", "                verbs: [get, list, watch]\n", "                verbs: [\"*\"]\n", "Do not grant wildcard tenant permissions."},
		{"cluster-admin binding", "              kind: Role\n              name: openshell-sandbox\n", "              kind: ClusterRole\n              name: cluster-admin\n", "ClusterRole cluster-admin"},
		{"ServiceAccount among the networking objects", "        networkPolicyResources:\n", "        networkPolicyResources:\n          - {apiVersion: v1, kind: ServiceAccount, metadata: {name: second-sandbox}}\n", "objects for provider networking"},
		{"disguised Secret", "        networkPolicyResources:\n", "        networkPolicyResources:\n          - {apiVersion: v1, kind: \"Secret \", metadata: {name: gateway-token}}\n", "must not contain OpenShell credential-bearing Secrets"},
	} {
		if !strings.Contains(src, c.old) {
			t.Fatalf("%s: the test Installation lacks %q", c.name, c.old)
		}
		file := filepath.Join(t.TempDir(), "installation.yaml")
		if err := os.WriteFile(file, []byte(strings.Replace(src, c.old, c.new, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		id := "ns_unsafe_" + string(rune('a'+i))
		code, out, errOut := run(t, "sandbox", "ensure-namespace", "-n", id, "--installation", file, "--kubeconfig", b.kubeconfig)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, want a refusal naming %q\n%s%s", c.name, code, c.want, out, errOut)
		}
		ns, err := compute.ResolveNamespace(id)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.kube.CoreV1().Namespaces().Get(context.Background(), ns.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: the tenant namespace %s exists (or cannot be read: %v)", c.name, ns.Name, err)
		}
	}
	if calls := b.gw.Journal().Calls(); len(calls) != 0 {
		t.Errorf("the gateway received %d calls", len(calls))
	}
}
