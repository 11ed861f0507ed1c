package gateway

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/openclaw/occ/internal/gateway/openshellv1"
)

// Enums are the generated wire enums under shorter names; their String methods print the wire
// names (SANDBOX_PHASE_READY), which is what error messages and status output show.
type (
	ServiceStatus            = openshellv1.ServiceStatus
	WorkspacePhase           = openshellv1.WorkspacePhase
	SandboxPhase             = openshellv1.SandboxPhase
	DeletionOutcome          = openshellv1.DeletionOutcome
	ServiceAuthorizationMode = openshellv1.ServiceAuthorizationMode
	ProviderReadinessState   = openshellv1.ProviderReadinessState
	ProviderReadinessReason  = openshellv1.ProviderReadinessReason
	ProviderMutationKind     = openshellv1.ProviderMutationKind
)

// Enum values the driver branches on.
const (
	ServiceStatusHealthy = openshellv1.ServiceStatus_SERVICE_STATUS_HEALTHY

	WorkspacePhaseActive      = openshellv1.WorkspacePhase_WORKSPACE_PHASE_ACTIVE
	WorkspacePhaseTerminating = openshellv1.WorkspacePhase_WORKSPACE_PHASE_TERMINATING

	SandboxPhaseProvisioning = openshellv1.SandboxPhase_SANDBOX_PHASE_PROVISIONING
	SandboxPhaseReady        = openshellv1.SandboxPhase_SANDBOX_PHASE_READY
	SandboxPhaseError        = openshellv1.SandboxPhase_SANDBOX_PHASE_ERROR
	SandboxPhaseDeleting     = openshellv1.SandboxPhase_SANDBOX_PHASE_DELETING
	SandboxPhaseUnknown      = openshellv1.SandboxPhase_SANDBOX_PHASE_UNKNOWN
	SandboxPhaseStopping     = openshellv1.SandboxPhase_SANDBOX_PHASE_STOPPING
	SandboxPhaseStopped      = openshellv1.SandboxPhase_SANDBOX_PHASE_STOPPED
	SandboxPhaseStarting     = openshellv1.SandboxPhase_SANDBOX_PHASE_STARTING
	SandboxPhaseCompleted    = openshellv1.SandboxPhase_SANDBOX_PHASE_COMPLETED

	OutcomeCompleted     = openshellv1.DeletionOutcome_DELETION_OUTCOME_COMPLETED
	OutcomeAccepted      = openshellv1.DeletionOutcome_DELETION_OUTCOME_ACCEPTED
	OutcomeAlreadyAbsent = openshellv1.DeletionOutcome_DELETION_OUTCOME_ALREADY_ABSENT

	AuthorizationStrip             = openshellv1.ServiceAuthorizationMode_SERVICE_AUTHORIZATION_MODE_STRIP
	AuthorizationBearerPassthrough = openshellv1.ServiceAuthorizationMode_SERVICE_AUTHORIZATION_MODE_BEARER_PASSTHROUGH

	ReadinessPersisted  = openshellv1.ProviderReadinessState_PROVIDER_READINESS_STATE_PERSISTED
	ReadinessPending    = openshellv1.ProviderReadinessState_PROVIDER_READINESS_STATE_PENDING
	ReadinessReady      = openshellv1.ProviderReadinessState_PROVIDER_READINESS_STATE_READY
	ReadinessWithheld   = openshellv1.ProviderReadinessState_PROVIDER_READINESS_STATE_WITHHELD
	ReadinessRevoked    = openshellv1.ProviderReadinessState_PROVIDER_READINESS_STATE_REVOKED
	ReadinessFailed     = openshellv1.ProviderReadinessState_PROVIDER_READINESS_STATE_FAILED
	ReadinessSuperseded = openshellv1.ProviderReadinessState_PROVIDER_READINESS_STATE_SUPERSEDED

	MutationAttach  = openshellv1.ProviderMutationKind_PROVIDER_MUTATION_KIND_ATTACH
	MutationDetach  = openshellv1.ProviderMutationKind_PROVIDER_MUTATION_KIND_DETACH
	MutationUpdate  = openshellv1.ProviderMutationKind_PROVIDER_MUTATION_KIND_UPDATE
	MutationObserve = openshellv1.ProviderMutationKind_PROVIDER_MUTATION_KIND_OBSERVE
)

