package gateway_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/openclaw/occ/internal/gateway"
	"github.com/openclaw/occ/internal/gateway/emulator"
	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
)

// The conformance suite: client behaviours against the emulator by default, or a live gateway
// (see harness_test.go).

// The driver's first call on every reconcile: the gateway answers Health as healthy.
func TestConformanceHealth(t *testing.T) {
	tg := newTarget(t, emulator.Options{})
	c := tg.client(t)
	h, err := c.Health(testContext(t))
	if err != nil {
		t.Fatalf("Health: %v", err)
	}
	if !h.Healthy() || h.Version == "" {
		t.Fatalf("Health = %+v, want HEALTHY with a version", h)
	}
}

// ensureNamespace's Workspace path: absent → create → read back ACTIVE with its labels; a
// second create is ALREADY_EXISTS; delete confirms and a repeated delete is ALREADY_ABSENT.
func TestConformanceWorkspaceLifecycle(t *testing.T) {
	tg := newTarget(t, emulator.Options{})
	c := tg.client(t)
	ctx := testContext(t)
	name := uniqueName(t, "occ")
	tg.namespace(t, name)

	if _, err := c.GetWorkspace(ctx, name); !gateway.IsNotFound(err) {
		t.Fatalf("GetWorkspace of an absent workspace = %v, want NOT_FOUND", err)
	}
	labels := map[string]string{"app.kubernetes.io/managed-by": "occ", "openclaw.dev/namespace-id": "ns_1"}
	created, err := c.CreateWorkspace(ctx, name, labels)
	if err != nil {
		t.Fatalf("CreateWorkspace: %v", err)
	}
	if created.Name != name || created.ID == "" || created.Phase != gateway.WorkspacePhaseActive {
		t.Fatalf("created workspace = %+v", created)
	}
	got, err := c.GetWorkspace(ctx, name)
	if err != nil {
		t.Fatalf("GetWorkspace: %v", err)
	}
	if got.ID != created.ID || got.Phase != gateway.WorkspacePhaseActive || got.Labels["openclaw.dev/namespace-id"] != "ns_1" || got.Labels["app.kubernetes.io/managed-by"] != "occ" {
		t.Fatalf("read back %+v, want the created workspace with its labels", got)
	}

	_, err = c.CreateWorkspace(ctx, name, labels)
	var gerr *gateway.Error
	if !gateway.IsAlreadyExists(err) || !errors.As(err, &gerr) || gerr.Code != codes.AlreadyExists || gerr.Method != "CreateWorkspace" {
		t.Fatalf("second CreateWorkspace = %v, want ALREADY_EXISTS as *gateway.Error", err)
	}

	outcome, err := c.DeleteWorkspace(ctx, name)
	if err != nil || outcome != gateway.OutcomeCompleted {
		t.Fatalf("DeleteWorkspace = %v, %v; want COMPLETED", outcome, err)
	}
	outcome, err = c.DeleteWorkspace(ctx, name)
	if err != nil || outcome != gateway.OutcomeAlreadyAbsent {
		t.Fatalf("repeated DeleteWorkspace = %v, %v; want ALREADY_ABSENT", outcome, err)
	}
	if _, err := c.GetWorkspace(ctx, name); !gateway.IsNotFound(err) {
		t.Fatalf("GetWorkspace after delete = %v, want NOT_FOUND", err)
	}

	t.Run("wire", func(t *testing.T) {
		tg.emulatorOnly(t, "reads the request_ids and allow_missing from the journal")
		creates := tg.emu.Journal().Method("CreateWorkspace")
		deletes := tg.emu.Journal().Method("DeleteWorkspace")
		if len(creates) != 2 || len(deletes) != 2 {
			t.Fatalf("journal has %d creates and %d deletes, want 2 and 2", len(creates), len(deletes))
		}
		// A fresh random request_id per call: the second create is a new request, not a
		// replay of the first, so the gateway answers ALREADY_EXISTS instead of the old success.
		first := creates[0].Request.(*pb.CreateWorkspaceRequest).GetRequestId()
		second := creates[1].Request.(*pb.CreateWorkspaceRequest).GetRequestId()
		if !gateway.ValidRequestID(first) || !gateway.ValidRequestID(second) || first == second {
			t.Fatalf("create request_ids %q and %q: want two distinct UUIDs", first, second)
		}
		for _, d := range deletes {
			r := d.Request.(*pb.DeleteWorkspaceRequest)
			if !r.GetAllowMissing() || !gateway.ValidRequestID(r.GetRequestId()) {
				t.Fatalf("DeleteWorkspace request %v: want allow_missing and a request_id", r)
			}
		}
	})
}

