package compute

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/openclaw/occ/internal/driver"
)

// AttachmentGate bounds how Compute waits for the Sandbox to apply every credential
// attachment before the revision may be activated.
type AttachmentGate struct {
	// InitialBackoff is the first pause after a pending answer; it doubles up to MaxBackoff.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// Timeout bounds the whole gate.
	Timeout time.Duration
}

// DefaultAttachmentGate asks again after 250ms, backing off to 5s, for at most two minutes.
func DefaultAttachmentGate() AttachmentGate {
	return AttachmentGate{InitialBackoff: 250 * time.Millisecond, MaxBackoff: 5 * time.Second, Timeout: 2 * time.Minute}
}

func (g AttachmentGate) withDefaults() AttachmentGate {
	d := DefaultAttachmentGate()
	if g.InitialBackoff <= 0 {
		g.InitialBackoff = d.InitialBackoff
	}
	if g.MaxBackoff < g.InitialBackoff {
		g.MaxBackoff = max(d.MaxBackoff, g.InitialBackoff)
	}
	if g.Timeout <= 0 {
		g.Timeout = d.Timeout
	}
	return g
}

// WaitForAttachments is Compute's activation gate. It asks the Credential Gateway for the
// status of every attachment until all are ready. Pending (or a missing status) is asked again
// with exponential backoff, because the supervisor applies providers asynchronously after the
// Pod starts; failed, withheld, revoked and absent end the wait with an error, because the
// revision must never be activated without a credential it binds. The gateway polls here
// because it offers no watch for provider status.
func WaitForAttachments(ctx context.Context, gw driver.CredentialGateway, nctx driver.NamespaceContext, ref driver.SandboxResourceRef, want []driver.CredentialAttachment, gate AttachmentGate, note func(string)) ([]driver.AttachmentStatus, error) {
	if len(want) == 0 {
		return nil, nil
	}
	if gw == nil {
		return nil, fmt.Errorf("revision %s binds %d credential attachment(s) but no Credential Gateway is configured: add drivers.credential_gateway to the Installation", ref.RevisionID, len(want))
	}
	gate = gate.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, gate.Timeout)
	defer cancel()

	backoff := gate.InitialBackoff
	lastSummary := ""
	for {
		statuses, err := gw.AttachmentStatus(ctx, nctx, ref, want)
		if err != nil {
			if ctx.Err() != nil {
				return statuses, gateTimeout(gate, lastSummary, ctx.Err())
			}
			return statuses, fmt.Errorf("read credential attachment status for Sandbox %s/%s: %w", ref.NamespaceName, ref.ResourceName, err)
		}
		ready, err := driver.EvaluateAttachments(want, statuses)
		if err != nil {
			return statuses, err
		}
		if ready {
			return statuses, nil
		}
		summary := pendingSummary(want, statuses)
		if summary != lastSummary && note != nil {
			note(summary)
		}
		lastSummary = summary
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return statuses, gateTimeout(gate, lastSummary, ctx.Err())
		case <-t.C:
		}
		backoff = min(backoff*2, gate.MaxBackoff)
	}
}

func gateTimeout(gate AttachmentGate, summary string, cause error) error {
	return fmt.Errorf("credential attachments not ready within %s (%s); the revision stays inactive: check the provider's status in OpenShell, then run provision again (it resumes where it stopped): %w", gate.Timeout, summary, cause)
}

// pendingSummary lists the attachments that are not ready yet, for progress lines.
func pendingSummary(want []driver.CredentialAttachment, statuses []driver.AttachmentStatus) string {
	byRef := make(map[string]driver.AttachmentStatus, len(statuses))
	for _, s := range statuses {
		byRef[s.Ref] = s
	}
	var parts []string
	for _, a := range want {
		s, ok := byRef[a.Ref]
		switch {
		case !ok:
			parts = append(parts, fmt.Sprintf("%s: no status yet", a.SourceID))
		case s.State != driver.AttachmentReady:
			p := fmt.Sprintf("%s: %s", a.SourceID, s.State)
			if s.Reason != "" {
				p += " (" + s.Reason + ")"
			}
			parts = append(parts, p)
		}
	}
	return "waiting for credential attachments: " + strings.Join(parts, ", ")
}
