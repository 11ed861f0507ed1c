package openshell

import (
	"context"
	"fmt"
	"strings"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/gateway"
)

// LabelCredentialSourceID is the label on a credential-source provider naming its source. With
// the managed-by and Namespace ID labels it is the provider's ownership: the Credential Gateway
// sets all three when it adds the source, and attaches nothing without them.
const LabelCredentialSourceID = "openclaw.dev/credential-source-id"

// CredentialProviderLabels are the ownership labels of a credential source's provider.
func CredentialProviderLabels(namespaceID, sourceID string) map[string]string {
	return map[string]string{
		driver.LabelManagedBy:   driver.ManagedByValue,
		driver.LabelNamespaceID: namespaceID,
		LabelCredentialSourceID: sourceID,
	}
}

// credentialGatewayID is the Credential Gateway this Sandbox is paired with through the
// Backend; without a Backend, only sources naming the default pairing are accepted.
func (d *Driver) credentialGatewayID() string {
	if d.backend != nil {
		return d.backend.Drivers.CredentialGateway
	}
	return ""
}

// AttachForRevision implements driver.CredentialGateway. Each source must belong to this
// Backend's Credential Gateway and to the revision's Namespace, and its provider must exist in
// the Workspace with exact ownership; the attachment is {sourceId, ref: provider name}.
func (d *Driver) AttachForRevision(ctx context.Context, hctx driver.HarnessContext, sources []driver.CredentialSource) ([]driver.CredentialAttachment, error) {
	h := hctx.Revision.Harness
	if h.Mode != driver.HarnessModeDedicated || (h.ID != driver.HarnessCodex && h.ID != driver.HarnessOpenClaw) {
		return nil, unsupported(msgOnlyCodexOrOpenClaw, errorf("revision %s has harness %q in mode %q", hctx.Revision.ID, h.ID, h.Mode))
	}
	ws, err := WorkspaceName(hctx.Namespace.Name)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, s := range sources {
		cg := d.credentialGatewayID()
		if s.ID == "" || s.NamespaceID != hctx.Namespace.ID || cg == "" || s.CredentialGatewayID != cg || seen[s.ID] {
			return nil, plain("The credential source is not owned by this gateway.",
				errorf("source %q (Namespace %q, Credential Gateway %q) for Namespace %q and Credential Gateway %q", s.ID, s.NamespaceID, s.CredentialGatewayID, hctx.Namespace.ID, cg))
		}
		seen[s.ID] = true
	}
	if len(sources) > 0 {
		if err := d.requireGateway("attachForRevision"); err != nil {
			return nil, err
		}
	}
	out := make([]driver.CredentialAttachment, 0, len(sources))
	for _, s := range sources {
		name := CredentialProviderName(s.ID)
		p, err := d.gw.GetProvider(ctx, ws, name)
		if err != nil && !gateway.IsNotFound(err) {
			return nil, gatewayError("GetProvider", err)
		}
		if err != nil || !labelsInclude(p.Labels, CredentialProviderLabels(hctx.Namespace.ID, s.ID)) {
			return nil, plain("The OpenShell provider for a bound credential source is unavailable.", errorf("provider %s for source %s is missing or not owned by OCC Namespace %s", name, s.ID, hctx.Namespace.ID))
		}
		out = append(out, driver.CredentialAttachment{SourceID: s.ID, Ref: name})
	}
	return out, nil
}

func labelsInclude(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// AttachmentStatus implements driver.CredentialGateway: GetSandboxProviderStatus for every
// attachment. READY, WITHHELD, REVOKED and FAILED map to their states, anything else to pending;
// NOT_FOUND (the Sandbox or the provider is gone) is absent. Feed the result to
// driver.EvaluateAttachments.
func (d *Driver) AttachmentStatus(ctx context.Context, nctx driver.NamespaceContext, ref driver.SandboxResourceRef, attachments []driver.CredentialAttachment) ([]driver.AttachmentStatus, error) {
	if ref.ResourceName == "" || ref.NamespaceName != nctx.Namespace.Name {
		return nil, plain("OpenShell attachment status requires the provisioned Sandbox.", errorf("reference %s/%s for namespace %s", ref.NamespaceName, ref.ResourceName, nctx.Namespace.Name))
	}
	ws, err := WorkspaceName(ref.NamespaceName)
	if err != nil {
		return nil, err
	}
	if err := d.requireGateway("attachmentStatus"); err != nil {
		return nil, err
	}
	out := make([]driver.AttachmentStatus, 0, len(attachments))
	for _, a := range attachments {
		st := driver.AttachmentStatus{SourceID: a.SourceID, Ref: a.Ref}
		s, err := d.gw.GetSandboxProviderStatus(ctx, gateway.ProviderStatusRequest{Workspace: ws, Sandbox: ref.ResourceName, Provider: a.Ref})
		switch {
		case gateway.IsNotFound(err):
			st.State = driver.AttachmentAbsent
		case err != nil:
			return nil, gatewayError("GetSandboxProviderStatus", fmt.Errorf("provider %s: %w", a.Ref, err))
		default:
			st.State = readinessState(s.State)
			if s.Reason != 0 {
				st.Reason = strings.TrimPrefix(s.Reason.String(), "PROVIDER_READINESS_REASON_")
			}
		}
		out = append(out, st)
	}
	return out, nil
}

func readinessState(s gateway.ProviderReadinessState) driver.AttachmentState {
	switch s {
	case gateway.ReadinessReady:
		return driver.AttachmentReady
	case gateway.ReadinessWithheld:
		return driver.AttachmentWithheld
	case gateway.ReadinessRevoked:
		return driver.AttachmentRevoked
	case gateway.ReadinessFailed:
		return driver.AttachmentFailed
	}
	return driver.AttachmentPending
}
