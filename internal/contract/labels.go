package contract

import "strings"

// Ownership and selection metadata OCC stamps on Kubernetes objects, OpenShell Workspaces,
// Sandboxes and providers. Adoption requires these exactly.
const (
	// LabelManagedBy with ManagedByOCE marks objects OCC made for a tenant. (The development
	// environment's own objects carry the same key with the value "occ".)
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedByOCE   = "openclaw-enterprise"
	// LabelName and LabelInstance are the standard application labels.
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelComponent = "app.kubernetes.io/component"

	// OCCLabelPrefix starts every OCC metadata key.
	OCCLabelPrefix = "openclaw.dev/"

	// LabelNamespace carries the OCC Namespace ID on Kubernetes objects; LabelNamespaceID
	// carries it on OpenShell Workspaces and providers.
	LabelNamespace   = OCCLabelPrefix + "namespace"
	LabelNamespaceID = OCCLabelPrefix + "namespace-id"
	LabelAgentID     = OCCLabelPrefix + "agent-id"
	LabelRevisionID  = OCCLabelPrefix + "revision-id"

	// AnnotationNamespaceID, AnnotationAgentID and AnnotationRevisionID record ownership on
	// objects whose labels belong to someone else (rendered chart objects, Sandboxes).
	AnnotationNamespaceID = OCCLabelPrefix + "namespace-id"
	AnnotationAgentID     = OCCLabelPrefix + "agent-id"
	AnnotationRevisionID  = OCCLabelPrefix + "revision-id"
	// AnnotationManagedBy marks an OpenShell provider profile OCC manages, with its digest.
	AnnotationManagedBy = OCCLabelPrefix + "managed-by"

	// LabelAgent, LabelRevision and LabelHarness are the Harness workload labels Compute
	// selects a revision's Pod by (the gateway copies them from the template onto the Pod).
	LabelAgent    = OCCLabelPrefix + "agent"
	LabelRevision = OCCLabelPrefix + "revision"
	LabelHarness  = OCCLabelPrefix + "harness"

	// LabelNetworkProfile selects which of Compute's NetworkPolicy grants apply to a Pod; a
	// provider-owned Harness carries NetworkProfileProviderFenced and receives none of them.
	LabelNetworkProfile          = OCCLabelPrefix + "network-profile"
	NetworkProfileProviderFenced = "provider-fenced-v1"

	// LabelCredentialSourceID names the credential source of a Credential Gateway provider.
	LabelCredentialSourceID = OCCLabelPrefix + "credential-source-id"

	// LabelGatewayNamespace marks a Kubernetes namespace OCE keeps a Namespace's dedicated
	// Agent Gateways in (its value is the OCC Namespace ID); LabelWorkloadRole with
	// WorkloadRoleGateway marks the Agent Gateway Pods themselves.
	LabelGatewayNamespace = OCCLabelPrefix + "gateway-namespace"
	LabelWorkloadRole     = OCCLabelPrefix + "workload-role"
	WorkloadRoleGateway   = "gateway"
)

// OpenShell's own labels, which the Gateway's namespace selector and the development
// NetworkPolicies select by.
const (
	// LabelOperatorWorkspace with OperatorWorkspaceValue marks a namespace the Gateway may use
	// as an operator-mode Workspace (operatorNamespaceLabels of the development Installation).
	LabelOperatorWorkspace = "openshell.ai/openclaw-workspace"
	OperatorWorkspaceValue = "true"
	// LabelOpenShellManagedBy with OpenShellManagedByValue marks the Pods OpenShell runs.
	LabelOpenShellManagedBy = "openshell.ai/managed-by"
	OpenShellManagedByValue = "openshell"
	// LabelBoundaryRole with BoundaryRoleSupervisor marks OpenShell's supervisor Pods.
	LabelBoundaryRole      = "openshell.ai/boundary-role"
	BoundaryRoleSupervisor = "supervisor"
	// LabelSandboxID, LabelSandboxName and LabelSandboxWorkspace identify the Sandbox an
	// OpenShell Pod serves.
	LabelSandboxID        = "openshell.ai/sandbox-id"
	LabelSandboxName      = "openshell.ai/sandbox-name"
	LabelSandboxWorkspace = "openshell.ai/sandbox-workspace"
)

// OperatorWorkspaceSelector is the Gateway's namespace selector for operator-mode Workspaces.
const OperatorWorkspaceSelector = LabelOperatorWorkspace + "=" + OperatorWorkspaceValue

// OwnershipMetadataKeys are the label and annotation keys the driver injects into every applied
// workspace or network-policy object; a rendered object that already carries one would claim
// another Namespace's ownership.
func OwnershipMetadataKeys() []string { return []string{LabelNamespace, LabelNamespaceID} }

// AllowedPodLabel reports whether the Gateway's Kubernetes driver copies key onto a Harness Pod:
// it is configured with allowed_pod_labels openclaw.dev/*, app.kubernetes.io/name and
// app.kubernetes.io/managed-by, and refuses every other label.
func AllowedPodLabel(key string) bool {
	return strings.HasPrefix(key, OCCLabelPrefix) || key == LabelName || key == LabelManagedBy
}
