package cli

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/compute"
	"github.com/openclaw/occ/internal/driver/openshell"
	"github.com/openclaw/occ/internal/gateway"
	"github.com/openclaw/occ/internal/gateway/emulator"
	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
	"github.com/openclaw/occ/internal/installation"
	"github.com/openclaw/occ/internal/sandbox"
	"github.com/openclaw/occ/internal/testbed"
)

// canaries are secret values planted where a leak could come from: the gateway bearer token
// file, a Kubernetes Secret a revision references, and a credential source's provider key.
type canaries struct{ token, secret, providerKey string }

func newCanaries(t *testing.T) canaries {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return canaries{
		token:       fmt.Sprintf("occ-canary-token-%x", b),
		secret:      fmt.Sprintf("occ-canary-secret-%x", b),
		providerKey: fmt.Sprintf("sk-occ-canary-provider-%x", b),
	}
}

func (c canaries) all() []string { return []string{c.token, c.secret, c.providerKey} }

// selfSignedTLS returns a server certificate for 127.0.0.1 and the PEM of its (self-signed) CA.
func selfSignedTLS(t *testing.T) (*tls.Config, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "gateway emulator"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12},
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// e2eBed is a test bed apiserver plus a TLS, token-protected gateway emulator, and an
// Installation that reaches it the way a production Installation would (https endpoint, root
// certificate, bearer token file).
type e2eBed struct {
	kube         kubernetes.Interface
	kubeconfig   string
	installation string
	gw           *emulator.Server
	client       *gateway.Client
	canary       canaries
	outputs      []string
}

