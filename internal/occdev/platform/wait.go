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

// PlatformWorkloads are the workloads of the Agent Sandbox manifest and of the installed Gateway
// release; a Gateway release without any workload means the pinned chart is not the one occ
// expects.
func PlatformWorkloads(agentSandbox []*unstructured.Unstructured, gw *Gateway, namespace string) ([]Workload, error) {
	all := WorkloadsIn(agentSandbox, "default")
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
