package openshell

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/dynamic"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/gateway"
	"github.com/openclaw/occ/internal/kube"
)

const (
	msgManagedEnsure  = "OpenShell managed workspace mode is not implemented; cannot ensure a Namespace."
	msgServiceMissing = "OpenShell gateway Service is unavailable."
	msgPodNotReady    = "OpenShell gateway Pod is not ready."
	msgUnhealthy      = "OpenShell gateway is not healthy."
)

// EnsureNamespace implements driver.Driver for operator workspace mode. In order: label the
// Kubernetes namespace, server-side apply the workspace-chart resources and then the
// NetworkPolicy resources, observe the optional readiness Service and Pods, check the gateway's
// Health, and finally create or adopt the Workspace named like the namespace.
//
// Managed mode fails before the Kubernetes client or the gateway is used. Everything that can
// be checked without mutating (configuration, the namespace's ownership and labels, every
// configured object's kind, scope and current owner) is checked before the first write, so a
// refusal leaves the namespace as it was.
func (d *Driver) EnsureNamespace(ctx context.Context, nctx driver.NamespaceContext) error {
	if !d.operator() {
		return plain(msgManagedEnsure, nil)
	}
	ns := nctx.Namespace
	wsName, err := WorkspaceName(ns.Name)
	if err != nil {
		return err
	}
	if errs := validation.IsValidLabelValue(ns.ID); ns.ID == "" || len(errs) > 0 {
		return errorf("OCC Namespace ID %q must be a nonempty Kubernetes label value", ns.ID)
	}
	if err := d.requireGateway("ensureNamespace"); err != nil {
		return err
	}
	if nctx.Kube == nil {
		return errorf("OpenShell ensureNamespace needs Compute's Kubernetes client")
	}
	resources, err := d.prepareResources(ns)
	if err != nil {
		return err
	}
	if len(resources) > 0 && nctx.Objects == nil {
		return errorf("OpenShell ensureNamespace needs Compute's object applier for %d configured resources", len(resources))
	}

	// Reads and checks.
	needLabels, err := d.checkNamespace(ctx, nctx)
	if err != nil {
		return err
	}
	clients := make([]dynamic.ResourceInterface, len(resources))
	for i, r := range resources {
		ri, err := resourceClient(nctx.Objects, r)
		if err != nil {
			return err
		}
		live, err := ri.Get(ctx, r.obj.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("read %s %s/%s: %w", r.obj.GetKind(), ns.Name, r.obj.GetName(), err)
		default:
			if err := checkOwnership(live, ns.ID); err != nil {
				return err
			}
		}
		clients[i] = ri
	}

	// Writes, in the seed's order.
	if needLabels {
		apply := corev1ac.Namespace(ns.Name).WithLabels(d.cfg.Gateway.OperatorNamespaceLabels)
		if _, err := nctx.Kube.CoreV1().Namespaces().Apply(ctx, apply, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
			return fmt.Errorf("label Namespace %s with gateway.operatorNamespaceLabels: %w", ns.Name, err)
		}
	}
	for i, r := range resources {
		if err := applyResource(ctx, clients[i], r); err != nil {
			return err
		}
	}
	d.log.LogAttrs(ctx, slog.LevelDebug, "applied OpenShell workspace resources", slog.String("namespace", ns.Name), slog.Int("count", len(resources)), slog.Bool("labelled", needLabels))
	if err := d.awaitReadiness(ctx, nctx); err != nil {
		return err
	}
	h, err := d.gw.Health(ctx)
	if err != nil {
		return gatewayError("Health", err)
	}
	if !h.Healthy() {
		return plain(msgUnhealthy, errorf("Health reported %s", h.Status))
	}
	return d.ensureWorkspace(ctx, wsName, ns.ID)
}

// checkNamespace reads the tenant namespace, requires Compute's ownership label for this OCC
// Namespace, and refuses a configured label key that already holds another value (someone else
// relies on it). It reports whether any configured label still has to be applied.
func (d *Driver) checkNamespace(ctx context.Context, nctx driver.NamespaceContext) (bool, error) {
	ns := nctx.Namespace
	live, err := nctx.Kube.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, plain(fmt.Sprintf("OpenShell operator Namespace %s is unavailable.", ns.Name), nil)
	}
	if err != nil {
		return false, fmt.Errorf("read Namespace %s: %w", ns.Name, err)
	}
	if live.DeletionTimestamp != nil {
		return false, plain(fmt.Sprintf("OpenShell operator Namespace %s is unavailable.", ns.Name), errorf("it is being deleted"))
	}
	if got := live.Labels[driver.LabelNamespace]; got != ns.ID {
		return false, plain(fmt.Sprintf("OpenShell operator Namespace %s is not owned by OCC Namespace %s.", ns.Name, ns.ID),
			errorf("label %s is %q; Compute must prepare the namespace first", driver.LabelNamespace, got))
	}
	need := false
	for _, k := range slices.Sorted(maps.Keys(d.cfg.Gateway.OperatorNamespaceLabels)) {
		want := d.cfg.Gateway.OperatorNamespaceLabels[k]
		got, ok := live.Labels[k]
		switch {
		case !ok:
			need = true
		case got != want:
			return false, plain(fmt.Sprintf("OpenShell operator Namespace label %s is owned with another value.", k), errorf("Namespace %s has %s=%q; configured %q", ns.Name, k, got, want))
		}
	}
	return need, nil
}