func newE2EBed(t *testing.T) *e2eBed {
	t.Helper()
	isolate(t)
	b := &e2eBed{kube: testbed.Client(t), kubeconfig: testbed.Kubeconfig(t), canary: newCanaries(t)}
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "openshell-sandbox"}, Handler: "runc"}
	if _, err := b.kube.NodeV1().RuntimeClasses().Create(context.Background(), rc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	tlsCfg, caPEM := selfSignedTLS(t)
	b.gw = emulator.StartT(t, emulator.Options{Kube: b.kube, TLS: tlsCfg, Token: b.canary.token})

	dir := t.TempDir()
	ca, token := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "gateway-token")
	if err := os.WriteFile(ca, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(token, []byte(b.canary.token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "installation", "dev.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	y := string(raw)
	for old, repl := range map[string]string{
		"endpoint: http://k3d-occ-dev-server-0:30051": fmt.Sprintf("endpoint: https://%s\n      rootCertificatePath: %s\n      auth:\n        mode: bearerTokenFile\n        path: %s", b.gw.Addr(), ca, token),
		"      insecureTransport: network-policy\n":   "",
		"startupDelayMs: 30000":                       "startupDelayMs: 1",
	} {
		if !strings.Contains(y, old) {
			t.Fatalf("dev.yaml no longer contains %q; update the test", old)
		}
		y = strings.Replace(y, old, repl, 1)
	}
	b.installation = filepath.Join(dir, "installation.yaml")
	if err := os.WriteFile(b.installation, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	in, err := installation.Load(b.installation)
	if err != nil {
		t.Fatalf("test Installation: %v", err)
	}
	cfg, err := sandbox.GatewayConfig(in.OpenShellBackend(), "")
	if err != nil {
		t.Fatal(err)
	}
	if b.client, err = gateway.Dial(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.client.Close() })
	return b
}

// occ runs one `occ sandbox` command against the bed and keeps its output for the canary scan.
func (b *e2eBed) occ(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	full := append([]string{"sandbox"}, args...)
	full = append(full, "--installation", b.installation, "--kubeconfig", b.kubeconfig)
	code, out, errOut := run(t, full...)
	b.outputs = append(b.outputs, out, errOut)
	return code, out, errOut
}

// scan fails the test if any canary appears in any captured output or in any request the
// emulator received from occ.
func (b *e2eBed) scan(t *testing.T, skipCall func(emulator.Call) bool) {
	t.Helper()
	for _, out := range b.outputs {
		for _, c := range b.canary.all() {
			if strings.Contains(out, c) {
				t.Errorf("canary %q leaked into command output:\n%s", c, out)
			}
		}
	}
	calls := b.gw.Journal().Calls()
	if len(calls) == 0 {
		t.Fatal("the emulator journal is empty; the scan would prove nothing")
	}
	for _, call := range calls {
		if skipCall(call) {
			continue
		}
		js, err := protojson.Marshal(call.Request)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range b.canary.all() {
			if strings.Contains(string(js), c) {
				t.Errorf("canary %q leaked into a %s request", c, call.Method)
			}
		}
	}
}

// writeRevision writes a variant of a revision example into the test's directory.
func writeRevision(t *testing.T, example string, edit func(string) string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "revisions", example))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), example)
	if err := os.WriteFile(p, []byte(edit(string(raw))), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// An engineer drives the whole Compute flow by hand through the CLI against a cluster and a
// TLS, token-protected gateway: prepare the Namespace, see a Secret-referencing revision
// refused before any mutation, provision a Codex revision (twice), read its status and logs,
// check that render printed exactly what was sent, shut the revision down (twice), and delete
// the Namespace, which first fails while a credential provider remains and succeeds once it is
// gone. No canary secret appears in any output or gateway request.
func TestSandboxProvisionThenCleanupEndToEnd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := newE2EBed(t)
	const nsID = "ns_cli_e2e"
	revision := writeRevision(t, "codex.yaml", func(s string) string {
		return strings.Replace(s, "namespaceId: ns_acme", "namespaceId: "+nsID, 1)
	})
	ns, err := compute.ResolveNamespace(nsID)
	if err != nil {
		t.Fatal(err)
	}

	// Prepare the Namespace.
	code, out, errOut := b.occ(t, "ensure-namespace", "--revision", revision, "-o", "json")
	if code != 0 {
		t.Fatalf("ensure-namespace: exit %d\n%s", code, errOut)
	}
	var gotNS driver.Namespace
	if err := json.Unmarshal([]byte(out), &gotNS); err != nil || gotNS != ns {
		t.Fatalf("ensure-namespace printed %q (%v), want %+v", out, err, ns)
	}
	for _, step := range []string{"✓ namespace " + ns.Name, "✓ baseline isolation", "✓ driver ensureNamespace"} {
		if !strings.Contains(errOut, step) {
			t.Errorf("ensure-namespace progress lacks %q:\n%s", step, errOut)
		}
	}

	// OCC adds the credential source (its provider holds the model key) and the tenant keeps a
	// model key Secret in the namespace.
	if _, err := b.client.CreateProvider(ctx, ns.Name, gateway.ProviderSpec{
		Name: openshell.CredentialProviderName("cs_openai_default"), Labels: openshell.CredentialProviderLabels(nsID, "cs_openai_default"),
		Type: "openai", Credentials: gateway.Secrets{"OPENAI_API_KEY": b.canary.providerKey},
	}); err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "model-key", Namespace: ns.Name}, StringData: map[string]string{"key": b.canary.secret}}
	if _, err := b.kube.CoreV1().Secrets(ns.Name).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// A revision that references the Secret is refused before any mutation, by render and by
	// provision alike.
	secretRevision := writeRevision(t, "codex.yaml", func(s string) string {
		s = strings.Replace(s, "namespaceId: ns_acme", "namespaceId: "+nsID, 1)
		s = strings.Replace(s, "rev_3f2b9c4e-8d1a-4b6f-9e2d-1c0a7b5e4f31", "rev_0d6a4f1e-2b3c-4d5e-8f6a-7b8c9d0e1f2a", 1)
		return strings.Replace(s, "  env:\n", "  env:\n    - name: MODEL_KEY\n      secretKeyRef: {name: model-key, key: key}\n", 1)
	})
	mutationsBefore := len(b.gw.Journal().Mutations())
	for _, cmd := range []string{"render", "provision"} {
		code, _, errOut := b.occ(t, cmd, "--revision", secretRevision)
		if code != 1 || !strings.Contains(errOut, "OpenShell cannot receive secretKeyRef environment MODEL_KEY.") {
			t.Fatalf("%s of a Secret-referencing revision: exit %d\n%s", cmd, code, errOut)
		}
	}
	if n := len(b.gw.Journal().Mutations()); n != mutationsBefore {
		t.Fatalf("the refused revision made %d mutating RPCs", n-mutationsBefore)
	}

	// Provision, twice: the second run adopts what the first made.
	testbed.PlayKubelet(ctx, t, b.kube, ns.Name)
	var refs []driver.SandboxResourceRef
	for i := range 2 {
		code, out, errOut := b.occ(t, "provision", "--revision", revision, "-o", "json", "-v")
		if code != 0 {
			t.Fatalf("provision %d: exit %d\n%s", i+1, code, errOut)
		}
		var ref driver.SandboxResourceRef
		if err := json.Unmarshal([]byte(out), &ref); err != nil {
			t.Fatalf("provision %d printed %q: %v", i+1, out, err)
		}
		refs = append(refs, ref)
		for _, step := range []string{"✓ driver provisionHarness (", "✓ wait for Harness Pod (", "✓ credential attachment gate ("} {
			if !strings.Contains(errOut, step) {
				t.Errorf("provision %d progress lacks %q:\n%s", i+1, step, errOut)
			}
		}
	}
	wantName, _ := openshell.SandboxName("os", "rev_3f2b9c4e-8d1a-4b6f-9e2d-1c0a7b5e4f31")
	want := driver.SandboxResourceRef{NamespaceName: ns.Name, ResourceName: wantName, AgentID: "agent_support", RevisionID: "rev_3f2b9c4e-8d1a-4b6f-9e2d-1c0a7b5e4f31"}
	if refs[0] != want || refs[1] != want {
		t.Fatalf("refs = %+v, want %+v twice", refs, want)
	}
	creates := b.gw.Journal().Method("CreateSandbox")
	if len(creates) != 1 {
		t.Fatalf("CreateSandbox calls = %d, want 1 (the second provision adopts)", len(creates))
	}
	// The revision's Harness runtime provider was created once and comes last on the Sandbox.
	runtimeProvider := openshell.RuntimeProviderName(want.RevisionID)
	if providers := creates[0].Request.(*pb.CreateSandboxRequest).GetSpec().GetProviders(); len(providers) == 0 || providers[len(providers)-1] != runtimeProvider {
		t.Fatalf("Sandbox providers %v, want the runtime provider %s last", providers, runtimeProvider)
	}
	if n := len(b.gw.Journal().Method("ImportProviderProfiles")); n != 1 {
		t.Fatalf("ImportProviderProfiles calls = %d, want 1", n)
	}

	// render printed exactly the request provisioning sent.
	code, out, errOut = b.occ(t, "render", "--revision", revision)
	if code != 0 {
		t.Fatalf("render: exit %d\n%s", code, errOut)
	}
	sent, err := openshell.MarshalRequestJSON(creates[0].Request.(*pb.CreateSandboxRequest))
	if err != nil {
		t.Fatal(err)
	}
	if out != string(sent) {
		t.Fatalf("render output differs from the sent request:\nrender:\n%s\nsent:\n%s", out, sent)
	}

	// Status: Sandbox ready, Pod ready, attachment ready.
	code, out, errOut = b.occ(t, "status", "--revision", revision, "-o", "json")
	if code != 0 {
		t.Fatalf("status: exit %d\n%s", code, errOut)
	}
	var obs compute.Observation
	if err := json.Unmarshal([]byte(out), &obs); err != nil {
		t.Fatal(err)
	}
	if !obs.Namespace.Owned || obs.Sandbox == nil || obs.Sandbox.Phase != "SANDBOX_PHASE_READY" || len(obs.Pods) != 1 || !obs.Pods[0].Ready ||
		len(obs.Attachments) != 1 || obs.Attachments[0].State != driver.AttachmentReady || len(obs.Problems) != 0 {
		t.Fatalf("status = %s", out)
	}
	if code, out, _ := b.occ(t, "status", "--revision", revision); code != 0 || !strings.Contains(out, "SANDBOX_PHASE_READY") || !strings.Contains(out, "Ready=True") {
		t.Fatalf("status table: exit %d\n%s", code, out)
	}

	// Logs.
	if err := b.gw.AppendLogs(ns.Name, wantName, &pb.SandboxLogLine{Level: "INFO", Target: "harness", Message: "app-server listening"}); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := b.occ(t, "logs", "--revision", revision, "--tail", "10"); code != 0 || !strings.Contains(out, "INFO harness: app-server listening") {
		t.Fatalf("logs: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := b.occ(t, "logs", "--revision", revision, "--tail", "2001"); code != 2 || !strings.Contains(errOut, "OpenShell log line count must be 1 to 2000.") {
		t.Fatalf("logs --tail 2001: exit %d\n%s", code, errOut)
	}
	if code, _, errOut := b.occ(t, "logs", "--revision", revision, "--since-time", "2026-01-02 03:04:05"); code != 2 || !strings.Contains(errOut, "OpenShell log since time must be an RFC 3339 UTC time.") {
		t.Fatalf("logs --since-time: exit %d\n%s", code, errOut)
	}

	// Revision shutdown, twice.
	for i := range 2 {
		if code, _, errOut := b.occ(t, "cleanup", "--revision", revision); code != 0 {
			t.Fatalf("cleanup --revision %d: exit %d\n%s", i+1, code, errOut)
		}
	}
	if _, err := b.kube.CoreV1().Pods(ns.Name).Get(ctx, wantName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Harness Pod after cleanup: %v", err)
	}
	if _, err := b.client.GetProvider(ctx, ns.Name, runtimeProvider); !gateway.IsNotFound(err) {
		t.Fatalf("runtime provider after revision cleanup: %v", err)
	}
	if code, _, errOut := b.occ(t, "logs", "--revision", revision); code != 1 || !strings.Contains(errOut, string(driver.CodeRuntimeLogsSandboxNotFound)) {
		t.Fatalf("logs after cleanup: exit %d\n%s", code, errOut)
	}

	// Namespace deletion: refused while the credential provider remains (the Workspace is not
	// empty), so the namespace is kept; once OCC removed the source, the retry deletes it.
	code, _, errOut = b.occ(t, "cleanup", "--namespace", nsID)
	if code != 1 || !strings.Contains(errOut, "is kept so the cleanup can be retried") {
		t.Fatalf("cleanup --namespace with a provider left: exit %d\n%s", code, errOut)
	}
	if live, err := b.kube.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{}); err != nil || live.DeletionTimestamp != nil {
		t.Fatalf("namespace after the failed cleanup: %v", err)
	}
	if _, err := b.client.DeleteProvider(ctx, ns.Name, openshell.CredentialProviderName("cs_openai_default")); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = b.occ(t, "cleanup", "--namespace", ns.Name, "-o", "json")
	if code != 0 {
		t.Fatalf("cleanup --namespace: exit %d\n%s", code, errOut)
	}
	var del compute.NamespaceDeletion
	if err := json.Unmarshal([]byte(out), &del); err != nil || !del.Deleted || del.Namespace != ns {
		t.Fatalf("cleanup --namespace printed %q (%v)", out, err)
	}
	if live, err := b.kube.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{}); err == nil && live.DeletionTimestamp == nil {
		t.Fatal("namespace not deleted after a successful cleanup")
	}

	// The test's own CreateProvider carried the provider key by design; nothing occ sent may.
	b.scan(t, func(c emulator.Call) bool { return c.Method == "CreateProvider" })
}

