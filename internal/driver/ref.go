package driver

import "fmt"

// SandboxResourceRef is the stable identity of a provider-owned Harness. It stays the same when
// the provider's controller replaces the underlying Pod, so retirement can find (and remove) the
// provider resource even after the Pod is gone.
type SandboxResourceRef struct {
	NamespaceName string `json:"namespaceName"`
	ResourceName  string `json:"resourceName"`
	AgentID       string `json:"agentId"`
	RevisionID    string `json:"revisionId"`
}

// VerifyFor checks that ref belongs to rev in the physical namespace namespaceName. Compute calls
// it on every returned reference before it waits for the Harness: a driver bug or a stale
// provider object must never let one revision's traffic reach another revision's Harness.
func (ref SandboxResourceRef) VerifyFor(namespaceName string, rev Revision) error {
	if ref.NamespaceName != namespaceName || ref.AgentID != rev.AgentID || ref.RevisionID != rev.ID || ref.ResourceName == "" {
		return fmt.Errorf("sandbox resource %s/%s (agent %q, revision %q) does not belong to revision %q of agent %q in namespace %s; refusing to wait for it",
			ref.NamespaceName, ref.ResourceName, ref.AgentID, ref.RevisionID, rev.ID, rev.AgentID, namespaceName)
	}
	return nil
}