// Bad input is refused before anything reaches the gateway, so nothing is half-created.
func TestConformanceArgumentsRefusedBeforeSending(t *testing.T) {
	tg := newTarget(t, emulator.Options{})
	c := tg.client(t)
	ctx := testContext(t)
	spec := &pb.SandboxSpec{LogLevel: "info"}
	calls := []struct {
		name string
		run  func() error
		rule string
	}{
		{"workspace name too long", func() error { _, err := c.CreateWorkspace(ctx, "a-workspace-name-of-20", nil); return err }, "1 to 19"},
		{"workspace name uppercase", func() error { _, err := c.CreateWorkspace(ctx, "Work", nil); return err }, "DNS-1123"},
		{"sandbox without spec", func() error {
			_, err := c.CreateSandbox(ctx, gateway.CreateSandboxRequest{Workspace: "w", Name: "sb", RevisionUUID: gateway.NewRequestID()})
			return err
		}, "spec"},
		{"revision without UUID", func() error {
			_, err := c.CreateSandbox(ctx, gateway.CreateSandboxRequest{Workspace: "w", Name: "sb", Spec: spec, RevisionUUID: "rev_1"})
			return err
		}, "nonzero hyphenated UUID"},
		{"zero request id", func() error {
			_, err := c.CreateSandboxOnce(ctx, gateway.CreateSandboxRequest{Workspace: "w", Name: "sb", Spec: spec}, "00000000-0000-0000-0000-000000000000")
			return err
		}, "nonzero"},
		{"exposure without authorization mode", func() error {
			_, err := c.CreateSandbox(ctx, gateway.CreateSandboxRequest{Workspace: "w", Name: "sb", Spec: spec, RevisionUUID: gateway.NewRequestID(),
				ServiceExposures: []gateway.ServiceExposure{{TargetPort: 8080}}})
			return err
		}, "STRIP or BEARER_PASSTHROUGH"},
		{"log lines zero", func() error {
			_, err := c.GetSandboxLogs(ctx, gateway.LogsRequest{Workspace: "w", Sandbox: "sb", Lines: 0})
			return err
		}, "OpenShell log line count must be 1 to 2000."},
		{"log lines above the buffer", func() error {
			_, err := c.GetSandboxLogs(ctx, gateway.LogsRequest{Workspace: "w", Sandbox: "sb", Lines: 2001})
			return err
		}, "OpenShell log line count must be 1 to 2000."},
		{"log since with offset", func() error {
			_, err := c.GetSandboxLogs(ctx, gateway.LogsRequest{Workspace: "w", Sandbox: "sb", Lines: 10, Since: "2026-01-02T03:04:05+02:00"})
			return err
		}, "OpenShell log since time must be an RFC 3339 UTC time."},
		{"empty credential on update", func() error {
			_, err := c.UpdateProvider(ctx, "w", gateway.ProviderUpdate{Name: "p", Credentials: gateway.Secrets{"token": ""}})
			return err
		}, "empty value"},
		{"unfenced profile update", func() error {
			_, err := c.UpdateProviderProfile(ctx, gateway.ProfileUpdate{ID: "p", Profile: &pb.ProviderProfile{Id: "p"}})
			return err
		}, "positive resource_version"},
		{"status without provider or receipt", func() error {
			_, err := c.GetSandboxProviderStatus(ctx, gateway.ProviderStatusRequest{Workspace: "w", Sandbox: "sb"})
			return err
		}, "receipt id is required"},
	}
	for _, tc := range calls {
		err := tc.run()
		var ae *gateway.ArgumentError
		if !errors.As(err, &ae) || !strings.Contains(err.Error(), tc.rule) {
			t.Errorf("%s: error %v, want an ArgumentError with %q", tc.name, err, tc.rule)
		}
	}
	t.Run("nothing sent", func(t *testing.T) {
		tg.emulatorOnly(t, "counts calls in the journal")
		if calls := tg.emu.Journal().Calls(); len(calls) != 0 {
			t.Fatalf("the gateway received %d calls (first %s), want none", len(calls), calls[0].Method)
		}
	})
}