// Health is the gateway's Health answer.
type Health struct {
	Status  ServiceStatus
	Version string
}

// Healthy reports SERVICE_STATUS_HEALTHY; every other status counts as unhealthy.
func (h *Health) Healthy() bool { return h.Status == ServiceStatusHealthy }

// ObjectMeta is the common metadata of gateway objects. Maps are never nil.
type ObjectMeta struct {
	ID              string
	Name            string
	Workspace       string
	Labels          map[string]string
	Annotations     map[string]string
	ResourceVersion uint64
	// CreatedTime and DeletionTime are zero when the gateway does not send them (their field
	// numbers are unconfirmed for v0.1.3). A non-zero DeletionTime means a delete is running.
	CreatedTime  time.Time
	DeletionTime time.Time
}

// Workspace is an OpenShell Workspace.
type Workspace struct {
	ObjectMeta
	Phase WorkspacePhase
}

// Sandbox is an OpenShell Sandbox as the gateway reports it.
type Sandbox struct {
	ObjectMeta
	// Spec is the stored spec as the generated message, for a field-by-field comparison
	// with the spec the driver would send (proto.Equal).
	Spec       *openshellv1.SandboxSpec
	Phase      SandboxPhase
	Conditions []SandboxCondition
	// ExitCode is set once the main process exited (128+signal for signal exits).
	ExitCode *int32
	AgentPod string
}

// SandboxCondition is one condition of a Sandbox's status.
type SandboxCondition struct {
	Type, Status, Reason, Message string
	// TransitionTime is when the condition last changed (transition_time, field 105); zero
	// when the gateway did not say.
	TransitionTime time.Time
}

// ServiceExposure asks CreateSandbox to register an HTTP service that routes to a loopback
// port inside the sandbox.
type ServiceExposure struct {
	// Service is the service name; empty means the unnamed endpoint.
	Service    string
	TargetPort uint32
	// AuthorizationMode is always sent explicitly: what the gateway does with UNSPECIFIED is
	// unconfirmed.
	AuthorizationMode ServiceAuthorizationMode
}

// ServiceEndpoint is a sandbox service as GetService reports it, after the client's checks.
type ServiceEndpoint struct {
	Sandbox           string
	SandboxID         string
	Name              string
	TargetPort        uint32
	Domain            bool
	AuthorizationMode ServiceAuthorizationMode
	// URL is the advertised origin with its port replaced by the port the client reaches the
	// gateway on (the gateway advertises its own listener port).
	URL string
	// AdvertisedURL is the URL exactly as the gateway sent it.
	AdvertisedURL string
	// Route is how to reach the service: through the gateway's address, named in Host.
	Route ServiceRoute
}

// ServiceRoute is where a sandbox service is reached: OpenShell routes service requests that
// arrive on its gateway listener by their Host header.
type ServiceRoute struct {
	// Address is the host:port of the configured gateway endpoint, the one the gRPC channel
	// dials; it is the only address a service request connects to.
	Address string
	// Host is the advertised service host, with the advertised port if it had one, sent as the
	// HTTP Host header. It is never looked up.
	Host string
	// TLS is true when the gateway endpoint uses TLS.
	TLS bool
	// ServerName is the endpoint's host, which the gateway certificate is verified against, as
	// for the gRPC channel. An IP address sends no SNI and must be in the certificate.
	ServerName string
}

// ProviderReceipt identifies one provider mutation on one sandbox.
type ProviderReceipt struct {
	ReceiptID  string
	MutationID string
	Provider   string
	Workspace  string
	Kind       ProviderMutationKind
}

