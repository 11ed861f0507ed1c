package compute

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/testbed"
)

func TestMain(m *testing.M) { os.Exit(testbed.Run(m)) }

// recordingDriver is a Compute-side test double of a Sandbox driver: it records every call in
// order, can be told to fail a call, and plays the provider's controller by creating the
// Harness Pod (with the requirement labels) in the real apiserver.
type recordingDriver struct {
	mu    sync.Mutex
	calls []string

	failEnsure    error
	failProvision error
	failCleanupNS []error // consumed one per namespace cleanup call
	// labelNamespace makes EnsureNamespace label the namespace the way the OpenShell driver does,
	// with its own field manager, so tests can check Compute never strips it.
	labelNamespace bool
	// onEnsure, when set, runs first in EnsureNamespace (tests observe the world at that point).
	onEnsure func(ctx context.Context, n driver.NamespaceContext) error
}

func (d *recordingDriver) record(s string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls = append(d.calls, s)
}

func (d *recordingDriver) Calls() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.calls...)
}

func (d *recordingDriver) ID() string { return "sandbox-openshell-development" }

func (d *recordingDriver) Facets() []driver.Facet {
	return []driver.Facet{driver.FacetNetworking, driver.FacetFilesystem, driver.FacetProcess}
}

func (d *recordingDriver) ConfigureAgent(c driver.Configuration, h driver.Harness) (driver.Configuration, error) {
	if h.Mode != driver.HarnessModeDedicated {
		return nil, driver.Coded(driver.CodeHarnessUnsupported, "OpenShell SandboxDriver supports only dedicated Harness revisions.")
	}
	return c.Clone(), nil
}

func (d *recordingDriver) EnsureNamespace(ctx context.Context, n driver.NamespaceContext) error {
	d.record("ensureNamespace " + n.Namespace.Name)
	if d.onEnsure != nil {
		if err := d.onEnsure(ctx, n); err != nil {
			return err
		}
	}
	if d.failEnsure != nil {
		return d.failEnsure
	}
	if d.labelNamespace {
		ns := applycorev1.Namespace(n.Namespace.Name).WithLabels(map[string]string{"openshell.ai/openclaw-workspace": "true"})
		if _, err := n.Kube.CoreV1().Namespaces().Apply(ctx, ns, metav1.ApplyOptions{FieldManager: "occ-sandbox-test", Force: true}); err != nil {
			return err
		}
	}
	return nil
}

func sandboxName(rev driver.Revision) string { return "sb-" + rev.ID[len(rev.ID)-12:] }

func (d *recordingDriver) ProvisionHarness(ctx context.Context, h driver.HarnessContext) (driver.SandboxResourceRef, error) {
	d.record("provisionHarness " + h.Revision.ID)
	if d.failProvision != nil {
		return driver.SandboxResourceRef{}, d.failProvision
	}
	name := sandboxName(h.Revision)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.Namespace.Name, Labels: h.Requirements.Labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: h.Requirements.Image, Command: h.Requirements.Command}}},
	}
	if _, err := h.Kube.CoreV1().Pods(h.Namespace.Name).Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return driver.SandboxResourceRef{}, err
	}
	return driver.SandboxResourceRef{NamespaceName: h.Namespace.Name, ResourceName: name, AgentID: h.Revision.AgentID, RevisionID: h.Revision.ID}, nil
}

func (d *recordingDriver) Cleanup(ctx context.Context, c driver.CleanupContext) error {
	if c.Revision != nil {
		d.record("cleanup revision " + c.Revision.ID)
		err := c.Kube.CoreV1().Pods(c.Namespace.Name).Delete(ctx, sandboxName(*c.Revision), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	}
	d.record("cleanup namespace " + c.Namespace.Name)
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.failCleanupNS) > 0 {
		err := d.failCleanupNS[0]
		d.failCleanupNS = d.failCleanupNS[1:]
		return err
	}
	return nil
}

// scriptedGateway is a Credential Gateway double whose status answers follow a script.
type scriptedGateway struct {
	mu      sync.Mutex
	answers [][]driver.AttachmentStatus
	asked   int
}

func (g *scriptedGateway) AttachForRevision(_ context.Context, _ driver.HarnessContext, sources []driver.CredentialSource) ([]driver.CredentialAttachment, error) {
	out := make([]driver.CredentialAttachment, 0, len(sources))
	for _, s := range sources {
		out = append(out, driver.CredentialAttachment{SourceID: s.ID, Ref: "oce-cs-" + fmt.Sprintf("%024x", len(s.ID))})
	}
	return out, nil
}

func (g *scriptedGateway) AttachmentStatus(_ context.Context, _ driver.NamespaceContext, _ driver.SandboxResourceRef, _ []driver.CredentialAttachment) ([]driver.AttachmentStatus, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.answers) == 0 {
		return nil, errors.New("script exhausted")
	}
	a := g.answers[0]
	if len(g.answers) > 1 {
		g.answers = g.answers[1:]
	}
	g.asked++
	return a, nil
}
