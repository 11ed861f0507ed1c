// Package compute is the Kubernetes Compute side of the SandboxDriver flow, the part
// `occ sandbox` plays by hand and the control plane's worker plays for real:
//
//	Prepare Namespace  physical namespace (oce- + digest), baseline isolation, driver.EnsureNamespace
//	Derive Harness     HarnessWorkloadRequirements from an immutable revision file
//	Attach sources     CredentialGateway.AttachForRevision
//	Create Sandbox     driver.ProvisionHarness, whose returned reference must belong to the revision
//	Wait for Harness   the exact revision's Pod, by watch, until Ready
//	Attachment gate    every credential attachment ready, or the revision stays inactive
//	Delete Sandbox     revision shutdown: driver.Cleanup with the revision
//	Delete Namespace   driver.Cleanup without a revision, then the namespace, only if that worked
//
// Compute owns baseline isolation, workload identity and activation; the Sandbox driver owns the
// Harness it provisions. Every operation here is safe to repeat and checks all it can before
// its first mutation.
package compute

import (
	"context"
	"fmt"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/kube"
)

// Compute drives one Sandbox driver against one cluster. It holds no per-call state, so one
// value serves concurrent operations on different Namespaces.
type Compute struct {
	// Kube is Compute's client; drivers receive it in their contexts.
	Kube kubernetes.Interface
	// Objects applies the driver's configured workspace and NetworkPolicy resources; nil when
	// the configuration has none.
	Objects *kube.Applier
	// Driver is the selected Sandbox driver.
	Driver driver.Driver
	// Credentials is the paired Credential Gateway; nil when none is configured.
	Credentials driver.CredentialGateway
	// Baseline is the namespace isolation; the zero value means DefaultBaseline.
	Baseline *Baseline
	// Preflight, when set, validates the exact provisioning request without any I/O (the
	// OpenShell driver's request builder), given the credential sources the Credential Gateway
	// will attach. Provision runs it before the first mutation, so a revision the driver would
	// refuse leaves no namespace or Workspace behind.
	Preflight func(hctx driver.HarnessContext, sources []driver.CredentialSource) error
	// PodTimeout bounds the Harness Pod wait; zero means DefaultPodReadyTimeout.
	PodTimeout time.Duration
	// Gate bounds the credential attachment gate; zero fields take the defaults.
	Gate AttachmentGate
	// Progress receives step events; nil discards them.
	Progress Progress
}

func (c *Compute) baseline() Baseline {
	if c.Baseline == nil {
		return DefaultBaseline()
	}
	return *c.Baseline
}

// NamespaceContext builds the context drivers receive for a Namespace.
func (c *Compute) NamespaceContext(ns driver.Namespace) driver.NamespaceContext {
	return driver.NamespaceContext{Namespace: ns, Kube: c.Kube, Objects: c.Objects}
}

// ResolveNamespace returns the OCC Namespace with its physical name, without touching the
// cluster.
func ResolveNamespace(namespaceID string) (driver.Namespace, error) {
	name, err := PhysicalNamespaceName(namespaceID)
	if err != nil {
		return driver.Namespace{}, err
	}
	return driver.Namespace{ID: namespaceID, Name: name}, nil
}

// PrepareNamespace is the "Prepare Namespace" step: it creates (or adopts, on exact ownership)
// the physical namespace, applies baseline isolation, and only then lets the Sandbox driver
// prepare its backend. Repeating it converges on the same world.
func (c *Compute) PrepareNamespace(ctx context.Context, namespaceID string) (driver.Namespace, error) {
	ns, err := ResolveNamespace(namespaceID)
	if err != nil {
		return driver.Namespace{}, err
	}
	b := c.baseline()
	if err := b.Validate(); err != nil {
		return driver.Namespace{}, err
	}
	err = c.Progress.step("namespace "+ns.Name, func(func(string)) error {
		_, err := EnsurePhysicalNamespace(ctx, c.Kube, namespaceID)
		return err
	})
	if err != nil {
		return ns, err
	}
	err = c.Progress.step("baseline isolation", func(func(string)) error {
		return ApplyBaseline(ctx, c.Kube, namespaceID, ns.Name, b)
	})
	if err != nil {
		return ns, err
	}
	err = c.Progress.step("driver ensureNamespace", func(func(string)) error {
		return c.Driver.EnsureNamespace(ctx, c.NamespaceContext(ns))
	})
	if err != nil {
		return ns, fmt.Errorf("Sandbox driver %s could not prepare namespace %s for OCC Namespace %s: %w", c.Driver.ID(), ns.Name, ns.ID, err)
	}
	return ns, nil
}

// Plan is everything Provision derived from a revision file before touching anything.
type Plan struct {
	Namespace    driver.Namespace
	Revision     driver.Revision
	Requirements driver.HarnessWorkloadRequirements
	Sources      []driver.CredentialSource
	Selector     string
}

