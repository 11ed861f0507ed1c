package gateway_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/gateway"
	"github.com/openclaw/occ/internal/gateway/emulator"
	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
	"github.com/openclaw/occ/internal/testbed"
)

// The Credential Gateway's provider for a credential source: create with a secret, read it
// back without the secret, refuse a duplicate, fence a config update, list, delete. The
// credential value is a canary that must never show up on the client side.
func TestConformanceProviderLifecycle(t *testing.T) {
	const canary = "sk-canary-provider-0b9e"
	tg := newTarget(t, emulator.Options{})
	c := tg.client(t)
	ctx := testContext(t)
	ws := tg.workspace(t, c)
	spec := gateway.ProviderSpec{
		Name:                      "oce-cs-0123456789abcdef01234567",
		Labels:                    map[string]string{"app.kubernetes.io/managed-by": "occ"},
		Type:                      "openai",
		Credentials:               gateway.Secrets{"OPENAI_API_KEY": canary},
		Config:                    map[string]string{"base_url": "https://api.openai.com/v1"},
		ProfileWorkspace:          ws,
		CredentialExpirationTimes: map[string]time.Time{"OPENAI_API_KEY": time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)},
	}
	created, err := c.CreateProvider(ctx, ws, spec)
	if err != nil {
		t.Fatalf("CreateProvider: %v", err)
	}
	if created.Name != spec.Name || created.Type != "openai" || created.ResourceVersion == 0 ||
		len(created.CredentialKeys) != 1 || created.CredentialKeys[0] != "OPENAI_API_KEY" {
		t.Fatalf("created provider = %+v", created)
	}
	got, err := c.GetProvider(ctx, ws, spec.Name)
	if err != nil {
		t.Fatalf("GetProvider: %v", err)
	}
	if got.Config["base_url"] != spec.Config["base_url"] || got.Labels["app.kubernetes.io/managed-by"] != "occ" || got.ProfileWorkspace != ws ||
		!got.CredentialExpirationTimes["OPENAI_API_KEY"].Equal(spec.CredentialExpirationTimes["OPENAI_API_KEY"]) {
		t.Fatalf("read back %+v", got)
	}
	_, dupErr := c.CreateProvider(ctx, ws, spec)
	if !gateway.IsAlreadyExists(dupErr) {
		t.Fatalf("duplicate CreateProvider = %v, want ALREADY_EXISTS", dupErr)
	}

	// The fence: an update against a stale version is refused; the current one merges.
	_, staleErr := c.UpdateProvider(ctx, ws, gateway.ProviderUpdate{Name: spec.Name, ExpectedResourceVersion: got.ResourceVersion + 7, Config: map[string]string{"org": "o-1"}})
	if !gateway.IsVersionConflict(staleErr) {
		t.Fatalf("stale UpdateProvider = %v, want a version conflict", staleErr)
	}
	updated, err := c.UpdateProvider(ctx, ws, gateway.ProviderUpdate{Name: spec.Name, ExpectedResourceVersion: got.ResourceVersion, Config: map[string]string{"org": "o-1"}})
	if err != nil {
		t.Fatalf("UpdateProvider: %v", err)
	}
	if updated.Config["org"] != "o-1" || updated.Config["base_url"] != spec.Config["base_url"] || updated.ResourceVersion <= got.ResourceVersion {
		t.Fatalf("updated provider = %+v, want the config merged and a new version", updated)
	}
	// A credential rotation needs no fence and keeps the config.
	rotated, err := c.UpdateProvider(ctx, ws, gateway.ProviderUpdate{Name: spec.Name, Credentials: gateway.Secrets{"OPENAI_API_KEY": canary + "-2"}})
	if err != nil || rotated.Config["org"] != "o-1" {
		t.Fatalf("credential rotation = %+v, %v", rotated, err)
	}

	list, err := c.ListProviders(ctx, ws)
	if err != nil || len(list) != 1 || list[0].Name != spec.Name {
		t.Fatalf("ListProviders = %+v, %v; want the one provider", list, err)
	}
	if _, err := c.GetProvider(ctx, ws, "absent"); !gateway.IsNotFound(err) {
		t.Fatalf("GetProvider of an absent provider = %v, want NOT_FOUND", err)
	}

	assertNoCanary(t, canary, map[string]string{
		"created":         fmt.Sprintf("%+v", created),
		"read back":       fmt.Sprintf("%#v", got),
		"updated":         fmt.Sprintf("%+v %+v", updated, rotated),
		"list":            fmt.Sprintf("%+v", list),
		"duplicate error": dupErr.Error(),
		"stale error":     staleErr.Error(),
		"client logs":     tg.logs.String(),
	})

	t.Run("gateway stored the credential", func(t *testing.T) {
		tg.emulatorOnly(t, "reads the stored credential through the emulator")
		creds, ok := tg.emu.ProviderCredentials(ws, spec.Name)
		if !ok || creds["OPENAI_API_KEY"] != canary+"-2" {
			t.Fatal("the gateway does not hold the rotated credential the client sent")
		}
	})

	outcome, err := c.DeleteProvider(ctx, ws, spec.Name)
	if err != nil || outcome != gateway.OutcomeCompleted {
		t.Fatalf("DeleteProvider = %v, %v", outcome, err)
	}
	outcome, err = c.DeleteProvider(ctx, ws, spec.Name)
	if err != nil || outcome != gateway.OutcomeAlreadyAbsent {
		t.Fatalf("repeated DeleteProvider = %v, %v; want ALREADY_ABSENT", outcome, err)
	}
}

