package driver

import "github.com/openclaw/occ/internal/contract"

// Kubernetes and gateway metadata keys shared by Compute and the Sandbox drivers. They mark
// ownership (adoption requires them exactly) and let Compute find a revision's Harness Pod
// without knowing how a provider names it. Each is defined once, in package contract, which the
// Installation validator and the development charts use too.
const (
	// LabelManagedBy with ManagedByValue marks objects OCC made.
	LabelManagedBy = contract.LabelManagedBy
	ManagedByValue = contract.ManagedByOCE

	// LabelNamespace carries the OCC Namespace ID on Kubernetes objects; LabelNamespaceID
	// carries it on OpenShell Workspaces and providers.
	LabelNamespace   = contract.LabelNamespace
	LabelNamespaceID = contract.LabelNamespaceID
	LabelAgentID     = contract.LabelAgentID
	LabelRevisionID  = contract.LabelRevisionID

	// AnnotationNamespaceID, AnnotationAgentID and AnnotationRevisionID record ownership on
	// objects whose labels belong to someone else (rendered chart objects, Sandboxes).
	AnnotationNamespaceID = contract.AnnotationNamespaceID
	AnnotationAgentID     = contract.AnnotationAgentID
	AnnotationRevisionID  = contract.AnnotationRevisionID

	// LabelAgent and LabelRevision are the Harness workload labels (values: the Agent ID and
	// the rev_<uuid> revision ID) Compute selects the revision's Pod by.
	LabelAgent    = contract.LabelAgent
	LabelRevision = contract.LabelRevision

	// LabelNetworkProfile selects which of Compute's NetworkPolicy grants apply to a Pod. A
	// provider-owned Harness carries NetworkProfileProviderFenced: it receives no Compute DNS,
	// model or authentication egress, so the provider's own workload fence alone decides. A
	// Sandbox driver must keep the label exactly; a broader profile would union Compute's
	// ordinary egress grants over the provider's fence.
	LabelNetworkProfile          = contract.LabelNetworkProfile
	NetworkProfileProviderFenced = contract.NetworkProfileProviderFenced
)