// ProviderStatus is a provider's readiness on a sandbox.
type ProviderStatus struct {
	Receipt           *ProviderReceipt
	State             ProviderReadinessState
	Reason            ProviderReadinessReason
	NetworkInstanceID string
}

// Secrets holds credential values. Its String and GoString print only the keys, so a value
// that reaches a log line or an error through %v stays hidden.
type Secrets map[string]string

func (s Secrets) String() string {
	keys := slices.Sorted(maps.Keys(s))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ":" + redactedMarker
	}
	return "map[" + strings.Join(parts, " ") + "]"
}

// GoString keeps %#v from printing the values.
func (s Secrets) GoString() string { return "gateway.Secrets" + s.String() }

// values lists the non-empty values, for scrubbing error text.
func (s Secrets) values() []string {
	out := make([]string, 0, len(s))
	for _, v := range s {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// ProviderSpec is what CreateProvider sends.
type ProviderSpec struct {
	Name   string
	Labels map[string]string
	// Type is the provider profile id.
	Type        string
	Credentials Secrets
	Config      map[string]string
	// ProfileWorkspace is the workspace that holds the type's profile; empty means platform
	// scope.
	ProfileWorkspace          string
	CredentialExpirationTimes map[string]time.Time
}

// Provider is a provider as the gateway reports it. Credential values are never copied out of
// a response (the gateway redacts them anyway); only their keys are kept.
type Provider struct {
	ObjectMeta
	Type                      string
	Config                    map[string]string
	CredentialKeys            []string
	ProfileWorkspace          string
	CredentialExpirationTimes map[string]time.Time
	// MutationID correlates the readiness receipts of an update (UpdateProvider only).
	MutationID string
}

// ProviderUpdate is what UpdateProvider sends. Non-empty credential and config values merge
// into the provider; an empty config value deletes that key.
type ProviderUpdate struct {
	Name string
	// ExpectedResourceVersion fences the update when positive; zero sends no fence.
	ExpectedResourceVersion       uint64
	Credentials                   Secrets
	Config                        map[string]string
	CredentialExpirationTimes     map[string]time.Time
	ClearCredentialExpirationKeys []string
}

// ProfileDiagnostic is one finding of a provider-profile import or update.
type ProfileDiagnostic struct {
	Source, ProfileID, Field, Message, Severity string
}

// ProfileDiagnosticsError reports a profile import or update the gateway did not apply, or
// applied with error-severity diagnostics.
type ProfileDiagnosticsError struct {
	Method      string
	Applied     bool
	Diagnostics []ProfileDiagnostic
}

func (e *ProfileDiagnosticsError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "OpenShell %s did not apply the provider profile", e.Method)
	if e.Applied {
		b.Reset()
		fmt.Fprintf(&b, "OpenShell %s reported errors for the provider profile", e.Method)
	}
	for _, d := range e.Diagnostics {
		if d.Severity != "error" {
			continue
		}
		fmt.Fprintf(&b, "; %s %s: %s", d.ProfileID, d.Field, d.Message)
	}
	return b.String()
}

// ProfileResult is the outcome of ImportProviderProfiles or UpdateProviderProfile.
type ProfileResult struct {
	Profiles    []*openshellv1.ProviderProfile
	Diagnostics []ProfileDiagnostic
}

// LogLine is one sandbox log line.
type LogLine struct {
	SandboxID string
	// Time is zero when the gateway sent no event time.
	Time    time.Time
	Level   string
	Target  string
	Message string
	// Source is "gateway" or "sandbox"; an empty source from the wire is reported as gateway.
	Source string
	Fields map[string]string
}

// Logs is a GetSandboxLogs answer.
type Logs struct {
	Lines []LogLine
	// BufferTotal is passed through; its exact meaning is unconfirmed: upstream calls it the
	// number of lines in the server's buffer, the enterprise client the lines examined before
	// the time filter.
	BufferTotal uint32
}
