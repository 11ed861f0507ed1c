package platform

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/openclaw/occ/internal/kube"
	"github.com/openclaw/occ/internal/occdev/artifacts"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/step"
)

// Workload is a Deployment or StatefulSet `up` waits for.
type Workload = kube.Workload

// WorkloadsIn lists the Deployments and StatefulSets among objs; objects without a namespace
// belong to defaultNamespace (as Helm installs them).
func WorkloadsIn(objs []*unstructured.Unstructured, defaultNamespace string) []Workload {
	var ws []Workload
	for _, u := range objs {
		if u.GetAPIVersion() != "apps/v1" || (u.GetKind() != "Deployment" && u.GetKind() != "StatefulSet") {
			continue
		}
		ns := u.GetNamespace()
		if ns == "" {
			ns = defaultNamespace
		}
		ws = append(ws, Workload{Kind: u.GetKind(), Namespace: ns, Name: u.GetName()})
	}
	return ws
}

// manifestNamespace is the namespace of a manifest's object that names none (kubectl's).
const manifestNamespace = "default"

// What the platform's wait selects of a manifest or a release, and what it waits to see of
// each workload.
const (
	workloadKinds = "the Deployments and StatefulSets"
	workloadReady = "every replica is ready"
)

// workloadWaits are the dry run's waits for ws.
func workloadWaits(ws []Workload) []step.Wait {
	out := make([]step.Wait, 0, len(ws))
	for _, w := range ws {
		out = append(out, step.Wait{Kind: w.Kind, Namespace: w.Namespace, Name: w.Name, Ready: workloadReady})
	}
	return out
}

// PlatformWorkloads are the workloads of the Agent Sandbox manifest and of the installed Gateway
// release; a Gateway release without any workload means the pinned chart is not the one occ
// expects.
func PlatformWorkloads(agentSandbox []*unstructured.Unstructured, gw *Gateway, namespace string) ([]Workload, error) {
	all := WorkloadsIn(agentSandbox, manifestNamespace)
	if gw == nil || gw.Release == nil {
		return nil, errors.New("the Gateway release is unknown: the install step did not run")
	}
	rendered, err := artifacts.ParseYAML([]byte(gw.Release.Manifest), "Gateway release "+GatewayRelease)
	if err != nil {
		return nil, err
	}
	own := WorkloadsIn(rendered, namespace)
	if len(own) == 0 {
		return nil, errors.New("the Gateway chart installed no Deployment or StatefulSet: the pinned chart is not the one occ expects")
	}
	return append(all, own...), nil
}

// WaitForWorkloads waits, by watch, until every workload reports every replica ready. Each
// wait has its own timeout; it ends early, with a *kube.StuckError naming the Pod, the reason
// and the fix, when a Pod of the workload cannot come up by itself, and a timeout names the
// workload and says what was last seen. status, when set, receives what the wait sees.
func WaitForWorkloads(ctx context.Context, kc kubernetes.Interface, workloads []Workload, timeout time.Duration, status func(string)) error {
	for _, w := range workloads {
		wctx, cancel := context.WithTimeout(ctx, timeout)
		var report func(string)
		if status != nil {
			report = func(s string) { status(w.String() + ": " + s) }
		}
		err := kube.WaitForWorkload(wctx, kc, w, kube.WaitOptions{Status: report})
		cancel()
		if err != nil {
			if ctx.Err() == nil && errors.Is(err, kube.ErrWaitTimeout) {
				return fmt.Errorf("%s did not become ready within %s: check its Pods (events, image pulls) in namespace %s, or raise --startup-timeout: %w", w, timeout, w.Namespace, err)
			}
			return err
		}
	}
	return nil
}

// PlatformWait is what WaitForPlatform waits for, as a dry run knows it before anything is
// fetched or installed.
type PlatformWait struct {
	// AgentSandbox is the manifest, and AgentSandboxObjects its objects when the plan could read
	// them without a download (nil otherwise).
	AgentSandbox        AgentSandboxManifest
	AgentSandboxObjects []*unstructured.Unstructured
	// Namespace is the platform namespace, the Gateway release's.
	Namespace string
	// Routing is the plan's routing, and RoutingControllers its admitted manifests when local
	// (RoutingPlan.Local; nil otherwise).
	Routing            RoutingPlan
	RoutingControllers []*RoutingController
	Timeout            time.Duration
}

// Describe is the dry run's account of WaitForPlatform: the Agent Sandbox manifest's workloads
// (named when its objects are known), the Gateway release's, and with routing the controllers'
// and the GatewayClass, each as the wait selects it.
func (w PlatformWait) Describe() step.Description {
	d := step.Note(fmt.Sprintf("nothing created; waits by watch up to %s per workload", w.Timeout))
	if len(w.AgentSandboxObjects) > 0 {
		d = d.Waiting(workloadWaits(WorkloadsIn(w.AgentSandboxObjects, manifestNamespace))...)
	} else {
		d = d.Waiting(step.Wait{Kind: "manifest", Name: w.AgentSandbox.Source(), Selects: workloadKinds, Ready: workloadReady, Note: "named once it is read"})
	}
	d = d.Waiting(step.Wait{Kind: "Helm release", Namespace: w.Namespace, Name: GatewayRelease, Selects: workloadKinds, Ready: workloadReady})
	if !w.Routing.Installs() {
		return d
	}
	if len(w.RoutingControllers) > 0 {
		for _, c := range w.RoutingControllers {
			d = d.Waiting(workloadWaits(c.Workloads())...)
		}
	} else {
		for _, c := range w.Routing.Controllers {
			d = d.Waiting(step.Wait{Kind: "manifest", Name: c, Selects: workloadKinds, Ready: workloadReady, Note: "named once it is read"})
		}
	}
	return d.Waiting(step.Wait{Kind: "GatewayClass", Name: RoutingGatewayClass, Ready: gatewayClassAcceptedReady})
}

// WaitForPlatform waits until the workloads of the Agent Sandbox manifest agentSandbox, of the
// Gateway gw in namespace and of the routing controllers report every replica ready, each
// within timeout, and then, with routing, until Envoy Gateway accepts the GatewayClass; status
// receives the waits' progress.
func WaitForPlatform(ctx context.Context, c *kubeobj.Conn, agentSandbox []*unstructured.Unstructured, gw *Gateway, namespace string, routing []*RoutingController, timeout time.Duration, status func(string)) error {
	workloads, err := PlatformWorkloads(agentSandbox, gw, namespace)
	if err != nil {
		return err
	}
	for _, c := range routing {
		workloads = append(workloads, c.Workloads()...)
	}
	if err := WaitForWorkloads(ctx, c.Kube, workloads, timeout, status); err != nil {
		return err
	}
	if len(routing) > 0 {
		return WaitGatewayClassAccepted(ctx, c, timeout)
	}
	return nil
}