// attachmentStatus and withdraw: a provider attached at create becomes READY once the sandbox
// is; detaching returns a receipt whose status reaches REVOKED; a gone sandbox is NOT_FOUND.
func TestConformanceProviderReadinessAndDetach(t *testing.T) {
	tg := newTarget(t, emulator.Options{})
	c := tg.client(t)
	ctx := testContext(t)
	ws := tg.workspace(t, c)
	const provider = "oce-cs-aaaaaaaaaaaaaaaaaaaaaaaa"
	if _, err := c.CreateProvider(ctx, ws, gateway.ProviderSpec{Name: provider, Type: "openai", Credentials: gateway.Secrets{"OPENAI_API_KEY": "k"}, ProfileWorkspace: ws}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateSandbox(ctx, sandboxRequest(ws, "sb-cred", provider)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.DeleteSandbox(testContext(t), ws, "sb-cred") })

	st, err := c.GetSandboxProviderStatus(ctx, gateway.ProviderStatusRequest{Workspace: ws, Sandbox: "sb-cred", Provider: provider})
	if err != nil {
		t.Fatalf("GetSandboxProviderStatus: %v", err)
	}
	if st.State == 0 || st.Receipt == nil || st.Receipt.Provider != provider || st.Receipt.ReceiptID == "" {
		t.Fatalf("status = %+v, want a state and the receipt of the observation", st)
	}
	if _, err := c.GetSandboxProviderStatus(ctx, gateway.ProviderStatusRequest{Workspace: ws, Sandbox: "sb-cred", Provider: "oce-cs-bbbbbbbbbbbbbbbbbbbbbbbb"}); !gateway.IsNotFound(err) {
		t.Fatalf("status of an unknown provider = %v, want NOT_FOUND", err)
	}

	t.Run("ready, withheld, revoked", func(t *testing.T) {
		tg.emulatorOnly(t, "plays the kubelet and the supervisor's reports")
		if st.State == gateway.ReadinessReady {
			t.Fatalf("status before the Harness Pod is Ready = %+v, want not READY", st)
		}
		testbed.MarkPodReady(ctx, t, tg.kube, ws, "sb-cred")
		waitForPhase(t, c, ws, "sb-cred", gateway.SandboxPhaseReady)
		st, err := c.GetSandboxProviderStatus(ctx, gateway.ProviderStatusRequest{Workspace: ws, Sandbox: "sb-cred", Provider: provider})
		if err != nil || st.State != gateway.ReadinessReady {
			t.Fatalf("status of an attached provider on a READY sandbox = %+v, %v; want READY", st, err)
		}
		if err := tg.emu.SetProviderStatus(ws, "sb-cred", provider, pb.ProviderReadinessReason_PROVIDER_READINESS_REASON_CREDENTIALS_WITHHELD); err != nil {
			t.Fatal(err)
		}
		st, err = c.GetSandboxProviderStatus(ctx, gateway.ProviderStatusRequest{Workspace: ws, Sandbox: "sb-cred", Provider: provider})
		if err != nil || st.State != gateway.ReadinessWithheld || st.Reason != pb.ProviderReadinessReason_PROVIDER_READINESS_REASON_CREDENTIALS_WITHHELD {
			t.Fatalf("withheld status = %+v, %v", st, err)
		}
		if err := tg.emu.SetProviderStatus(ws, "sb-cred", provider, pb.ProviderReadinessReason_PROVIDER_READINESS_REASON_UNSPECIFIED); err != nil {
			t.Fatal(err)
		}

		det, err := c.DetachSandboxProvider(ctx, gateway.DetachRequest{Workspace: ws, Sandbox: "sb-cred", Provider: provider})
		if err != nil {
			t.Fatalf("DetachSandboxProvider: %v", err)
		}
		if !det.Detached || det.Receipt.Kind != gateway.MutationDetach || det.Receipt.Provider != provider {
			t.Fatalf("detach = %+v", det)
		}
		st, err = c.GetSandboxProviderStatus(ctx, gateway.ProviderStatusRequest{Workspace: ws, Sandbox: "sb-cred", ReceiptID: det.Receipt.ReceiptID})
		if err != nil || st.State != gateway.ReadinessRevoked || st.Receipt.ReceiptID != det.Receipt.ReceiptID {
			t.Fatalf("status of the detach receipt = %+v, %v; want REVOKED", st, err)
		}
		// Detach is idempotent: a second one reports the provider was not attached.
		again, err := c.DetachSandboxProvider(ctx, gateway.DetachRequest{Workspace: ws, Sandbox: "sb-cred", Provider: provider})
		if err != nil || again.Detached {
			t.Fatalf("second detach = %+v, %v; want detached=false", again, err)
		}
		sb, err := c.GetSandbox(ctx, ws, "sb-cred")
		if err != nil || len(sb.Spec.GetProviders()) != 0 {
			t.Fatalf("spec.providers after detach = %v, %v; want none", sb.Spec.GetProviders(), err)
		}
	})

	if _, err := c.DeleteSandbox(ctx, ws, "sb-cred"); err != nil {
		t.Fatal(err)
	}
	_, err = c.DetachSandboxProvider(ctx, gateway.DetachRequest{Workspace: ws, Sandbox: "sb-cred", Provider: provider})
	if !gateway.IsNotFound(err) {
		t.Fatalf("detach from a deleted sandbox = %v, want NOT_FOUND (nothing to revoke)", err)
	}
}

