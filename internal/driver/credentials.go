package driver

import (
	"context"
	"fmt"
)

// CredentialSource is a credential source an Agent revision binds, as OCC approved it. The
// Credential Gateway that owns it turns it into an opaque CredentialAttachment.
type CredentialSource struct {
	// ID is the OCC credential source ID.
	ID string `json:"id"`
	// NamespaceID is the OCC Namespace that owns the source.
	NamespaceID string `json:"namespaceId"`
	// CredentialGatewayID is the Credential Gateway driver that holds the source.
	CredentialGatewayID string `json:"credentialGatewayId"`
}

// CredentialGateway is the optional interface of a Credential Gateway paired with a Sandbox
// driver: it hands out attachments for a revision and reports whether the Sandbox applied them.
type CredentialGateway interface {
	// AttachForRevision returns one attachment per source, in order. It fails when a source is
	// not owned by this gateway and Namespace or its provider is unavailable.
	AttachForRevision(ctx context.Context, hctx HarnessContext, sources []CredentialSource) ([]CredentialAttachment, error)
	// AttachmentStatus reports, for each attachment, whether the provisioned Sandbox applied it.
	AttachmentStatus(ctx context.Context, nctx NamespaceContext, ref SandboxResourceRef, attachments []CredentialAttachment) ([]AttachmentStatus, error)
}

// SourceChecker is implemented by a Credential Gateway that can tell, with no I/O, whether it
// would attach a credential source for a Namespace: the source must be held by this gateway and
// belong to the Namespace. Compute asks before its first mutation (and `occ sandbox render`
// asks offline), so a source another Credential Gateway holds is refused before a namespace is
// made instead of at the attach step.
type SourceChecker interface {
	CheckSource(ns Namespace, source CredentialSource) error
}

// AttachmentState is the observed state of one credential attachment in a Sandbox.
type AttachmentState string

// Attachment states. Pending means "ask again"; ready is the only success; the rest are
// terminal failures for the revision.
const (
	AttachmentPending  AttachmentState = "pending"
	AttachmentReady    AttachmentState = "ready"
	AttachmentFailed   AttachmentState = "failed"
	AttachmentWithheld AttachmentState = "withheld"
	AttachmentRevoked  AttachmentState = "revoked"
	AttachmentAbsent   AttachmentState = "absent"
)

// AttachmentStatus is the status of one attachment.
type AttachmentStatus struct {
	SourceID string          `json:"sourceId"`
	Ref      string          `json:"ref"`
	State    AttachmentState `json:"state"`
	// Reason is the provider's reason (for example WAITING_FOR_SUPERVISOR), when it gave one.
	Reason string `json:"reason,omitempty"`
}

// AttachmentGateMessage is the seed's sentence for a Sandbox that will not apply an attachment.
const AttachmentGateMessage = "The Sandbox did not apply a required credential attachment."

// EvaluateAttachments is Compute's activation gate over AttachmentStatus results. It returns
// ready=true only when every attachment in want is ready. A pending or missing status returns
// ready=false with no error (retry later); a failed, withheld, revoked or absent one returns an
// error, because the revision must never be activated without every credential it binds.
func EvaluateAttachments(want []CredentialAttachment, statuses []AttachmentStatus) (ready bool, err error) {
	byRef := make(map[string]AttachmentStatus, len(statuses))
	for _, s := range statuses {
		byRef[s.Ref] = s
	}
	ready = true
	for _, a := range want {
		s, ok := byRef[a.Ref]
		if !ok {
			ready = false
			continue
		}
		switch s.State {
		case AttachmentReady:
		case AttachmentPending, "":
			ready = false
		case AttachmentFailed, AttachmentWithheld, AttachmentRevoked, AttachmentAbsent:
			detail := fmt.Sprintf("credential source %s (provider %s) is %s", a.SourceID, a.Ref, s.State)
			if s.Reason != "" {
				detail += " (" + s.Reason + ")"
			}
			return false, &Error{Code: CodeCredentialAttachmentFailed, Message: AttachmentGateMessage + " Check the provider's status in OpenShell.", Err: fmt.Errorf("%s", detail)}
		default:
			return false, &Error{Code: CodeCredentialAttachmentFailed, Message: AttachmentGateMessage, Err: fmt.Errorf("credential source %s (provider %s) reported unknown state %q", a.SourceID, a.Ref, s.State)}
		}
	}
	return ready, nil
}
