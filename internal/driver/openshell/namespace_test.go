package openshell

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/gateway/emulator"
	"github.com/openclaw/occ/internal/installation"
	"github.com/openclaw/occ/internal/testbed"
)

// configuredObjects lists the fixture's workspace and network-policy resources as kind/name.
var configuredObjects = []struct{ kind, name string }{
	{"ServiceAccount", "openshell-sandbox"},
	{"Role", "openshell-sandbox"},
	{"RoleBinding", "openshell-sandbox"},
	{"NetworkPolicy", "openshell-workspace-gateway"},
	{"NetworkPolicy", "allow-openshell-sandbox-callback"},
}

// resourceVersions reads the configured objects' resource versions (empty when absent).
func (e *env) resourceVersions() []string {
	e.t.Helper()
	var out []string
	for _, o := range configuredObjects {
		var meta metav1.Object
		var err error
		switch o.kind {
		case "ServiceAccount":
			meta, err = e.admin.CoreV1().ServiceAccounts(e.ns.Name).Get(e.ctx, o.name, metav1.GetOptions{})
		case "Role":
			meta, err = e.admin.RbacV1().Roles(e.ns.Name).Get(e.ctx, o.name, metav1.GetOptions{})
		case "RoleBinding":
			meta, err = e.admin.RbacV1().RoleBindings(e.ns.Name).Get(e.ctx, o.name, metav1.GetOptions{})
		case "NetworkPolicy":
			meta, err = e.admin.NetworkingV1().NetworkPolicies(e.ns.Name).Get(e.ctx, o.name, metav1.GetOptions{})
		}
		if apierrors.IsNotFound(err) {
			out = append(out, "")
			continue
		}
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, meta.GetResourceVersion())
	}
	return out
}

