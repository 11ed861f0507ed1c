package compute

import (
	"context"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/kube"
)

// Observation is what Compute can see of one revision: its namespace, the provider's view of
// the Sandbox, the revision's Harness Pods, and the state of every credential attachment.
// Reading it changes nothing.
type Observation struct {
	Namespace   NamespaceObservation      `json:"namespace"`
	Sandbox     *SandboxObservation       `json:"sandbox,omitempty"`
	Pods        []PodObservation          `json:"pods"`
	Attachments []driver.AttachmentStatus `json:"attachments,omitempty"`
	// Problems lists what could not be read, so a partial status is still shown.
	Problems []string `json:"problems,omitempty"`
}

// NamespaceObservation describes the physical namespace.
type NamespaceObservation struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Exists bool   `json:"exists"`
	// Owned is true when the namespace carries exactly this OCC Namespace's ownership labels.
	Owned bool `json:"owned"`
	// Phase is Active or Terminating when the namespace exists.
	Phase string `json:"phase,omitempty"`
}

// SandboxObservation is the provider's view of the revision's Sandbox.
type SandboxObservation struct {
	Name   string `json:"name"`
	Exists bool   `json:"exists"`
	Phase  string `json:"phase,omitempty"`
	// Conditions are "Type=Status (Reason)" strings, in the provider's order.
	Conditions []string `json:"conditions,omitempty"`
}

// PodObservation is one Harness Pod of the revision.
type PodObservation struct {
	Name  string `json:"name"`
	Phase string `json:"phase"`
	Ready bool   `json:"ready"`
	// State is the same summary the Pod wait prints.
	State string `json:"state"`
}

// SandboxObserver reads the provider's view of a revision's Sandbox; the OpenShell wiring
// implements it with GetSandbox. It must not mutate anything.
type SandboxObserver func(ctx context.Context, ns driver.Namespace, rev driver.Revision) (*SandboxObservation, error)

// Observe reports the revision's status. Each part is read independently: a part that cannot
// be read is named in Problems and the rest is still reported.
func (c *Compute) Observe(ctx context.Context, rf *RevisionFile, sandbox SandboxObserver) (*Observation, error) {
	ns, err := ResolveNamespace(rf.NamespaceID)
	if err != nil {
		return nil, err
	}
	obs := &Observation{Namespace: NamespaceObservation{ID: ns.ID, Name: ns.Name}, Pods: []PodObservation{}}
	live, err := c.Kube.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		obs.Problems = append(obs.Problems, fmt.Sprintf("read namespace %s: %v", ns.Name, err))
	default:
		obs.Namespace.Exists = true
		obs.Namespace.Owned = checkNamespaceOwnership(live, ns.ID) == nil
		obs.Namespace.Phase = string(live.Status.Phase)
		if live.DeletionTimestamp != nil {
			obs.Namespace.Phase = "Terminating"
		}
	}

	rev := rf.Revision()
	if sandbox != nil {
		sb, err := sandbox(ctx, ns, rev)
		if err != nil {
			obs.Problems = append(obs.Problems, fmt.Sprintf("read Sandbox: %v", err))
		}
		obs.Sandbox = sb
	}

	if obs.Namespace.Exists {
		pods, err := c.Kube.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{LabelSelector: rf.HarnessSelector()})
		if err != nil {
			obs.Problems = append(obs.Problems, fmt.Sprintf("list Harness Pods in %s: %v", ns.Name, err))
		} else {
			for i := range pods.Items {
				p := &pods.Items[i]
				obs.Pods = append(obs.Pods, PodObservation{Name: p.Name, Phase: string(p.Status.Phase), Ready: kube.PodReady(p), State: podState(p)})
			}
			sort.Slice(obs.Pods, func(i, j int) bool { return obs.Pods[i].Name < obs.Pods[j].Name })
		}
	}

	if len(rf.CredentialSources) > 0 && obs.Sandbox != nil && obs.Sandbox.Exists {
		if c.Credentials == nil {
			obs.Problems = append(obs.Problems, "attachments: the Installation has no Credential Gateway")
		} else {
			nctx := c.NamespaceContext(ns)
			hctx := driver.HarnessContext{NamespaceContext: nctx, Revision: rev}
			atts, err := c.Credentials.AttachForRevision(ctx, hctx, rf.Sources())
			if err != nil {
				obs.Problems = append(obs.Problems, fmt.Sprintf("attachments: %v", err))
			} else {
				ref := driver.SandboxResourceRef{NamespaceName: ns.Name, ResourceName: obs.Sandbox.Name, AgentID: rev.AgentID, RevisionID: rev.ID}
				st, err := c.Credentials.AttachmentStatus(ctx, nctx, ref, atts)
				if err != nil {
					obs.Problems = append(obs.Problems, fmt.Sprintf("attachment status: %v", err))
				}
				obs.Attachments = st
			}
		}
	}
	return obs, nil
}

// ReadLogs reads the revision's Harness logs through the driver, when it can read logs.
func (c *Compute) ReadLogs(ctx context.Context, rf *RevisionFile, opts driver.LogOptions) (*driver.SandboxLogs, error) {
	lr, ok := c.Driver.(driver.LogReader)
	if !ok {
		return nil, fmt.Errorf("Sandbox driver %s cannot read Harness logs", c.Driver.ID())
	}
	ns, err := ResolveNamespace(rf.NamespaceID)
	if err != nil {
		return nil, err
	}
	return lr.ReadSandboxLogs(ctx, c.NamespaceContext(ns), rf.Revision(), opts)
}