// PlanRevision derives the provisioning plan from a revision file and checks it against the
// selected driver, with no I/O: the revision must be pinned to this driver, its configuration
// must already be frozen through the driver's configureAgent, and the requirements must
// derive cleanly.
func (c *Compute) PlanRevision(rf *RevisionFile) (*Plan, error) {
	ns, err := ResolveNamespace(rf.NamespaceID)
	if err != nil {
		return nil, err
	}
	if rf.SandboxDriverID != c.Driver.ID() {
		return nil, fmt.Errorf("revision %s is pinned to Sandbox driver %q, but the Installation selects %q (drivers.sandbox.id): use the Installation the revision was admitted with, or admit a new revision",
			rf.RevisionID, rf.SandboxDriverID, c.Driver.ID())
	}
	rev := rf.Revision()
	configured, err := c.Driver.ConfigureAgent(rev.Configuration.Clone(), rev.Harness)
	if err != nil {
		return nil, err
	}
	if !reflect.DeepEqual(normalizeConfiguration(configured), normalizeConfiguration(rev.Configuration)) {
		return nil, fmt.Errorf("revision %s: configuration is not frozen through the driver's configureAgent (it would still change it); run `occ sandbox configure-agent --revision FILE` and use its output as the revision file", rf.RevisionID)
	}
	req, err := rf.Requirements()
	if err != nil {
		return nil, fmt.Errorf("revision %s: %w", rf.RevisionID, err)
	}
	sources := rf.Sources()
	if err := c.checkSources(ns, sources); err != nil {
		return nil, fmt.Errorf("revision %s: %w", rf.RevisionID, err)
	}
	return &Plan{Namespace: ns, Revision: rev, Requirements: req, Sources: sources, Selector: rf.HarnessSelector()}, nil
}

// checkSources asks the Credential Gateway (or, when none is set, the Sandbox driver, which the
// OpenShell Backend pairs with its own) whether it would attach each source, naming the
// revision file key of a source it would refuse.
func (c *Compute) checkSources(ns driver.Namespace, sources []driver.CredentialSource) error {
	var checker driver.SourceChecker
	if sc, ok := c.Credentials.(driver.SourceChecker); ok {
		checker = sc
	} else if sc, ok := c.Driver.(driver.SourceChecker); ok {
		checker = sc
	}
	if checker == nil {
		return nil
	}
	for i, s := range sources {
		if err := checker.CheckSource(ns, s); err != nil {
			return fmt.Errorf("credentialSources[%d].credentialGatewayId is %q: %w", i, s.CredentialGatewayID, err)
		}
	}
	return nil
}