// The runtime provider's profile: import, read its fence, update fenced, refuse a stale fence
// and a duplicate import, delete.
func TestConformanceProviderProfiles(t *testing.T) {
	tg := newTarget(t, emulator.Options{})
	c := tg.client(t)
	ctx := testContext(t)
	ws := tg.workspace(t, c)
	profile := &pb.ProviderProfile{
		Id:          "oce-codex-runtime",
		DisplayName: "Codex runtime files (occ conformance)",
		Category:    pb.ProviderProfileCategory_PROVIDER_PROFILE_CATEGORY_OTHER,
		Files: []*pb.ProviderProfileFile{
			{Path: "runtime.json", Content: "{{config.runtime_json}}", EnvVar: "OPENCLAW_PLUGIN_RUNTIME_MANIFEST"},
		},
		Annotations: map[string]string{"openclaw.dev/managed-by": "openclaw-enterprise:digest-1"},
	}
	if _, err := c.GetProviderProfile(ctx, ws, profile.Id); !gateway.IsNotFound(err) {
		t.Fatalf("GetProviderProfile before import = %v, want NOT_FOUND", err)
	}
	if _, err := c.ImportProviderProfiles(ctx, ws, "openclaw-enterprise", profile); err != nil {
		t.Fatalf("ImportProviderProfiles: %v", err)
	}
	stored, err := c.GetProviderProfile(ctx, ws, profile.Id)
	if err != nil {
		t.Fatalf("GetProviderProfile: %v", err)
	}
	if stored.GetResourceVersion() == 0 || len(stored.GetFiles()) != 1 || stored.GetAnnotations()["openclaw.dev/managed-by"] != "openclaw-enterprise:digest-1" {
		t.Fatalf("stored profile = %v", stored)
	}

	_, err = c.ImportProviderProfiles(ctx, ws, "openclaw-enterprise", profile)
	var de *gateway.ProfileDiagnosticsError
	if !errors.As(err, &de) {
		t.Fatalf("importing an existing profile = %v, want a ProfileDiagnosticsError", err)
	}

	next := &pb.ProviderProfile{Id: profile.Id, DisplayName: profile.DisplayName, Category: profile.Category, Files: profile.Files,
		Annotations: map[string]string{"openclaw.dev/managed-by": "openclaw-enterprise:digest-2"}}
	_, err = c.UpdateProviderProfile(ctx, gateway.ProfileUpdate{Workspace: ws, ID: profile.Id, Source: "openclaw-enterprise", Profile: next, ExpectedResourceVersion: stored.GetResourceVersion() + 5})
	if !gateway.IsVersionConflict(err) {
		t.Fatalf("stale profile update = %v, want a version conflict", err)
	}
	if _, err := c.UpdateProviderProfile(ctx, gateway.ProfileUpdate{Workspace: ws, ID: profile.Id, Source: "openclaw-enterprise", Profile: next, ExpectedResourceVersion: stored.GetResourceVersion()}); err != nil {
		t.Fatalf("UpdateProviderProfile: %v", err)
	}
	updated, err := c.GetProviderProfile(ctx, ws, profile.Id)
	if err != nil || updated.GetAnnotations()["openclaw.dev/managed-by"] != "openclaw-enterprise:digest-2" || updated.GetResourceVersion() <= stored.GetResourceVersion() {
		t.Fatalf("profile after update = %v, %v", updated, err)
	}

	outcome, err := c.DeleteProviderProfile(ctx, ws, profile.Id)
	if err != nil || outcome != gateway.OutcomeCompleted {
		t.Fatalf("DeleteProviderProfile = %v, %v", outcome, err)
	}
	outcome, err = c.DeleteProviderProfile(ctx, ws, profile.Id)
	if err != nil || outcome != gateway.OutcomeAlreadyAbsent {
		t.Fatalf("repeated DeleteProviderProfile = %v, %v; want ALREADY_ABSENT", outcome, err)
	}
}