// An operator-mode Namespace is labelled, gets the workspace-chart and provider NetworkPolicy
// resources with the tenant namespace and OCC ownership, and owns exactly one active
// Workspace; running it three times changes nothing more.
func TestEnsureNamespaceOperatorModeThreeTimes(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.driver(nil)
	var versions []string
	for i := 0; i < 3; i++ {
		if err := d.EnsureNamespace(e.ctx, e.nctx()); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		rv := e.resourceVersions()
		if slices.Contains(rv, "") {
			t.Fatalf("run %d: missing configured objects: %v", i+1, rv)
		}
		if i > 0 && !slices.Equal(rv, versions) {
			t.Fatalf("run %d changed configured objects: %v -> %v", i+1, versions, rv)
		}
		versions = rv
	}
	if n := len(e.gw.Journal().Method("CreateWorkspace")); n != 1 {
		t.Fatalf("CreateWorkspace called %d times over three runs", n)
	}
	// The seed's order: Health after the Kubernetes work, then the Workspace.
	want := []string{"Health", "GetWorkspace", "CreateWorkspace", "Health", "GetWorkspace", "Health", "GetWorkspace"}
	if got := e.methods(); !slices.Equal(got, want) {
		t.Fatalf("gateway calls %v, want %v", got, want)
	}
	ns, err := e.admin.CoreV1().Namespaces().Get(e.ctx, e.ns.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ns.Labels["openshell.ai/openclaw-workspace"] != "true" || ns.Labels[driver.LabelNamespace] != e.ns.ID || ns.Labels[driver.LabelManagedBy] != driver.ManagedByValue {
		t.Fatalf("namespace labels %v (Compute's labels must survive the driver's apply)", ns.Labels)
	}
	np, err := e.admin.NetworkingV1().NetworkPolicies(e.ns.Name).Get(e.ctx, "allow-openshell-sandbox-callback", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if np.Labels[driver.LabelNamespace] != e.ns.ID || np.Annotations[driver.AnnotationNamespaceID] != e.ns.ID || np.Labels[driver.LabelManagedBy] != driver.ManagedByValue {
		t.Fatalf("ownership metadata %v %v", np.Labels, np.Annotations)
	}
	rb, err := e.admin.RbacV1().RoleBindings(e.ns.Name).Get(e.ctx, "openshell-sandbox", metav1.GetOptions{})
	if err != nil || rb.Subjects[0].Namespace != e.ns.Name {
		t.Fatalf("RoleBinding subjects %v, %v", rb, err)
	}
	ws, err := e.client.GetWorkspace(e.ctx, e.ns.Name)
	if err != nil {
		t.Fatal(err)
	}
	if ws.Labels[driver.LabelNamespaceID] != e.ns.ID || ws.Labels[driver.LabelManagedBy] != driver.ManagedByValue || ws.Phase.String() != "WORKSPACE_PHASE_ACTIVE" {
		t.Fatalf("workspace %+v", ws)
	}
}

// Managed workspace mode is recognised but refused before the Kubernetes client or the
// gateway is used at all.
func TestEnsureNamespaceManagedModeTouchesNothing(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.driver(func(c *installation.SandboxConfiguration) {
		c.Gateway.WorkspaceMode = installation.WorkspaceModeManaged
	})
	err := d.EnsureNamespace(e.ctx, e.nctx())
	if err == nil || err.Error() != "OpenShell managed workspace mode is not implemented; cannot ensure a Namespace." {
		t.Fatalf("err = %v", err)
	}
	if n := e.counter.total(); n != 0 {
		t.Fatalf("%d Kubernetes requests: %v", n, e.counter.log)
	}
	if calls := e.gw.Journal().Calls(); len(calls) != 0 {
		t.Fatalf("gateway calls: %v", e.methods())
	}
	rev := e.hctx("codex").Revision
	for _, c := range []driver.CleanupContext{{NamespaceContext: e.nctx()}, {NamespaceContext: e.nctx(), Revision: &rev}} {
		if err := d.Cleanup(e.ctx, c); err == nil || !strings.HasPrefix(err.Error(), "OpenShell managed workspace mode is not implemented") {
			t.Fatalf("cleanup: %v", err)
		}
	}
	if e.counter.total() != 0 || len(e.gw.Journal().Calls()) != 0 {
		t.Fatal("managed-mode cleanup touched the cluster or the gateway")
	}
}

// Eight workers preparing the same Namespace at once end with exactly one Workspace and all
// succeed: losers of the CreateWorkspace race re-read and adopt the winner's Workspace.
func TestEnsureNamespaceConcurrentWorkers(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.driver(nil)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = d.EnsureNamespace(e.ctx, e.nctx())
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
	}
	created := 0
	for _, c := range e.gw.Journal().Method("CreateWorkspace") {
		if c.Code == codes.OK {
			created++
		}
	}
	if created != 1 {
		t.Fatalf("%d successful CreateWorkspace calls", created)
	}
	if _, err := e.client.GetWorkspace(e.ctx, e.ns.Name); err != nil {
		t.Fatal(err)
	}
}

// A lost CreateWorkspace response is retried with the same request_id and answered by the
// gateway's replay: one Workspace, no error.
func TestEnsureNamespaceLostCreateWorkspaceResponse(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.gw.Inject(emulator.Fault{Method: "CreateWorkspace", Kind: emulator.FaultDropResponse})
	d := e.driver(nil)
	if err := d.EnsureNamespace(e.ctx, e.nctx()); err != nil {
		t.Fatal(err)
	}
	calls := e.gw.Journal().Method("CreateWorkspace")
	if len(calls) != 2 || !calls[1].Replayed {
		t.Fatalf("CreateWorkspace calls %+v; want the lost one and its replay", calls)
	}
	if err := d.EnsureNamespace(e.ctx, e.nctx()); err != nil {
		t.Fatal(err)
	}
}

// Refusals that must leave the namespace and the gateway untouched, each with its sentence.
func TestEnsureNamespaceRefusalsMutateNothing(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(e *env)
		config func(*installation.SandboxConfiguration)
		want   string
	}{
		{name: "namespace label owned with another value", setup: func(e *env) {
			patchNamespaceLabels(e, map[string]string{"openshell.ai/openclaw-workspace": "false"})
		}, want: "OpenShell operator Namespace label openshell.ai/openclaw-workspace is owned with another value."},
		{name: "namespace of another OCC Namespace", setup: func(e *env) {
			patchNamespaceLabels(e, map[string]string{driver.LabelNamespace: "ns_someone_else"})
		}, want: "is not owned by OCC Namespace"},
		{name: "live resource owned by another Namespace", setup: func(e *env) {
			_, err := e.admin.NetworkingV1().NetworkPolicies(e.ns.Name).Create(e.ctx, &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{
				Name: "allow-openshell-sandbox-callback", Labels: map[string]string{driver.LabelNamespace: "ns_someone_else"},
			}}, metav1.CreateOptions{})
			if err != nil {
				e.t.Fatal(err)
			}
		}, want: "OpenShell bootstrap resource belongs to another Namespace."},
		{name: "resource rendered for another namespace", config: func(c *installation.SandboxConfiguration) {
			c.Gateway.NetworkPolicyResources[0].SetNamespace("kube-system")
		}, want: "networkPolicyResources[0].metadata.namespace (NetworkPolicy/allow-openshell-sandbox-callback): remove metadata.namespace: the Driver injects the Compute-owned tenant Namespace"},
		{name: "Secret among the resources", config: func(c *installation.SandboxConfiguration) {
			s := unstructured.Unstructured{}
			s.SetAPIVersion("v1")
			s.SetKind("Secret")
			s.SetName("openshell-token")
			c.Gateway.NetworkPolicyResources = append(c.Gateway.NetworkPolicyResources, s)
		}, want: "gateway.networkPolicyResources[1] must not contain OpenShell credential-bearing Secrets."},
		{name: "cluster-scoped kind", config: func(c *installation.SandboxConfiguration) {
			cr := unstructured.Unstructured{}
			cr.SetAPIVersion("rbac.authorization.k8s.io/v1")
			cr.SetKind("ClusterRole")
			cr.SetName("openshell-everything")
			c.Gateway.NetworkPolicyResources = append(c.Gateway.NetworkPolicyResources, cr)
		}, want: "networkPolicyResources[1].kind (ClusterRole/openshell-everything): a cluster-scoped object cannot be applied inside a tenant Namespace."},
		{name: "namespace missing", setup: func(e *env) {
			e.ns.Name = "oce-000000000000000"
		}, want: "OpenShell operator Namespace oce-000000000000000 is unavailable."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{})
			if tc.setup != nil {
				tc.setup(e)
			}
			before := e.resourceVersions()
			d := e.driver(tc.config)
			e.counter.reset()
			err := d.EnsureNamespace(e.ctx, e.nctx())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant %q", err, tc.want)
			}
			if n := e.counter.writes.Load(); n != 0 {
				t.Fatalf("%d Kubernetes writes: %v", n, e.counter.log)
			}
			if calls := e.gw.Journal().Calls(); len(calls) != 0 {
				t.Fatalf("gateway calls %v", e.methods())
			}
			if after := e.resourceVersions(); !slices.Equal(before, after) {
				t.Fatalf("configured objects changed: %v -> %v", before, after)
			}
		})
	}
}