// A gateway restart or an overloaded admission pool: UNAVAILABLE and non-admission
// RESOURCE_EXHAUSTED are retried inside the caller's context until the call succeeds.
func TestConformanceTransientFailuresAreRetried(t *testing.T) {
	tg := newTarget(t, emulator.Options{})
	tg.emulatorOnly(t, "injects UNAVAILABLE and RESOURCE_EXHAUSTED")
	c := tg.client(t, fastRetry)
	ctx := testContext(t)
	tg.emu.Inject(emulator.Fault{Method: "Health", Kind: emulator.FaultUnavailable, Count: 2})
	tg.emu.Inject(emulator.Fault{Method: "Health", Kind: emulator.FaultResourceExhausted, Count: 1})
	if _, err := c.Health(ctx); err != nil {
		t.Fatalf("Health after 3 transient failures: %v", err)
	}
	if n := len(tg.emu.Journal().Method("Health")); n != 4 {
		t.Fatalf("gateway saw %d Health calls, want 4 (3 failures and the success)", n)
	}
	if !strings.Contains(tg.logs.String(), "retrying OpenShell call") {
		t.Fatalf("retries were not logged: %s", tg.logs.String())
	}

	// A gateway that stays down is reported as unavailable after the policy's attempts.
	tg.emu.Journal().Reset()
	tg.emu.Inject(emulator.Fault{Method: "Health", Kind: emulator.FaultUnavailable, Count: -1})
	_, err := c.Health(ctx)
	var gerr *gateway.Error
	if !gateway.IsUnavailable(err) || !errors.As(err, &gerr) || gerr.Attempts != fastRetryPolicy.MaxAttempts {
		t.Fatalf("Health against a down gateway = %v, want UNAVAILABLE after %d attempts", err, fastRetryPolicy.MaxAttempts)
	}
	if !strings.Contains(err.Error(), "OpenShell gateway unavailable for Health after 4 attempts") {
		t.Fatalf("error %q does not say what failed and how often", err)
	}
	if n := len(tg.emu.Journal().Method("Health")); n != fastRetryPolicy.MaxAttempts {
		t.Fatalf("gateway saw %d calls, want %d", n, fastRetryPolicy.MaxAttempts)
	}
}

// A caller that gives up stops the retries at once and gets its own cancellation back.
func TestConformanceCallerCancellationStopsRetries(t *testing.T) {
	tg := newTarget(t, emulator.Options{})
	tg.emulatorOnly(t, "keeps the gateway UNAVAILABLE")
	c := tg.client(t, func(cfg *gateway.Config) {
		cfg.Retry = gateway.RetryPolicy{InitialBackoff: time.Hour, MaxBackoff: time.Hour, MaxAttempts: 5}
	})
	tg.emu.Inject(emulator.Fault{Method: "Health", Kind: emulator.FaultUnavailable, Count: -1})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := c.Health(ctx); done <- err }()
	// The first attempt fails and the client sleeps for an hour; cancel while it waits.
	waitForCalls(t, tg.emu, "Health", 1)
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Health after cancel = %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Health did not return after the caller cancelled")
	}
	if n := len(tg.emu.Journal().Method("Health")); n != 1 {
		t.Fatalf("gateway saw %d calls after cancel, want 1", n)
	}
}

// waitForCalls waits until the emulator's journal shows method called n times.
func waitForCalls(t *testing.T, emu *emulator.Server, method string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := emu.Journal().WaitFor(ctx, method, n); err != nil {
		t.Fatalf("the gateway did not see the calls in time: %v", err)
	}
}

var fastRetryPolicy = gateway.RetryPolicy{InitialBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond, MaxAttempts: 4}

func fastRetry(cfg *gateway.Config) { cfg.Retry = fastRetryPolicy }