// readSandboxLogs: line count, since-time filter with nanoseconds, fields and sources pass
// through; an absent sandbox is NOT_FOUND.
func TestConformanceSandboxLogs(t *testing.T) {
	tg := newTarget(t, emulator.Options{})
	c := tg.client(t)
	ctx := testContext(t)
	ws := tg.workspace(t, c)
	if _, err := c.CreateSandbox(ctx, sandboxRequest(ws, "sb-logs")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = c.DeleteSandbox(testContext(t), ws, "sb-logs") })

	logs, err := c.GetSandboxLogs(ctx, gateway.LogsRequest{Workspace: ws, Sandbox: "sb-logs", Lines: 5})
	if err != nil || len(logs.Lines) > 5 {
		t.Fatalf("GetSandboxLogs = %+v, %v", logs, err)
	}
	if _, err := c.GetSandboxLogs(ctx, gateway.LogsRequest{Workspace: ws, Sandbox: "absent", Lines: 5}); !gateway.IsNotFound(err) {
		t.Fatalf("logs of an absent sandbox = %v, want NOT_FOUND", err)
	}

	t.Run("lines and filters", func(t *testing.T) {
		tg.emulatorOnly(t, "writes log lines into the gateway's buffer")
		base := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
		var lines []*pb.SandboxLogLine
		for i := range 4 {
			lines = append(lines, &pb.SandboxLogLine{
				Level: "INFO", Target: "harness", Message: fmt.Sprintf("line %d", i), Source: emulator.SourceSandbox,
				Fields: map[string]string{"i": fmt.Sprint(i)}, EventTime: timestamp(base.Add(time.Duration(i)*time.Second + 7)),
			})
		}
		lines = append(lines, &pb.SandboxLogLine{Level: "OCSF", Target: "ocsf", Message: "network event", Source: "gateway",
			Fields: map[string]string{"dst_host": "github.com", "action": "allow"}, EventTime: timestamp(base.Add(10 * time.Second))})
		if err := tg.emu.AppendLogs(ws, "sb-logs", lines...); err != nil {
			t.Fatal(err)
		}
		all, err := c.GetSandboxLogs(ctx, gateway.LogsRequest{Workspace: ws, Sandbox: "sb-logs", Lines: 2000})
		if err != nil || len(all.Lines) != 5 || all.BufferTotal != 5 {
			t.Fatalf("all lines = %+v, %v", all, err)
		}
		if all.Lines[0].Message != "line 0" || all.Lines[4].Fields["dst_host"] != "github.com" || all.Lines[4].Source != "gateway" || all.Lines[0].SandboxID == "" {
			t.Fatalf("lines = %+v", all.Lines)
		}
		if !all.Lines[1].Time.Equal(base.Add(time.Second + 7)) {
			t.Fatalf("event time %v lost its nanoseconds", all.Lines[1].Time)
		}
		newest, err := c.GetSandboxLogs(ctx, gateway.LogsRequest{Workspace: ws, Sandbox: "sb-logs", Lines: 2})
		if err != nil || len(newest.Lines) != 2 || newest.Lines[1].Message != "network event" {
			t.Fatalf("two newest lines = %+v, %v", newest, err)
		}
		// since is inclusive and exact to the nanosecond: line 2 is at base+2s+7ns.
		since, err := c.GetSandboxLogs(ctx, gateway.LogsRequest{Workspace: ws, Sandbox: "sb-logs", Lines: 100, Since: "2026-03-04T05:06:09.000000007Z"})
		if err != nil || len(since.Lines) != 3 || since.Lines[0].Message != "line 2" {
			t.Fatalf("lines since base+2s+7ns = %+v, %v; want lines 2, 3 and the network event", since, err)
		}
		sandboxOnly, err := c.GetSandboxLogs(ctx, gateway.LogsRequest{Workspace: ws, Sandbox: "sb-logs", Lines: 100, Sources: []string{"sandbox"}})
		if err != nil || len(sandboxOnly.Lines) != 4 {
			t.Fatalf("sandbox-source lines = %+v, %v; want 4", sandboxOnly, err)
		}
		call := tg.emu.Journal().Method("GetSandboxLogs")
		last := call[len(call)-1].Request.(*pb.GetSandboxLogsRequest)
		if last.GetLines() != 100 || last.GetWorkspaceScope().GetWorkspace() != ws || len(last.GetSources()) != 1 {
			t.Fatalf("GetSandboxLogs request = %v", last)
		}
	})
}
