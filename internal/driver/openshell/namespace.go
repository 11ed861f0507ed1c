package openshell

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
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
// Kubernetes namespace, server-side apply the workspace-chart resources and the NetworkPolicy
// resources, observe the optional readiness Service and Pods, check the gateway's Health, and
// finally create or adopt the Workspace named like the namespace. Kubernetes requests that do
// not depend on each other (the reads, then the applies of distinct objects) are issued
// together, so a prepared namespace costs two Kubernetes round trips instead of one per request.
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

	// Reads and checks, issued together: the namespace and every configured object are read at
	// once, and every refusal they justify happens before the first write.
	needLabels, clients, err := d.readNamespaceState(ctx, nctx, resources)
	if err != nil {
		return err
	}

	// Writes: the labels first (what the configured objects may select on), then every
	// configured object at once; each is an idempotent server-side apply of its own object.
	if needLabels {
		apply := corev1ac.Namespace(ns.Name).WithLabels(d.cfg.Gateway.OperatorNamespaceLabels)
		if _, err := nctx.Kube.CoreV1().Namespaces().Apply(ctx, apply, metav1.ApplyOptions{FieldManager: FieldManager, Force: true}); err != nil {
			return fmt.Errorf("label Namespace %s with gateway.operatorNamespaceLabels: %w", ns.Name, err)
		}
	}
	if err := forEachConcurrently(len(resources), func(i int) error { return applyResource(ctx, clients[i], resources[i]) }); err != nil {
		return err
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

// maxConcurrentRequests bounds the configured-object requests ensureNamespace has in flight at
// once (the namespace read goes beside them), so a long list of configured objects cannot flood
// the apiserver from one reconcile.
const maxConcurrentRequests = 8

// forEachConcurrently runs f for 0..n-1 with at most maxConcurrentRequests at a time and waits
// for all of them. It returns the error of the lowest index that failed, so the report does not
// depend on which request answered first.
func forEachConcurrently(n int, f func(i int) error) error {
	errs := make([]error, n)
	sem := make(chan struct{}, maxConcurrentRequests)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs[i] = f(i)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// readNamespaceState reads the tenant namespace and every configured object concurrently and
// checks them: the namespace's ownership and labels (checkNamespace) and each object's current
// owner. It returns whether the configured labels still need applying and each object's client.
func (d *Driver) readNamespaceState(ctx context.Context, nctx driver.NamespaceContext, resources []configuredResource) (bool, []dynamic.ResourceInterface, error) {
	ns := nctx.Namespace
	clients := make([]dynamic.ResourceInterface, len(resources))
	var needLabels bool
	var nsErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		needLabels, nsErr = d.checkNamespace(ctx, nctx)
	}()
	objErr := forEachConcurrently(len(resources), func(i int) error {
		r := resources[i]
		ri, err := resourceClient(nctx.Objects, r)
		if err != nil {
			return err
		}
		clients[i] = ri
		live, err := ri.Get(ctx, r.obj.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return fmt.Errorf("read %s %s/%s: %w", r.obj.GetKind(), ns.Name, r.obj.GetName(), err)
		}
		return checkOwnership(live, ns.ID)
	})
	wg.Wait()
	// The namespace's own refusal comes first, as when it was read first.
	if nsErr != nil {
		return false, nil, nsErr
	}
	if objErr != nil {
		return false, nil, objErr
	}
	return needLabels, clients, nil
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