func patchNamespaceLabels(e *env, labels map[string]string) {
	e.t.Helper()
	ns, err := e.admin.CoreV1().Namespaces().Get(e.ctx, e.ns.Name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range labels {
		ns.Labels[k] = v
	}
	if _, err := e.admin.CoreV1().Namespaces().Update(e.ctx, ns, metav1.UpdateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// A Workspace of the same name that OCC did not create is never adopted, and neither is one that
// is not active.
func TestEnsureNamespaceRefusesForeignWorkspace(t *testing.T) {
	e := newEnv(t, envOptions{})
	if _, err := e.client.CreateWorkspace(e.ctx, e.ns.Name, map[string]string{driver.LabelManagedBy: "someone-else"}); err != nil {
		t.Fatal(err)
	}
	err := e.driver(nil).EnsureNamespace(e.ctx, e.nctx())
	want := "Refusing OpenShell Workspace " + e.ns.Name + " without exact OCC Namespace ownership."
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("err = %v", err)
	}
}

// Optional readiness waits for the gateway Service and a Ready Pod in the Namespace, and fails
// with the seed's sentences when either does not come.
func TestEnsureNamespaceReadiness(t *testing.T) {
	e := newEnv(t, envOptions{})
	timeout := int64(300)
	interval := int64(20)
	d := e.driver(func(c *installation.SandboxConfiguration) {
		c.Gateway.Readiness = &installation.Readiness{ServiceName: "openshell-gateway", PodSelector: map[string]string{"app.kubernetes.io/name": "openshell"}, TimeoutMs: &timeout, PollIntervalMs: &interval}
	})
	if err := d.EnsureNamespace(e.ctx, e.nctx()); err == nil || !strings.HasPrefix(err.Error(), "OpenShell gateway Service is unavailable.") {
		t.Fatalf("without Service: %v", err)
	}
	_, err := e.admin.CoreV1().Services(e.ns.Name).Create(e.ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "openshell-gateway"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 8080}}, Selector: map[string]string{"app.kubernetes.io/name": "openshell"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.EnsureNamespace(e.ctx, e.nctx()); err == nil || !strings.HasPrefix(err.Error(), "OpenShell gateway Pod is not ready.") {
		t.Fatalf("without Ready Pod: %v", err)
	}
	if len(e.gw.Journal().Calls()) != 0 {
		t.Fatal("the gateway was called before readiness was observed")
	}
	_, err = e.admin.CoreV1().Pods(e.ns.Name).Create(e.ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "openshell-gateway-0", Labels: map[string]string{"app.kubernetes.io/name": "openshell"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "gateway", Image: "openshell-gateway"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	testbed.MarkPodReady(e.ctx, t, e.admin, e.ns.Name, "openshell-gateway-0")
	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	if err := d.EnsureNamespace(ctx, e.nctx()); err != nil {
		t.Fatalf("with Service and Ready Pod: %v", err)
	}
}
