package openshell

import (
	"context"
	"fmt"
	"strings"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/gateway"
)

// LabelCredentialSourceID is the label on a credential-source provider naming its source. With
// the managed-by and Namespace ID labels it is the provider's ownership: the Credential Gateway
// sets all three when it adds the source, and attaches nothing without them.
const LabelCredentialSourceID = contract.LabelCredentialSourceID

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
		if err := d.CheckSource(hctx.Namespace, s); err != nil {
			return nil, err
		}
		if seen[s.ID] {
			return nil, plain(msgSourceNotOwned, errorf("source %q is bound more than once; bind each credential source once", s.ID))
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

// msgSourceNotOwned refuses a credential source this Backend's Credential Gateway does not hold.
const msgSourceNotOwned = "The credential source is not owned by this gateway."

// CheckSource implements driver.SourceChecker: the source must name the Credential Gateway this
// Backend pairs and belong to the Namespace. It is the offline part of AttachForRevision, which
// Compute runs before its first mutation and render runs without a gateway: an attachment this
// Backend did not issue is rejected, and the source's own gateway is never contacted.
func (d *Driver) CheckSource(ns driver.Namespace, s driver.CredentialSource) error {
	cg := d.credentialGatewayID()
	switch {
	case s.ID == "":
		return plain(msgSourceNotOwned, errorf("a credential source has no id"))
	case cg == "":
		return plain(msgSourceNotOwned, errorf("source %q names Credential Gateway %q, but no openshell Backend pairs a Credential Gateway with this Sandbox driver", s.ID, s.CredentialGatewayID))
	case s.CredentialGatewayID != cg:
		return plain(msgSourceNotOwned, errorf("source %q is held by Credential Gateway %q, but the openshell Backend pairs %q (drivers.credential_gateway.id): bind a source of %q, or use the Installation the revision was admitted with", s.ID, s.CredentialGatewayID, cg, cg))
	case s.NamespaceID != ns.ID:
		return plain(msgSourceNotOwned, errorf("source %q belongs to Namespace %q, not %q", s.ID, s.NamespaceID, ns.ID))
	}
	return nil
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