// The transport: TLS against a private CA and a bearer token read from its file on every
// call, so a rotated token takes effect without a redial.
func TestConformanceTLSAndBearerTokenPerCall(t *testing.T) {
	pki := newTestPKI(t)
	const token = "conformance-token-2b7e"
	tg := newTarget(t, emulator.Options{
		Token: token,
		TLS:   pki.serverTLS(),
	})
	tg.emulatorOnly(t, "it serves a certificate signed by a CA this test generates")
	tokenFile := writeFile(t, "token", token+"\n")
	tg.cfg = gateway.Config{Endpoint: tg.emu.Addr(), RootCertificatePath: pki.caPath, BearerTokenFile: tokenFile}
	c := tg.client(t, fastRetry)
	ctx := testContext(t)

	name := uniqueName(t, "occ")
	tg.namespace(t, name)
	if _, err := c.CreateWorkspace(ctx, name, nil); err != nil {
		t.Fatalf("CreateWorkspace over TLS with a token: %v", err)
	}

	// Rotate the token on disk to a wrong one: the very next call presents it.
	if err := os.WriteFile(tokenFile, []byte("rotated-wrong-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetWorkspace(ctx, name); !gateway.IsPermissionDenied(err) {
		t.Fatalf("GetWorkspace with a rotated wrong token = %v, want UNAUTHENTICATED", err)
	}
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetWorkspace(ctx, name); err != nil {
		t.Fatalf("GetWorkspace after restoring the token: %v", err)
	}

	// A token file that breaks the rule stops the call before it is sent.
	before := len(tg.emu.Journal().Calls())
	if err := os.WriteFile(tokenFile, []byte(token+"\nsecond line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := c.DeleteWorkspace(ctx, name)
	var te *gateway.TokenFileError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), tokenFile) || strings.Contains(err.Error(), token) {
		t.Fatalf("DeleteWorkspace with a two-line token file = %v, want a TokenFileError naming the file and not the token", err)
	}
	if after := len(tg.emu.Journal().Calls()); after != before {
		t.Fatalf("%d calls reached the gateway with an invalid token file", after-before)
	}

	// A client that trusts another CA refuses the gateway's certificate.
	other := newTestPKI(t)
	if err := os.WriteFile(tokenFile, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	wrongCA := tg.client(t, fastRetry, func(cfg *gateway.Config) { cfg.RootCertificatePath = other.caPath })
	if _, err := wrongCA.GetWorkspace(ctx, name); !gateway.IsUnavailable(err) || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("GetWorkspace with the wrong CA = %v, want a certificate failure", err)
	}
	// And a plaintext client cannot talk to the TLS gateway at all.
	plain := tg.client(t, fastRetry, func(cfg *gateway.Config) {
		cfg.RootCertificatePath, cfg.BearerTokenFile, cfg.InsecureTransport = "", "", gateway.InsecureTransportNetworkPolicy
	})
	if _, err := plain.Health(ctx); err == nil {
		t.Fatal("a plaintext client reached the TLS gateway")
	}
	if _, err := c.DeleteWorkspace(ctx, name); err != nil {
		t.Fatalf("DeleteWorkspace: %v", err)
	}
}

// Dial refuses a CA file that holds no certificate and a token file that breaks the one-line
// rule, naming the key or the file, before any call is made.
func TestDialRefusesUnusableFiles(t *testing.T) {
	ca := writeFile(t, "ca.pem", "not a certificate\n")
	_, err := gateway.Dial(context.Background(), gateway.Config{Endpoint: "https://127.0.0.1:1", RootCertificatePath: ca, BearerTokenFile: writeFile(t, "t", "x")})
	var ce *gateway.ConfigError
	if !errors.As(err, &ce) || ce.Key != "rootCertificatePath" || !strings.Contains(err.Error(), ca) {
		t.Fatalf("Dial = %v, want a rootCertificatePath error naming %s", err, ca)
	}
	tokenFile := writeFile(t, "token", "")
	_, err = gateway.Dial(context.Background(), gateway.Config{Endpoint: "https://127.0.0.1:1", BearerTokenFile: tokenFile})
	var te *gateway.TokenFileError
	if !errors.As(err, &te) || te.Path != tokenFile {
		t.Fatalf("Dial with an empty token file = %v, want a TokenFileError for %s", err, tokenFile)
	}
	_, err = gateway.Dial(context.Background(), gateway.Config{Endpoint: "http://127.0.0.1:1"})
	if !errors.As(err, &ce) {
		t.Fatalf("Dial of undeclared plaintext = %v, want a ConfigError", err)
	}
}
