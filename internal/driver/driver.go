package driver

import (
	"context"

	"github.com/openclaw/occ/internal/kube"
	"k8s.io/client-go/kubernetes"
)

// Driver is a SandboxDriver: it confines a dedicated Agent Harness's network, filesystem or
// processes while Compute keeps the gateway, workload identity, baseline isolation, routing
// and activation.
//
// Every method takes the caller's context for cancellation. Cancelling after a mutating call
// was dispatched only abandons the local wait; it does not prove the remote mutation stopped,
// which is why every operation is written to converge when simply called again.
type Driver interface {
	// ID is the configured driver id (drivers.sandbox.id); revisions pin it as sandboxDriverId.
	ID() string

	// Facets declares the containment this driver enforces. It is never empty.
	Facets() []Facet

	// ConfigureAgent returns the native configuration to freeze into the revision. It must not
	// modify configuration (the caller's copy is read-only) and cannot change the Harness.
	// It is pure and synchronous: OCC also calls it when it re-reads status.
	ConfigureAgent(configuration Configuration, harness Harness) (Configuration, error)

	// EnsureNamespace prepares the backend for a Namespace Compute has already isolated.
	EnsureNamespace(ctx context.Context, nctx NamespaceContext) error

	// ProvisionHarness creates (or adopts the exact existing) dedicated Harness for
	// hctx.Revision and returns its stable reference. It validates everything it can before
	// the first mutation, so a refused revision leaves nothing behind.
	ProvisionHarness(ctx context.Context, hctx HarnessContext) (SandboxResourceRef, error)

	// Cleanup removes what the driver made. With cctx.Revision set it removes that revision's
	// Harness (even when its Pod is already gone); with a nil Revision it removes the
	// Namespace-level resources, and an error means Compute must keep the Namespace and retry.
	Cleanup(ctx context.Context, cctx CleanupContext) error
}

// Namespace identifies an OCC Namespace and the physical Kubernetes namespace Compute made for
// it. The two differ: the OCC ID is the tenant's stable identifier and ownership label value,
// the physical name is Compute's bounded digest name (oce- plus 15 characters).
type Namespace struct {
	// ID is the OCC Namespace ID (the ownership label value on everything the driver makes).
	ID string `json:"id"`
	// Name is the Kubernetes namespace name; OpenShell Workspaces take the same name.
	Name string `json:"name"`
}

// NamespaceContext is what Compute hands a driver for Namespace-scoped operations.
type NamespaceContext struct {
	Namespace Namespace
	// Kube is Compute's client. Drivers use it rather than building their own, so they act with
	// exactly Compute's identity and permissions.
	Kube kubernetes.Interface
	// Objects server-side applies arbitrary rendered objects (workspace-chart resources,
	// provider NetworkPolicies). It is Compute's, built from the same credentials as Kube, and
	// may be nil when the configuration lists no such resources.
	Objects *kube.Applier
}

// HarnessContext adds the immutable revision and the Harness requirements Compute prepared.
// Drivers must use these prepared values rather than guessing a login mode or resolving
// another credential.
type HarnessContext struct {
	NamespaceContext
	Revision     Revision
	Requirements HarnessWorkloadRequirements
}

// CleanupContext is a NamespaceContext with an optional revision: set during revision stop or
// retirement, nil during Namespace deletion.
type CleanupContext struct {
	NamespaceContext
	Revision *Revision
}
