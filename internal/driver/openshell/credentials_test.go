package openshell

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/gateway"
	"github.com/openclaw/occ/internal/gateway/openshellv1"
	"github.com/openclaw/occ/internal/testbed"
)

// attachForRevision hands out only sources of this Backend's Credential Gateway and Namespace
// whose provider exists with exact ownership.
func TestAttachForRevisionOwnership(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.driver(nil)
	e.prepare(d)
	h := e.hctx(driver.HarnessCodex)
	good := driver.CredentialSource{ID: "cs_openai_default", NamespaceID: e.ns.ID, CredentialGatewayID: testCGID}
	att, err := d.AttachForRevision(e.ctx, h, []driver.CredentialSource{good})
	if err != nil || len(att) != 1 || att[0] != (driver.CredentialAttachment{SourceID: good.ID, Ref: CredentialProviderName(good.ID)}) {
		t.Fatalf("attachments %+v, %v", att, err)
	}
	// A provider with the right name but not owned by this Namespace.
	if _, err := e.client.CreateProvider(e.ctx, e.ns.Name, gateway.ProviderSpec{
		Name: CredentialProviderName("cs_squatted"), Labels: CredentialProviderLabels("ns_other", "cs_squatted"), Type: "openai",
	}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		src  driver.CredentialSource
		want string
	}{
		{driver.CredentialSource{ID: "cs_openai_default", NamespaceID: "ns_other", CredentialGatewayID: testCGID}, "The credential source is not owned by this gateway."},
		{driver.CredentialSource{ID: "cs_openai_default", NamespaceID: e.ns.ID, CredentialGatewayID: "credential-gateway-other"}, "The credential source is not owned by this gateway."},
		{driver.CredentialSource{ID: "cs_missing", NamespaceID: e.ns.ID, CredentialGatewayID: testCGID}, "The OpenShell provider for a bound credential source is unavailable."},
		{driver.CredentialSource{ID: "cs_squatted", NamespaceID: e.ns.ID, CredentialGatewayID: testCGID}, "The OpenShell provider for a bound credential source is unavailable."},
	}
	for _, tc := range cases {
		if _, err := d.AttachForRevision(e.ctx, h, []driver.CredentialSource{good, tc.src}); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("source %+v: err = %v, want %q", tc.src, err, tc.want)
		}
	}
	emb := h
	emb.Revision.Harness.Mode = driver.HarnessModeEmbedded
	if _, err := d.AttachForRevision(e.ctx, emb, []driver.CredentialSource{good}); driver.CodeOf(err) != driver.CodeHarnessUnsupported {
		t.Errorf("embedded Harness: %v", err)
	}
}

// Attachment states reported by the Sandbox's supervisor map to Compute's gate: withheld and
// failed stop the revision, a provider that vanished is absent; the ref must be provisioned.
func TestAttachmentStatusStates(t *testing.T) {
	e, d, h, ref := provisioned(t, envOptions{})
	testbed.MarkPodReady(e.ctx, t, e.admin, e.ns.Name, ref.ResourceName)
	att := h.Requirements.CredentialAttachments
	cases := []struct {
		reason openshellv1.ProviderReadinessReason
		state  driver.AttachmentState
	}{
		{openshellv1.ProviderReadinessReason_PROVIDER_READINESS_REASON_CREDENTIALS_WITHHELD, driver.AttachmentWithheld},
		{openshellv1.ProviderReadinessReason_PROVIDER_READINESS_REASON_CREDENTIAL_INSTALL_FAILED, driver.AttachmentFailed},
		{openshellv1.ProviderReadinessReason_PROVIDER_READINESS_REASON_WAITING_FOR_CREDENTIALS, driver.AttachmentPending},
		{openshellv1.ProviderReadinessReason_PROVIDER_READINESS_REASON_UNSPECIFIED, driver.AttachmentReady},
	}
	for _, tc := range cases {
		if err := e.gw.SetProviderStatus(e.ns.Name, ref.ResourceName, att[0].Ref, tc.reason); err != nil {
			t.Fatal(err)
		}
		st, err := d.AttachmentStatus(e.ctx, e.nctx(), ref, att)
		if err != nil || len(st) != 1 || st[0].State != tc.state {
			t.Fatalf("reason %s: %+v, %v; want %s", tc.reason, st, err, tc.state)
		}
		_, gateErr := driver.EvaluateAttachments(att, st)
		terminal := tc.state == driver.AttachmentWithheld || tc.state == driver.AttachmentFailed
		if terminal != (gateErr != nil) {
			t.Fatalf("reason %s: gate error %v", tc.reason, gateErr)
		}
	}
	// The Sandbox is gone: every attachment is absent, which fails the gate.
	if err := d.Cleanup(e.ctx, driver.CleanupContext{NamespaceContext: e.nctx(), Revision: &h.Revision}); err != nil {
		t.Fatal(err)
	}
	st, err := d.AttachmentStatus(e.ctx, e.nctx(), ref, att)
	if err != nil || st[0].State != driver.AttachmentAbsent {
		t.Fatalf("after cleanup: %+v, %v", st, err)
	}
	if _, err := driver.EvaluateAttachments(att, st); err == nil || !strings.HasPrefix(err.Error(), "The Sandbox did not apply a required credential attachment.") {
		t.Fatalf("gate: %v", err)
	}
	if _, err := d.AttachmentStatus(e.ctx, e.nctx(), driver.SandboxResourceRef{}, att); err == nil || !strings.HasPrefix(err.Error(), "OpenShell attachment status requires the provisioned Sandbox.") {
		t.Fatalf("unprovisioned: %v", err)
	}
}