// Without a cluster or a gateway, render and configure-agent still work, and the commands
// that need a revision or an Installation say which flag is missing.
func TestSandboxOfflineCommandsAndUsage(t *testing.T) {
	isolate(t)
	inst := filepath.Join("..", "..", "testdata", "installation", "dev.yaml")
	rev := filepath.Join("..", "..", "testdata", "revisions", "openclaw.yaml")

	code, out, errOut := run(t, "sandbox", "render", "--installation", inst, "--revision", rev, "--kubeconfig", "/nonexistent")
	if code != 0 || !strings.Contains(out, `"workspace": "oce-894208c4e2d019f"`) || strings.Contains(out, "service_exposures") {
		t.Fatalf("render: exit %d\n%s%s", code, out, errOut)
	}
	code, out2, _ := run(t, "sandbox", "render", "--installation", inst, "--revision", rev, "-o", "yaml")
	if code != 0 || !strings.Contains(out2, "workspace: oce-894208c4e2d019f") {
		t.Fatalf("render -o yaml: exit %d\n%s", code, out2)
	}

	// configure-agent turns an unconfigured OpenClaw configuration into the frozen one, and the
	// revision it prints is accepted by render as frozen.
	unfrozen := writeRevision(t, "openclaw.yaml", func(s string) string {
		return strings.Replace(s, "      workspace: /sandbox/enterprise\n", "      workspace: /home/node/workspace\n", 1)
	})
	if code, _, errOut := run(t, "sandbox", "render", "--installation", inst, "--revision", unfrozen); code != 1 || !strings.Contains(errOut, "not frozen through the driver's configureAgent") {
		t.Fatalf("render of an unconfigured revision: exit %d\n%s", code, errOut)
	}
	code, frozen, errOut := run(t, "sandbox", "configure-agent", "--installation", inst, "--revision", unfrozen)
	if code != 0 || !strings.Contains(frozen, "workspace: /sandbox/enterprise") {
		t.Fatalf("configure-agent: exit %d\n%s%s", code, frozen, errOut)
	}
	frozenPath := filepath.Join(t.TempDir(), "frozen.yaml")
	if err := os.WriteFile(frozenPath, []byte(frozen), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := run(t, "sandbox", "render", "--installation", inst, "--revision", frozenPath); code != 0 {
		t.Fatalf("render of the configured revision: exit %d\n%s", code, errOut)
	}
	cfg := filepath.Join(t.TempDir(), "codex.json")
	if err := os.WriteFile(cfg, []byte(`{"model":"gpt-5","plugins":{"entries":{"codex":{"config":{"appServer":{"networkProxy":{"x":1}}}}}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = run(t, "sandbox", "configure-agent", "--installation", inst, "--configuration", cfg, "--harness", "codex", "-o", "json")
	if code != 0 || !strings.Contains(out, `"sandbox": "danger-full-access"`) || strings.Contains(out, "networkProxy") {
		t.Fatalf("configure-agent --configuration: exit %d\n%s%s", code, out, errOut)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sandbox", "provision", "--revision", rev}, "--installation is required"},
		{[]string{"sandbox", "render", "--installation", inst}, "--revision is required"},
		{[]string{"sandbox", "cleanup", "--installation", inst}, "exactly one of --revision FILE"},
		{[]string{"sandbox", "cleanup", "--installation", inst, "--revision", rev, "--namespace", "ns_x"}, "exactly one of --revision FILE"},
		{[]string{"sandbox", "configure-agent", "--installation", inst, "--configuration", cfg}, "--harness is required"},
	} {
		code, _, errOut := run(t, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 with %q", tc.args, code, errOut, tc.want)
		}
	}
}