// awaitReadiness observes gateway.readiness, when configured: the Service must exist and a Pod
// matching the selector must be Ready, both within timeoutMs, polled every pollIntervalMs (the
// configured cadence is part of the contract, which is why this polls instead of watching).
func (d *Driver) awaitReadiness(ctx context.Context, nctx driver.NamespaceContext) error {
	r := d.cfg.Gateway.Readiness
	if r == nil {
		return nil
	}
	if r.TimeoutMs == nil || *r.TimeoutMs <= 0 {
		return errorf("gateway.readiness.timeoutMs must be a positive safe integer.")
	}
	deadline, cancel := context.WithTimeout(ctx, time.Duration(*r.TimeoutMs)*time.Millisecond)
	defer cancel()
	interval := time.Duration(r.EffectivePollIntervalMs()) * time.Millisecond
	ns := nctx.Namespace.Name
	err := wait.PollUntilContextCancel(deadline, interval, true, func(ctx context.Context) (bool, error) {
		_, err := nctx.Kube.CoreV1().Services(ns).Get(ctx, r.ServiceName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return plain(msgServiceMissing, errorf("Service %s/%s did not appear within %dms", ns, r.ServiceName, *r.TimeoutMs))
	}
	selector := labels.SelectorFromSet(r.PodSelector).String()
	err = wait.PollUntilContextCancel(deadline, interval, true, func(ctx context.Context) (bool, error) {
		pods, err := nctx.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(pods.Items, func(p corev1.Pod) bool { return kube.PodReady(&p) }), nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return plain(msgPodNotReady, errorf("no Ready Pod matched %s in %s within %dms", selector, ns, *r.TimeoutMs))
	}
	return nil
}

// workspaceLabels are the ownership labels of a Workspace OCC creates.
func workspaceLabels(namespaceID string) map[string]string {
	return map[string]string{driver.LabelManagedBy: driver.ManagedByValue, driver.LabelNamespaceID: namespaceID}
}

// ensureWorkspace reads the Workspace, creates it when missing, and re-reads it when a
// concurrent creator won (ALREADY_EXISTS). It then adopts it only on exact ownership: the name,
// both labels and the ACTIVE phase.
func (d *Driver) ensureWorkspace(ctx context.Context, name, namespaceID string) error {
	ws, err := d.gw.GetWorkspace(ctx, name)
	if gateway.IsNotFound(err) {
		d.log.LogAttrs(ctx, slog.LevelDebug, "creating OpenShell Workspace", slog.String("workspace", name))
		ws, err = d.gw.CreateWorkspace(ctx, name, workspaceLabels(namespaceID))
		if gateway.IsAlreadyExists(err) {
			ws, err = d.gw.GetWorkspace(ctx, name)
			if gateway.IsNotFound(err) {
				return plain(fmt.Sprintf("OpenShell Workspace %s disappeared during creation.", name), nil)
			}
			if err != nil {
				return gatewayError("GetWorkspace", err)
			}
		} else if err != nil {
			return gatewayError("CreateWorkspace", err)
		}
	} else if err != nil {
		return gatewayError("GetWorkspace", err)
	}
	if err := verifyWorkspaceOwnership(ws, name, namespaceID); err != nil {
		return err
	}
	if ws.Phase != gateway.WorkspacePhaseActive {
		return plain(fmt.Sprintf("OpenShell Workspace %s is not active.", name), errorf("phase %s", ws.Phase))
	}
	return nil
}

func verifyWorkspaceOwnership(ws *gateway.Workspace, name, namespaceID string) error {
	for k, v := range workspaceLabels(namespaceID) {
		if ws.Labels[k] != v {
			return plain(fmt.Sprintf("Refusing OpenShell Workspace %s without exact OCC Namespace ownership.", name), errorf("label %s is %q, not %q", k, ws.Labels[k], v))
		}
	}
	if ws.Name != name {
		return plain(fmt.Sprintf("Refusing OpenShell Workspace %s without exact OCC Namespace ownership.", name), errorf("the gateway returned Workspace %q", ws.Name))
	}
	return nil
}