// Provision runs the whole Compute flow for a revision and returns its stable Sandbox
// reference once the Harness Pod is Ready and every credential attachment is applied. Running
// it again adopts what an earlier run created and resumes where it stopped.
func (c *Compute) Provision(ctx context.Context, rf *RevisionFile) (*ProvisionResult, error) {
	plan, err := c.PlanRevision(rf)
	if err != nil {
		return nil, err
	}
	if c.Preflight != nil {
		hctx := driver.HarnessContext{NamespaceContext: c.NamespaceContext(plan.Namespace), Revision: plan.Revision, Requirements: plan.Requirements}
		if err := c.Preflight(hctx, plan.Sources); err != nil {
			return nil, err
		}
	}
	if len(plan.Sources) > 0 && c.Credentials == nil {
		return nil, fmt.Errorf("revision %s binds %d credential source(s) but the Installation has no Credential Gateway: add drivers.credential_gateway paired with the Sandbox driver", rf.RevisionID, len(plan.Sources))
	}

	ns, err := c.PrepareNamespace(ctx, rf.NamespaceID)
	if err != nil {
		return nil, err
	}
	hctx := driver.HarnessContext{NamespaceContext: c.NamespaceContext(ns), Revision: plan.Revision, Requirements: plan.Requirements}

	if len(plan.Sources) > 0 {
		err = c.Progress.step("attach credential sources", func(note func(string)) error {
			atts, err := c.Credentials.AttachForRevision(ctx, hctx, plan.Sources)
			if err != nil {
				return err
			}
			if len(atts) != len(plan.Sources) {
				return fmt.Errorf("Credential Gateway returned %d attachment(s) for %d credential source(s); refusing a partial attachment set", len(atts), len(plan.Sources))
			}
			hctx.Requirements.CredentialAttachments = atts
			note(fmt.Sprintf("%d attachment(s) issued", len(atts)))
			return nil
		})
		if err != nil {
			return nil, err
		}
	}

	var ref driver.SandboxResourceRef
	err = c.Progress.step("driver provisionHarness", func(note func(string)) error {
		ref, err = c.Driver.ProvisionHarness(ctx, hctx)
		if err != nil {
			return err
		}
		note("Sandbox " + ref.ResourceName)
		return ref.VerifyFor(ns.Name, plan.Revision)
	})
	if err != nil {
		return nil, err
	}

	var pod *corev1.Pod
	err = c.Progress.step("wait for Harness Pod", func(note func(string)) error {
		pod, err = WaitForHarnessPod(ctx, c.Kube, PodWait{Namespace: ns.Name, Selector: plan.Selector, Timeout: c.PodTimeout}, note)
		return err
	})
	if err != nil {
		return nil, err
	}

	res := &ProvisionResult{Ref: ref, Namespace: ns, Pod: pod.Name}
	if n := len(hctx.Requirements.CredentialAttachments); n > 0 {
		err = c.Progress.step("credential attachment gate", func(note func(string)) error {
			res.Attachments, err = WaitForAttachments(ctx, c.Credentials, hctx.NamespaceContext, ref, hctx.Requirements.CredentialAttachments, c.Gate, note)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return res, nil
}

// ProvisionResult is what a successful Provision established.
type ProvisionResult struct {
	Ref         driver.SandboxResourceRef `json:"ref"`
	Namespace   driver.Namespace          `json:"namespace"`
	Pod         string                    `json:"pod"`
	Attachments []driver.AttachmentStatus `json:"attachments,omitempty"`
}

// ShutdownRevision is revision shutdown: the driver removes the revision's Harness, deriving
// its identity from the revision alone, so it works when the Pod (or the whole Sandbox) is
// already gone. It is safe to repeat.
func (c *Compute) ShutdownRevision(ctx context.Context, rf *RevisionFile) error {
	ns, err := ResolveNamespace(rf.NamespaceID)
	if err != nil {
		return err
	}
	rev := rf.Revision()
	return c.Progress.step("driver cleanup (revision "+rev.ID+")", func(func(string)) error {
		return c.Driver.Cleanup(ctx, driver.CleanupContext{NamespaceContext: c.NamespaceContext(ns), Revision: &rev})
	})
}

// NamespaceDeletion reports what DeleteNamespace did.
type NamespaceDeletion struct {
	Namespace driver.Namespace `json:"namespace"`
	// Deleted is true when the Kubernetes namespace was deleted (or is terminating) by this call
	// or an earlier one; false when it never existed.
	Deleted bool `json:"deleted"`
}

// DeleteNamespace is Namespace deletion: the driver cleans up the Namespace-level resources
// first (no revision), and the Kubernetes namespace is deleted only if that succeeded. A
// failed driver cleanup leaves the namespace in place, so the cleanup can be retried safely;
// deleting the namespace first would orphan the provider's Workspace.
func (c *Compute) DeleteNamespace(ctx context.Context, namespaceID string) (*NamespaceDeletion, error) {
	ns, err := ResolveNamespace(namespaceID)
	if err != nil {
		return nil, err
	}
	out := &NamespaceDeletion{Namespace: ns}
	// Ownership is checked before the driver touches anything: a same-named namespace that is
	// not this OCC Namespace's must never lose its Workspace or objects through us.
	live, err := c.Kube.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return nil, fmt.Errorf("read namespace %s for OCC Namespace %s: %w", ns.Name, ns.ID, err)
	default:
		if err := checkNamespaceOwnership(live, namespaceID); err != nil {
			return nil, err
		}
	}

	err = c.Progress.step("driver cleanup (namespace "+ns.Name+")", func(func(string)) error {
		return c.Driver.Cleanup(ctx, driver.CleanupContext{NamespaceContext: c.NamespaceContext(ns)})
	})
	if err != nil {
		return nil, fmt.Errorf("Sandbox driver %s could not clean up OCC Namespace %s; namespace %s is kept so the cleanup can be retried: %w", c.Driver.ID(), ns.ID, ns.Name, err)
	}
	if live == nil {
		return out, nil
	}
	out.Deleted = true
	if live.DeletionTimestamp != nil {
		return out, nil
	}
	err = c.Progress.step("delete namespace "+ns.Name, func(func(string)) error {
		// The UID precondition makes the delete hit exactly the namespace whose ownership was
		// checked, not a same-named one recreated meanwhile.
		uid := types.UID(live.UID)
		err := c.Kube.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete namespace %s: %w", ns.Name, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// normalizeConfiguration maps a configuration through one JSON-like shape so that equal
// documents compare equal whatever Go types a transform produced (Configuration vs
// map[string]any).
func normalizeConfiguration(c driver.Configuration) any {
	return normalizeValue(map[string]any(c))
}

func normalizeValue(v any) any {
	switch t := v.(type) {
	case driver.Configuration:
		return normalizeValue(map[string]any(t))
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = normalizeValue(e)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = normalizeValue(e)
		}
		return out
	default:
		return t
	}
}
