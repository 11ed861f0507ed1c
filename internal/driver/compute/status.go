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
	Namespace NamespaceObservation `json:"namespace"`
	Sandbox   *SandboxObservation  `json:"sandbox,omitempty"`
	// Pods are the revision's Harness Pods: empty when there are none, nil (JSON null) when
	// they could not be listed; PodsCause then says why.
	Pods        []PodObservation          `json:"pods"`
	PodsCause   string                    `json:"podsCause,omitempty"`
	Attachments []driver.AttachmentStatus `json:"attachments,omitempty"`
	// Problems lists what could not be read, so a partial status is still shown.
	Problems []string `json:"problems,omitempty"`
}

// Presence is whether a part of a revision exists. Unknown means it could not be read (an
// unreachable cluster or gateway, a denied request): a status must never turn "could not look"
// into "absent", which would invite someone to provision or clean up on a false picture.
type Presence string

// The three answers a status read can give.
const (
	Present Presence = "present"
	Absent  Presence = "absent"
	Unknown Presence = "unknown"
)

// NamespaceObservation describes the physical namespace.
type NamespaceObservation struct {
	ID    string   `json:"id"`
	Name  string   `json:"name"`
	State Presence `json:"state"`
	// Cause says why State is Unknown.
	Cause string `json:"cause,omitempty"`
	// Owned is true when the namespace carries exactly this OCC Namespace's ownership labels.
	Owned bool `json:"owned"`
	// Phase is Active or Terminating when the namespace exists.
	Phase string `json:"phase,omitempty"`
}

// Exists reports whether the namespace was read and exists.
func (n NamespaceObservation) Exists() bool { return n.State == Present }

// SandboxObservation is the provider's view of the revision's Sandbox.
type SandboxObservation struct {
	Name  string   `json:"name"`
	State Presence `json:"state"`
	// Cause says why State is Unknown.
	Cause string `json:"cause,omitempty"`
	Phase string `json:"phase,omitempty"`
	// Conditions are "Type=Status (Reason)" strings, in the provider's order.
	Conditions []string `json:"conditions,omitempty"`
}

// Exists reports whether the Sandbox was read and exists.
func (s *SandboxObservation) Exists() bool { return s != nil && s.State == Present }

// PodObservation is one Harness Pod of the revision.
type PodObservation struct {
	Name  string `json:"name"`
	Phase string `json:"phase"`
	Ready bool   `json:"ready"`
	// State is the same summary the Pod wait prints.
	State string `json:"state"`
}

// Complete reports whether every part of the observation could be read.
func (o *Observation) Complete() bool { return len(o.Problems) == 0 }

// SandboxObserver reads the provider's view of a revision's Sandbox; the OpenShell wiring
// implements it with GetSandbox. It must not mutate anything. It reports a Sandbox it could
// not read with an error; Observe then records the Sandbox as Unknown.
type SandboxObserver func(ctx context.Context, ns driver.Namespace, rev driver.Revision) (*SandboxObservation, error)

// Observe reports the revision's status. Each part is read independently: a part that cannot
// be read is Unknown, with its cause, and named in Problems, and the rest is still reported.
func (c *Compute) Observe(ctx context.Context, rf *RevisionFile, sandbox SandboxObserver) (*Observation, error) {
	ns, err := ResolveNamespace(rf.NamespaceID)
	if err != nil {
		return nil, err
	}
	obs := &Observation{Namespace: NamespaceObservation{ID: ns.ID, Name: ns.Name}}
	unknown := func(what string, err error) string {
		cause := fmt.Sprintf("%s: %v", what, err)
		obs.Problems = append(obs.Problems, cause)
		return cause
	}
	live, err := c.Kube.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		obs.Namespace.State = Absent
	case err != nil:
		obs.Namespace.State = Unknown
		obs.Namespace.Cause = unknown("read namespace "+ns.Name, err)
	default:
		obs.Namespace.State = Present
		obs.Namespace.Owned = checkNamespaceOwnership(live, ns.ID) == nil
		obs.Namespace.Phase = string(live.Status.Phase)
		if live.DeletionTimestamp != nil {
			obs.Namespace.Phase = "Terminating"
		}
	}

	rev := rf.Revision()
	if sandbox != nil {
		sb, err := sandbox(ctx, ns, rev)
		if sb == nil {
			sb = &SandboxObservation{}
		}
		if err != nil {
			*sb = SandboxObservation{Name: sb.Name, State: Unknown, Cause: unknown("read Sandbox", err)}
		}
		obs.Sandbox = sb
	}

	switch obs.Namespace.State {
	case Absent:
		obs.Pods = []PodObservation{}
	case Unknown:
		// Without the namespace there is no telling whether Pods run in it.
		obs.PodsCause = "the namespace could not be read"
	default:
		pods, err := c.Kube.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{LabelSelector: rf.HarnessSelector()})
		if err != nil {
			obs.PodsCause = unknown("list Harness Pods in "+ns.Name, err)
			break
		}
		obs.Pods = []PodObservation{}
		for i := range pods.Items {
			p := &pods.Items[i]
			obs.Pods = append(obs.Pods, PodObservation{Name: p.Name, Phase: string(p.Status.Phase), Ready: kube.PodReady(p), State: podState(p)})
		}
		sort.Slice(obs.Pods, func(i, j int) bool { return obs.Pods[i].Name < obs.Pods[j].Name })
	}

	if len(rf.CredentialSources) == 0 || obs.Sandbox == nil || obs.Sandbox.State == Absent {
		return obs, nil
	}
	if obs.Sandbox.State == Unknown {
		obs.Problems = append(obs.Problems, "attachments: not read, because the Sandbox could not be read")
		return obs, nil
	}
	if c.Credentials == nil {
		obs.Problems = append(obs.Problems, "attachments: the Installation has no Credential Gateway")
		return obs, nil
	}
	nctx := c.NamespaceContext(ns)
	hctx := driver.HarnessContext{NamespaceContext: nctx, Revision: rev}
	atts, err := c.Credentials.AttachForRevision(ctx, hctx, rf.Sources())
	if err != nil {
		unknown("attachments", err)
		return obs, nil
	}
	ref := driver.SandboxResourceRef{NamespaceName: ns.Name, ResourceName: obs.Sandbox.Name, AgentID: rev.AgentID, RevisionID: rev.ID}
	st, err := c.Credentials.AttachmentStatus(ctx, nctx, ref, atts)
	if err != nil {
		unknown("attachment status", err)
	}
	obs.Attachments = st
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