// Logs come only from GetSandboxLogs; a missing Sandbox is RUNTIME_LOGS_SANDBOX_NOT_FOUND.
func TestReadSandboxLogs(t *testing.T) {
	e, d, h, ref := provisioned(t, envOptions{})
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	if err := e.gw.AppendLogs(e.ns.Name, ref.ResourceName,
		&openshellv1.SandboxLogLine{Level: "INFO", Target: "harness", Message: "listening", EventTime: timestamppb.New(at)},
		&openshellv1.SandboxLogLine{Level: "OCSF", Target: "ocsf", Message: "deny", Fields: map[string]string{"dst_host": "example.com"}},
	); err != nil {
		t.Fatal(err)
	}
	e.gw.Journal().Reset()
	logs, err := d.ReadSandboxLogs(e.ctx, e.nctx(), h.Revision, driver.LogOptions{Lines: 100})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, l := range logs.Lines {
		msgs = append(msgs, l.Message)
	}
	if logs.Sandbox != ref.ResourceName || !strings.Contains(strings.Join(msgs, ","), "listening,deny") {
		t.Fatalf("logs %+v", logs)
	}
	for _, l := range logs.Lines {
		if l.Message == "listening" && (l.Time == nil || !l.Time.Equal(at)) {
			t.Fatalf("time %v", l.Time)
		}
	}
	if _, err := d.ReadSandboxLogs(e.ctx, e.nctx(), h.Revision, driver.LogOptions{Lines: 2001}); err == nil || !strings.HasPrefix(err.Error(), "OpenShell log line count must be 1 to 2000.") {
		t.Fatalf("2001 lines: %v", err)
	}
	other := withRevision(h, "rev_00000000-0000-4000-8000-000000000009").Revision
	_, err = d.ReadSandboxLogs(e.ctx, e.nctx(), other, driver.LogOptions{Lines: 10})
	if driver.CodeOf(err) != driver.CodeRuntimeLogsSandboxNotFound {
		t.Fatalf("missing Sandbox: %v (code %q)", err, driver.CodeOf(err))
	}
	foreign := h.Revision
	foreign.NamespaceID = "ns_other"
	if _, err := d.ReadSandboxLogs(e.ctx, e.nctx(), foreign, driver.LogOptions{Lines: 10}); err == nil || !strings.HasPrefix(err.Error(), "Refusing to read a Sandbox outside its selected AgentRevision and Namespace.") {
		t.Fatalf("foreign revision: %v", err)
	}
	for _, c := range e.gw.Journal().Calls() {
		if c.Method != "GetSandboxLogs" {
			t.Fatalf("log reading called %s", c.Method)
		}
	}
}
