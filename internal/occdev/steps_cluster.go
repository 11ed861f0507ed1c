package occdev

import (
	"context"
	"fmt"
	"net"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/openclaw/occ/internal/kube"
	"github.com/openclaw/occ/internal/occdev/state"
)

// connectCluster lets the provider make the cluster available, then records how to reach it
// and which cluster it is, before anything is created inside it.
func connectCluster(ctx context.Context, sc *StepContext) error {
	access, err := sc.Plan.provider.Ensure(ctx, sc)
	if err != nil {
		return err
	}
	conn, err := connect(access, sc.owner, sc.state)
	if err != nil {
		return err
	}
	uid, err := conn.clusterUID(ctx)
	if err != nil {
		return err
	}
	if rec := sc.state.State().Cluster; rec.UID != "" && rec.UID != uid {
		return fmt.Errorf("this state records cluster kube-system uid %s, but context %q reaches uid %s: run occ dev down --state-dir %s first", rec.UID, access.Context, uid, sc.state.Path())
	}
	access.UID = uid
	conn.access = access
	if err := sc.state.Update(func(s *state.State) { s.Cluster = access; s.PlatformNamespace = sc.Plan.Namespace }); err != nil {
		return fmt.Errorf("record the cluster in the state: %w", err)
	}
	sc.cluster = conn
	return nil
}

func ensurePlatformNamespace(ctx context.Context, sc *StepContext) error {
	_, err := sc.cluster.objects.ensure(ctx, platformNamespace(sc.Plan.Namespace), true)
	return err
}

func ensureRuntimeClass(ctx context.Context, sc *StepContext) error {
	_, err := sc.cluster.objects.ensure(ctx, sandboxRuntimeClass(), true)
	return err
}

// applyAgentSandbox applies the verified Agent Sandbox manifest. Namespaces and
// CustomResourceDefinitions go first, and the CRDs must be Established before anything else,
// so a manifest that also carries custom resources applies in one pass.
func applyAgentSandbox(ctx context.Context, sc *StepContext) error {
	objs, err := sc.agentSandboxObjects(ctx)
	if err != nil {
		return err
	}
	rank := func(u *unstructured.Unstructured) int {
		switch u.GroupVersionKind().GroupKind().String() {
		case "Namespace":
			return 0
		case "CustomResourceDefinition.apiextensions.k8s.io":
			return 1
		}
		return 2
	}
	ordered := append([]*unstructured.Unstructured(nil), objs...)
	sort.SliceStable(ordered, func(i, j int) bool { return rank(ordered[i]) < rank(ordered[j]) })
	crdsDone := false
	for i, u := range ordered {
		if rank(u) == 2 && !crdsDone {
			if err := sc.waitCRDsEstablished(ctx, ordered[:i]); err != nil {
				return err
			}
			crdsDone = true
		}
		if _, err := sc.cluster.objects.ensure(ctx, u, true); err != nil {
			return fmt.Errorf("Agent Sandbox manifest: %w", err)
		}
	}
	if !crdsDone {
		return sc.waitCRDsEstablished(ctx, ordered)
	}
	return nil
}

// waitCRDsEstablished waits by watch until every CRD among objs serves, then refreshes the
// kind mapping so the new kinds resolve.
func (sc *StepContext) waitCRDsEstablished(ctx context.Context, objs []*unstructured.Unstructured) error {
	ctx, cancel := context.WithTimeout(ctx, sc.Plan.StartupTimeout)
	defer cancel()
	for _, u := range objs {
		if u.GetKind() != "CustomResourceDefinition" {
			continue
		}
		crds := apiextensionsv1.SchemeGroupVersion.WithResource("customresourcedefinitions")
		ri := sc.cluster.objects.dyn.Resource(crds)
		sel := fields.OneTermEqualSelector("metadata.name", u.GetName()).String()
		lw := &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				o.FieldSelector = sel
				return ri.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				o.FieldSelector = sel
				return ri.Watch(ctx, o)
			},
		}
		err := kube.WaitForNamedObject(ctx, lw, &unstructured.Unstructured{}, "CustomResourceDefinition "+u.GetName(), func(o runtime.Object) bool {
			crd, ok := o.(*unstructured.Unstructured)
			if !ok {
				return false
			}
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == string(apiextensionsv1.Established) && m["status"] == string(apiextensionsv1.ConditionTrue) {
					return true
				}
			}
			return false
		})
		if err != nil {
			return fmt.Errorf("%w (after %s; raise --startup-timeout if the apiserver is slow)", err, sc.Plan.StartupTimeout)
		}
	}
	sc.cluster.objects.mapper.Reset()
	return nil
}

