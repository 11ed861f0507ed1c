package openshell

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/gateway"
)

// Cleanup implements driver.Driver.
//
// With a revision (revision stop or retirement) it deletes the revision's Sandbox by its derived
// name, which works even when the Harness Pod (or the whole create response) was lost, and then
// the revision's runtime provider; NOT_FOUND is success for both.
//
// Without a revision (Namespace deletion, after every revision's cleanup) it verifies the
// Workspace's exact OCC ownership, deletes the runtime providers and profiles provisioning
// added to it, deletes it (a TERMINATING Workspace left by a lost response
// is deleted again), and then removes the configured workspace and NetworkPolicy resources in
// reverse order. Any failure is returned so Compute keeps the namespace and retries later.
func (d *Driver) Cleanup(ctx context.Context, cctx driver.CleanupContext) error {
	if cctx.Revision != nil {
		return d.cleanupRevision(ctx, cctx.NamespaceContext, *cctx.Revision)
	}
	return d.cleanupNamespace(ctx, cctx.NamespaceContext)
}

func (d *Driver) cleanupRevision(ctx context.Context, nctx driver.NamespaceContext, rev driver.Revision) error {
	if !d.operator() {
		return plain("OpenShell managed workspace mode is not implemented; cannot clean up a Sandbox.", nil)
	}
	if rev.NamespaceID != nctx.Namespace.ID || rev.SandboxDriverID != d.id {
		return plain("Refusing to delete a Sandbox outside its selected AgentRevision and Namespace.",
			errorf("revision %s has Namespace %q and sandboxDriverId %q; expected %q and %q", rev.ID, rev.NamespaceID, rev.SandboxDriverID, nctx.Namespace.ID, d.id))
	}
	ws, err := WorkspaceName(nctx.Namespace.Name)
	if err != nil {
		return err
	}
	name, err := SandboxName(d.cfg.EffectiveSandboxNamePrefix(), rev.ID)
	if err != nil {
		return err
	}
	if err := d.requireGateway("cleanup"); err != nil {
		return err
	}
	if _, err := d.gw.DeleteSandbox(ctx, ws, name); err != nil {
		return gatewayError("DeleteSandbox", fmt.Errorf("Sandbox %s of revision %s: %w", name, rev.ID, err))
	}
	// Sandbox before provider: the runtime provider goes only once nothing can use it, and
	// it must go so the Workspace can be deleted later.
	// Native OpenClaw has one only when it enrolls a workspace node; the read finds none otherwise.
	if rev.Harness.ID == driver.HarnessCodex || rev.Harness.ID == driver.HarnessOpenClaw {
		return d.deleteRuntimeProvider(ctx, ws, rev)
	}
	return nil
}

func (d *Driver) cleanupNamespace(ctx context.Context, nctx driver.NamespaceContext) error {
	if !d.operator() {
		return plain("OpenShell managed workspace mode is not implemented; cannot clean up a Namespace.", nil)
	}
	ns := nctx.Namespace
	wsName, err := WorkspaceName(ns.Name)
	if err != nil {
		return err
	}
	if err := d.requireGateway("cleanup"); err != nil {
		return err
	}
	resources, err := d.prepareResources(ns)
	if err != nil {
		return err
	}
	if len(resources) > 0 && nctx.Objects == nil {
		return errorf("OpenShell cleanup needs Compute's object applier for %d configured resources", len(resources))
	}

	ws, err := d.gw.GetWorkspace(ctx, wsName)
	switch {
	case gateway.IsNotFound(err):
	case err != nil:
		return gatewayError("GetWorkspace", err)
	default:
		// The phase is not checked: after a lost DeleteWorkspace response the Workspace is
		// TERMINATING, and deleting it again is exactly the retry.
		if err := verifyWorkspaceOwnership(ws, wsName, ns.ID); err != nil {
			return err
		}
		if err := d.deleteRuntimeObjects(ctx, wsName, ns.ID); err != nil {
			return err
		}
		if _, err := d.gw.DeleteWorkspace(ctx, wsName); err != nil {
			if errors.Is(err, gateway.ErrDeletionNotConfirmed) {
				return plain("OpenShell DeleteWorkspace did not confirm Workspace deletion.", err)
			}
			// The workspace resources stay: the gateway may still need them to finish
			// removing the Workspace's Sandboxes.
			return gatewayError("DeleteWorkspace", fmt.Errorf("Workspace %s: %w", wsName, err))
		}
	}

	var errs []error
	for _, r := range slices.Backward(resources) {
		errs = append(errs, deleteOwned(ctx, nctx, r))
	}
	return errors.Join(errs...)
}

// deleteOwned deletes a configured object only if it carries this Namespace's ownership, with
// a UID precondition so an object recreated meanwhile by someone else is left alone. An object
// that is already gone counts as deleted; one without OCC ownership is an error, because
// ownership is ambiguous and Compute must not delete the namespace over it.
func deleteOwned(ctx context.Context, nctx driver.NamespaceContext, r configuredResource) error {
	ri, err := resourceClient(nctx.Objects, r)
	if err != nil {
		return err
	}
	live, err := ri.Get(ctx, r.obj.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s %s/%s: %w", r.obj.GetKind(), r.obj.GetNamespace(), r.obj.GetName(), err)
	}
	if live.GetLabels()[driver.LabelNamespace] != nctx.Namespace.ID && live.GetAnnotations()[driver.AnnotationNamespaceID] != nctx.Namespace.ID {
		return errorf("refusing to delete %s %s/%s (%s): it does not carry OCC Namespace %s ownership; remove it by hand if it is not needed",
			r.obj.GetKind(), r.obj.GetNamespace(), r.obj.GetName(), r.path, nctx.Namespace.ID)
	}
	uid := live.GetUID()
	err = ri.Delete(ctx, r.obj.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s %s/%s: %w", r.obj.GetKind(), r.obj.GetNamespace(), r.obj.GetName(), err)
	}
	return nil
}
