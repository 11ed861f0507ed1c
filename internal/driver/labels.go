package driver

// Kubernetes and gateway metadata keys shared by Compute and the Sandbox drivers. They mark
// ownership (adoption requires them exactly) and let Compute find a revision's Harness Pod
// without knowing how a provider names it.
const (
	// LabelManagedBy with ManagedByValue marks objects OCC made.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedByValue = "openclaw-enterprise"

	// LabelNamespace carries the OCC Namespace ID on Kubernetes objects; LabelNamespaceID
	// carries it on OpenShell Workspaces and providers.
	LabelNamespace   = "openclaw.dev/namespace"
	LabelNamespaceID = "openclaw.dev/namespace-id"
	LabelAgentID     = "openclaw.dev/agent-id"
	LabelRevisionID  = "openclaw.dev/revision-id"

	// AnnotationNamespaceID, AnnotationAgentID and AnnotationRevisionID record ownership on
	// objects whose labels belong to someone else (rendered chart objects, Sandboxes).
	AnnotationNamespaceID = "openclaw.dev/namespace-id"
	AnnotationAgentID     = "openclaw.dev/agent-id"
	AnnotationRevisionID  = "openclaw.dev/revision-id"

	// LabelAgent and LabelRevision are the Harness workload labels (values: the Agent ID and
	// the rev_<uuid> revision ID) Compute selects the revision's Pod by.
	LabelAgent    = "openclaw.dev/agent"
	LabelRevision = "openclaw.dev/revision"

	// LabelNetworkProfile selects which of Compute's NetworkPolicy grants apply to a Pod. A
	// provider-owned Harness carries NetworkProfileProviderFenced: it receives no Compute DNS,
	// model or authentication egress, so the provider's own workload fence alone decides. A
	// Sandbox driver must keep the label exactly; a broader profile would union Compute's
	// ordinary egress grants over the provider's fence.
	LabelNetworkProfile          = "openclaw.dev/network-profile"
	NetworkProfileProviderFenced = "provider-fenced-v1"
)
