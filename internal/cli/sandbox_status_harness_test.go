package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/driver/compute"
	"github.com/openclaw/occ/internal/driver/openshell"
	"github.com/openclaw/occ/internal/gateway"
	"github.com/openclaw/occ/internal/gateway/emulator"
	"github.com/openclaw/occ/internal/testbed"
)

// An engineer checks where Compute reaches a provisioned Codex Harness and whether it answers:
// status shows the app-server's wss URL (from the Sandbox's bearer-passthrough service) and the
// data-mount workspace, in the table and in JSON. The emulator serves no app-server behind the
// route, so the probe, which reaches the emulator's own listener, reads starting, never serving;
// the app-server token given in the token file appears in no output and no gateway request. A
// malformed token file is a usage error.
func TestSandboxStatusShowsHarnessEndpoint(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := newE2EBed(t)
	const nsID = "ns_cli_harness"
	revision := writeRevision(t, "codex.yaml", func(s string) string {
		return strings.Replace(s, "namespaceId: ns_acme", "namespaceId: "+nsID, 1)
	})
	ns, err := compute.ResolveNamespace(nsID)
	if err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := b.occ(t, "ensure-namespace", "--revision", revision); code != 0 {
		t.Fatalf("ensure-namespace: exit %d\n%s", code, errOut)
	}
	if _, err := b.client.CreateProvider(ctx, ns.Name, gateway.ProviderSpec{
		Name: openshell.CredentialProviderName("cs_openai_default"), Labels: openshell.CredentialProviderLabels(nsID, "cs_openai_default"),
		Type: "openai", Credentials: gateway.Secrets{"OPENAI_API_KEY": b.canary.providerKey},
	}); err != nil {
		t.Fatal(err)
	}
	testbed.PlayKubelet(ctx, t, b.kube, ns.Name)
	if code, _, errOut := b.occ(t, "provision", "--revision", revision); code != 0 {
		t.Fatalf("provision: exit %d\n%s", code, errOut)
	}

	appToken := "occ-canary-app-server-" + b.canary.secret
	tokenFile := filepath.Join(t.TempDir(), "app-server-token")
	if err := os.WriteFile(tokenFile, []byte(appToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := b.occ(t, "status", "--revision", revision, "--app-server-token-file", tokenFile, "-o", "json")
	if code != 0 {
		t.Fatalf("status: exit %d\n%s", code, errOut)
	}
	var st struct {
		compute.Observation
		Harness struct {
			openshell.HarnessEndpoint
			Status *openshell.HarnessStatus `json:"status"`
		} `json:"harness"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status printed %q: %v", out, err)
	}
	ws, err := openshell.WorkspaceName(ns.Name)
	if err != nil {
		t.Fatal(err)
	}
	sandbox, _ := openshell.SandboxName("os", "rev_3f2b9c4e-8d1a-4b6f-9e2d-1c0a7b5e4f31")
	wantPrefix := "wss://" + ws + "--" + sandbox + ".openshell.localhost:"
	if !strings.HasPrefix(st.Harness.URL, wantPrefix) || st.Harness.WorkspaceRoot != "/sandbox/enterprise" || st.Harness.Outbound || len(st.Problems) != 0 {
		t.Fatalf("status harness %+v problems %v, want URL prefix %s", st.Harness.HarnessEndpoint, st.Problems, wantPrefix)
	}
	t.Logf("app-server status %+v", st.Harness.Status)
	if st.Harness.Status == nil || st.Harness.Status.State != openshell.HarnessStarting {
		t.Fatalf("app-server status %+v, want starting", st.Harness.Status)
	}
	// The probe connects to the gateway endpoint and names the service only in Host, so it
	// reaches the emulator's listener whatever the resolver knows of *.openshell.localhost.
	if strings.Contains(st.Harness.Status.Reason, "lookup ") {
		t.Fatalf("the probe looked the service host up instead of dialing the gateway: %s", st.Harness.Status.Reason)
	}

	code, out, errOut = b.occ(t, "status", "--revision", revision)
	if code != 0 || !strings.Contains(out, "Harness     "+st.Harness.URL+" (workspace /sandbox/enterprise)") || strings.Contains(out, "App-server") {
		t.Fatalf("status table: exit %d\n%s%s", code, out, errOut)
	}

	bad := filepath.Join(t.TempDir(), "two-lines")
	if err := os.WriteFile(bad, []byte(appToken+"\nsecond\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := b.occ(t, "status", "--revision", revision, "--app-server-token-file", bad); code != 2 || !strings.Contains(errOut, "--app-server-token-file: app-server token file "+bad+" must hold exactly one line") {
		t.Fatalf("two-line token file: exit %d\n%s", code, errOut)
	}

	for _, o := range b.outputs {
		if strings.Contains(o, appToken) {
			t.Fatalf("the app-server token leaked into output:\n%s", o)
		}
	}
	b.scan(t, func(c emulator.Call) bool { return c.Method == "CreateProvider" })
}