// ensureJWTSecret creates the Gateway's JWT signing key Secret. A Secret this state already
// made is kept as it is: regenerating the key on a repeated step would only invalidate tokens.
func ensureJWTSecret(ctx context.Context, sc *StepContext) error {
	secret, err := gatewayJWTSecret(sc.Plan.Namespace)
	if err != nil {
		return err
	}
	_, err = sc.cluster.objects.ensure(ctx, secret, false)
	return err
}

// installGateway installs the pinned Gateway chart with the Helm SDK. The release is recorded
// before the install starts, so a failure half-way is still uninstalled.
func installGateway(ctx context.Context, sc *StepContext) error {
	ns := sc.Plan.Namespace
	rel, err := releaseStatus(sc.cluster.access, ns, GatewayRelease)
	if err != nil {
		return err
	}
	if rel == nil {
		values, err := sc.gatewayValues()
		if err != nil {
			return err
		}
		if err := sc.state.Record(state.HelmRelease(ns, GatewayRelease)); err != nil {
			return fmt.Errorf("record the Helm release in the state before installing it: %w", err)
		}
		labels := map[string]string{LabelManagedBy: ManagedByOCC, LabelDevState: sc.owner}
		if rel, err = installRelease(ctx, sc.cluster.access, ns, GatewayRelease, sc.charts.Gateway, values, labels, sc.Plan.StartupTimeout); err != nil {
			return err
		}
	} else if !sc.recorded(state.HelmRelease(ns, GatewayRelease)) {
		return fmt.Errorf("Helm release %s already exists in namespace %s and this state did not install it: remove it or choose another --namespace", GatewayRelease, ns)
	}
	sc.release = rel
	return sc.inspectGatewayService(ctx)
}

// inspectGatewayService reads the Gateway Service the chart made: its ClusterIP goes into the
// Installation, and the Compose profile depends on the fixed NodePort.
func (sc *StepContext) inspectGatewayService(ctx context.Context) error {
	ns := sc.Plan.Namespace
	svc, err := sc.cluster.kube.CoreV1().Services(ns).Get(ctx, GatewayServiceName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read the Gateway Service %s/%s the chart should have created: %w", ns, GatewayServiceName, err)
	}
	if net.ParseIP(svc.Spec.ClusterIP) == nil {
		return fmt.Errorf("OpenShell Gateway returned an invalid ClusterIP %q (Service %s/%s)", svc.Spec.ClusterIP, ns, GatewayServiceName)
	}
	sc.gatewayClusterIP = svc.Spec.ClusterIP
	if sc.Plan.ServiceType == string(corev1.ServiceTypeNodePort) {
		kept := false
		for _, p := range svc.Spec.Ports {
			kept = kept || p.NodePort == sc.Plan.NodePort
		}
		if svc.Spec.Type != corev1.ServiceTypeNodePort || !kept {
			return fmt.Errorf("OpenShell gateway did not retain its development NodePort %d (Service %s/%s is %s): another Service may hold the port", sc.Plan.NodePort, ns, GatewayServiceName, svc.Spec.Type)
		}
	}
	return nil
}

func (sc *StepContext) recorded(o Object) bool {
	for _, r := range sc.state.State().Objects {
		if r.Kind == o.Kind && r.APIVersion == o.APIVersion && r.Namespace == o.Namespace && r.Name == o.Name {
			return true
		}
	}
	return false
}

// applyDevelopmentPolicies creates the development NetworkPolicies and RBAC of seed 000.
func applyDevelopmentPolicies(ctx context.Context, sc *StepContext) error {
	ns := sc.Plan.Namespace
	for _, obj := range []runtime.Object{
		gatewayIngressPolicy(ns),
		oceEgressPolicy(ns),
		workspaceRBACRole(),
		workspaceRBACBinding(ns),
	} {
		if _, err := sc.cluster.objects.ensure(ctx, obj, true); err != nil {
			return err
		}
	}
	return nil
}
