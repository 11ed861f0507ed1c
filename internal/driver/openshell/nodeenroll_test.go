package openshell

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/compute"
	"github.com/openclaw/occ/internal/gateway"
	"github.com/openclaw/occ/internal/gateway/openshellv1"
	"github.com/openclaw/occ/internal/installation"
)

// setupCanary is the bootstrap token inside every test setup code. It may appear only in the
// runtime provider's config sent to the gateway.
const setupCanary = "SETUP-CANARY-91c4e2d7-do-not-leak"

const (
	testSetupSecret = "agent-node-setup"
	testSetupKey    = "setup-code"
	testNodeCA      = "-----BEGIN CERTIFICATE-----\nMIIBdummy\n-----END CERTIFICATE-----\n"
	testSetupURL    = "wss://agent-gateway.oce-system.svc:8443/openclaw/node"
	testFingerprint = "sha256:7a1c"
)

// setupFields is a setup code's JSON; any map shape can be encoded to test malformed codes.
func setupFields(url string, expires time.Time) map[string]any {
	return map[string]any{"url": url, "bootstrapToken": setupCanary, "expiresAtMs": expires.UnixMilli(), "tlsFingerprint": testFingerprint}
}

// encodeSetupCode is how the Agent Gateway issues a code: oc-pair:// and base64url JSON.
func encodeSetupCode(t testing.TB, fields map[string]any) []byte {
	t.Helper()
	raw, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return []byte("oc-pair://" + base64.RawURLEncoding.EncodeToString(raw))
}

// createSetupSecret stores a setup code in the env's namespace with the given labels.
func (e *env) createSetupSecret(name string, labels map[string]string, code []byte) {
	e.t.Helper()
	_, err := e.admin.CoreV1().Secrets(e.ns.Name).Create(e.ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Data:       map[string][]byte{testSetupKey: code},
	}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
}

// ownerLabels are the exact Agent ownership labels of a setup Secret.
func (e *env) ownerLabels() map[string]string {
	return map[string]string{driver.LabelNamespace: e.ns.ID, driver.LabelAgent: testAgentID}
}

// withSetupCode adds the setup code reference and the CA bundle to a revision of either Harness.
func withSetupCode(h driver.HarnessContext, secret string) driver.HarnessContext {
	h.Requirements.Env = append(slices.Clone(h.Requirements.Env),
		driver.EnvVar{Name: envNodeSetupCode, SecretKeyRef: &driver.SecretKeyRef{Name: secret, Key: testSetupKey}},
		driver.EnvVar{Name: envNodeCAPEM, Value: testNodeCA},
	)
	return h
}

// enrollingHarnesses are the Harnesses that enroll a workspace node through OpenShell.
var enrollingHarnesses = []string{driver.HarnessOpenClaw, driver.HarnessCodex}

// runtimeProfileOf is the runtime profile (and provider type) of a Harness.
func runtimeProfileOf(harness string) string {
	if harness == driver.HarnessCodex {
		return RuntimeProfileCodex
	}
	return RuntimeProfileOpenClaw
}

// requireSetupTokenOnlyInRuntimeProvider fails if the setup token is in any text or in any
// journaled request other than the runtime provider's create or envelope refresh.
func (e *env) requireSetupTokenOnlyInRuntimeProvider(texts ...string) {
	e.t.Helper()
	for _, s := range texts {
		if strings.Contains(s, setupCanary) {
			e.t.Fatalf("setup token leaked into %q", s)
		}
	}
	for _, c := range e.gw.Journal().Calls() {
		if c.Method == "CreateProvider" || c.Method == "UpdateProvider" {
			continue
		}
		b, err := protojson.Marshal(c.Request)
		if err != nil {
			e.t.Fatal(err)
		}
		if strings.Contains(string(b), setupCanary) {
			e.t.Fatalf("setup token reached the gateway in %s", c.Method)
		}
	}
}

// A native OpenClaw revision whose setup code comes from its Agent's Secret provisions: the
// runtime provider carries the envelope and CA bundle, the Sandbox lists it last and is allowed
// to reach exactly the setup endpoint from the Node runtime; render shows the same request
// without reading the Secret (and so without the enrollment rule); a repeat changes nothing;
// revision cleanup removes the provider.
func TestProvisionOpenClawWorkspaceNodeEnrollment(t *testing.T) {
	e := newEnv(t, envOptions{})
	var logs bytes.Buffer
	opts := testOptions(t, nil)
	opts.Gateway = e.client
	opts.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	d, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.prepare(d)
	expires := time.Now().Add(time.Hour)
	e.createSetupSecret(testSetupSecret, e.ownerLabels(), encodeSetupCode(t, setupFields(testSetupURL, expires)))
	h := withSetupCode(e.attach(d, e.hctx(driver.HarnessOpenClaw)), testSetupSecret)

	rendered, err := d.RenderCreateSandbox(h)
	if err != nil {
		t.Fatal(err)
	}
	renderedJSON, err := MarshalRequestJSON(rendered)
	if err != nil {
		t.Fatal(err)
	}
	e.gw.Journal().Reset()
	for i := range 2 {
		if _, err := d.ProvisionHarness(e.ctx, h); err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
	}
	if got, want := e.mutationMethods(), []string{"ImportProviderProfiles", "CreateProvider", "CreateSandbox"}; !slices.Equal(got, want) {
		t.Fatalf("mutations %v, want %v (the repeat must mutate nothing)", got, want)
	}

	sent := e.gw.Journal().Method("CreateSandbox")[0].Request.(*openshellv1.CreateSandboxRequest)
	name := RuntimeProviderName(h.Revision.ID)
	if want := []string{CredentialProviderName("cs_openai_default"), name}; !slices.Equal(sent.Spec.Providers, want) {
		t.Fatalf("Sandbox providers %v, want %v", sent.Spec.Providers, want)
	}
	for _, k := range []string{envNodeSetupCode, envNodeCAPEM} {
		if _, ok := sent.Spec.Environment[k]; ok {
			t.Fatalf("Sandbox environment carries %s; the runtime provider supplies it", k)
		}
	}
	rule := sent.Spec.Policy.NetworkPolicies[installation.ReservedNetworkPolicyName]
	wantRule := &openshellv1.NetworkPolicyRule{
		Name:     installation.ReservedNetworkPolicyName,
		Binaries: []*openshellv1.NetworkBinary{{Path: "/usr/local/bin/node"}},
		Endpoints: []*openshellv1.NetworkEndpoint{{
			Host: "agent-gateway.oce-system.svc", Ports: []uint32{8443},
			Tls: openshellv1.NetworkTlsMode_NETWORK_TLS_MODE_SKIP, Enforcement: openshellv1.NetworkEnforcementMode_NETWORK_ENFORCEMENT_MODE_ENFORCE,
		}},
	}
	if !proto.Equal(rule, wantRule) {
		t.Fatalf("enrollment rule %v, want %v", rule, wantRule)
	}
	// Render differs from what was sent only by the enrollment rule, which needs the Secret.
	if _, ok := rendered.Spec.Policy.NetworkPolicies[installation.ReservedNetworkPolicyName]; ok {
		t.Fatal("render resolved the setup Secret")
	}
	withoutRule := proto.Clone(sent).(*openshellv1.CreateSandboxRequest)
	delete(withoutRule.Spec.Policy.NetworkPolicies, installation.ReservedNetworkPolicyName)
	if !proto.Equal(withoutRule, rendered) {
		t.Fatalf("sent request differs from render beyond the enrollment rule:\n%v\nvs\n%v", withoutRule, rendered)
	}

	p, err := e.client.GetProvider(e.ctx, e.ns.Name, name)
	if err != nil {
		t.Fatal(err)
	}
	var envelope nodeSetupEnvelope
	if err := json.Unmarshal([]byte(p.Config[configNodeSetupJSON]), &envelope); err != nil {
		t.Fatalf("node_setup_json: %v", err)
	}
	wantEnvelope := nodeSetupEnvelope{URL: testSetupURL, BootstrapToken: setupCanary, ExpiresAtMs: expires.UnixMilli(), TLSFingerprint: testFingerprint}
	if p.Type != RuntimeProfileOpenClaw || envelope != wantEnvelope || p.Config[configNodeCAPEM] != testNodeCA || len(p.Config) != 2 || len(p.CredentialKeys) != 0 {
		t.Fatalf("runtime provider type %q config keys %v envelope ok=%v", p.Type, slices.Sorted(maps.Keys(p.Config)), envelope == wantEnvelope)
	}
	prof, err := e.client.GetProviderProfile(e.ctx, e.ns.Name, RuntimeProfileOpenClaw)
	if err != nil {
		t.Fatal(err)
	}
	if len(prof.Files) != 2 || prof.Files[0].Path != "node-setup.json" || prof.Files[0].EnvVar != "OPENCLAW_NODE_SETUP_ENVELOPE" ||
		prof.Files[1].Path != "node-ca.pem" || prof.Files[1].EnvVar != "OPENCLAW_NODE_CA_PATH" || prof.InferenceCapable {
		t.Fatalf("runtime profile %v", prof)
	}
	e.requireSetupTokenOnlyInRuntimeProvider(logs.String(), string(renderedJSON))

	rev := h.Revision
	if err := d.Cleanup(e.ctx, driver.CleanupContext{NamespaceContext: e.nctx(), Revision: &rev}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.GetProvider(e.ctx, e.ns.Name, name); !gateway.IsNotFound(err) {
		t.Fatalf("runtime provider after cleanup: %v", err)
	}
}

// A plain ws setup endpoint (an in-cluster development gateway) is inspected as REST, with full
// access to exactly the setup path on the default port.
func TestProvisionOpenClawPlainWebSocketEnrollment(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.driver(nil)
	e.prepare(d)
	e.createSetupSecret(testSetupSecret, e.ownerLabels(), encodeSetupCode(t, map[string]any{
		"url": "ws://agent-gateway.dev/node/pair", "bootstrapToken": setupCanary, "expiresAtMs": time.Now().Add(time.Hour).UnixMilli(),
	}))
	h := withSetupCode(e.attach(d, e.hctx(driver.HarnessOpenClaw)), testSetupSecret)
	if _, err := d.ProvisionHarness(e.ctx, h); err != nil {
		t.Fatal(err)
	}
	sent := e.gw.Journal().Method("CreateSandbox")[0].Request.(*openshellv1.CreateSandboxRequest)
	got := sent.Spec.Policy.NetworkPolicies[installation.ReservedNetworkPolicyName].GetEndpoints()
	want := &openshellv1.NetworkEndpoint{Host: "agent-gateway.dev", Ports: []uint32{80}, Protocol: "rest",
		Access: openshellv1.NetworkAccessPreset_NETWORK_ACCESS_PRESET_FULL, Path: "/node/pair"}
	if len(got) != 1 || !proto.Equal(got[0], want) {
		t.Fatalf("enrollment endpoints %v, want %v", got, want)
	}
}

// A setup Secret that is not exactly this Agent's (another Agent's label, another Namespace's
// label, no labels) is refused before any gateway call, without repeating its content, for
// native OpenClaw and dedicated Codex alike.
func TestProvisionRefusesUnownedSetupSecret(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.driver(nil)
	e.prepare(d)
	code := encodeSetupCode(t, setupFields(testSetupURL, time.Now().Add(time.Hour)))
	cases := map[string]map[string]string{
		"another Agent":     {driver.LabelNamespace: e.ns.ID, driver.LabelAgent: "agent_other"},
		"another Namespace": {driver.LabelNamespace: "ns_other", driver.LabelAgent: testAgentID},
		"no labels":         nil,
	}
	i := 0
	for _, harness := range enrollingHarnesses {
		for name, labels := range cases {
			t.Run(harness+"/"+name, func(t *testing.T) {
				i++
				secret := fmt.Sprintf("unowned-setup-%d", i)
				e.createSetupSecret(secret, labels, code)
				h := withSetupCode(e.attach(d, e.hctx(harness)), secret)
				e.gw.Journal().Reset()
				_, err := d.ProvisionHarness(e.ctx, h)
				if err == nil || !strings.HasPrefix(err.Error(), "Refusing a workspace node setup Secret without exact Agent ownership.") {
					t.Fatalf("err = %v", err)
				}
				if calls := e.gw.Journal().Calls(); len(calls) != 0 {
					t.Fatalf("gateway calls %v", e.methods())
				}
				e.requireSetupTokenOnlyInRuntimeProvider(err.Error())
			})
		}
	}
}

// Malformed or unusable setup codes are refused before any gateway call with the rule they
// break, never the code itself, whichever Harness enrolls.
func TestProvisionRefusesMalformedSetupCode(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.driver(nil)
	e.prepare(d)
	live := time.Now().Add(time.Hour)
	const invalid = "OpenShell requires a valid workspace node setup code."
	withExtra := setupFields(testSetupURL, live)
	withExtra["gatewayToken"] = setupCanary
	withoutToken := setupFields(testSetupURL, live)
	delete(withoutToken, "bootstrapToken")
	unsafeExpiry := setupFields(testSetupURL, live)
	unsafeExpiry["expiresAtMs"] = float64(1 << 60)
	padded := encodeSetupCode(t, setupFields(testSetupURL, live))
	cases := []struct {
		name string
		code []byte
		want string
	}{
		{"not base64url", []byte("oc-pair://" + setupCanary + "!!"), invalid},
		{"standard base64 alphabet", []byte(base64.StdEncoding.EncodeToString([]byte(`{"url":"wss://h/?","bootstrapToken":"` + setupCanary + `"}`))), invalid},
		{"trailing newline", append(slices.Clone(padded), '\n'), invalid},
		{"extra key", encodeSetupCode(t, withExtra), invalid},
		{"no bootstrap token", encodeSetupCode(t, withoutToken), invalid},
		{"expired", encodeSetupCode(t, setupFields(testSetupURL, time.Now().Add(-time.Minute))), invalid},
		{"expiry beyond a safe integer", encodeSetupCode(t, unsafeExpiry), invalid},
		{"http URL", encodeSetupCode(t, setupFields("https://agent-gateway/node", live)), msgNodeSetupURL},
		{"URL with credentials", encodeSetupCode(t, setupFields("wss://user:pass@agent-gateway/node", live)), msgNodeSetupURL},
		{"URL with query", encodeSetupCode(t, setupFields("wss://agent-gateway/node?token=x", live)), msgNodeSetupURL},
		{"URL with fragment", encodeSetupCode(t, setupFields("wss://agent-gateway/node#x", live)), msgNodeSetupURL},
		{"URL without host", encodeSetupCode(t, setupFields("wss:///node", live)), msgNodeSetupURL},
		{"too large", append([]byte("oc-pair://"), bytes.Repeat([]byte("A"), 64<<10)...), invalid},
	}
	for _, harness := range enrollingHarnesses {
		for i, tc := range cases {
			t.Run(harness+"/"+tc.name, func(t *testing.T) {
				secret := fmt.Sprintf("malformed-setup-%s-%d", harness, i)
				e.createSetupSecret(secret, e.ownerLabels(), tc.code)
				h := withSetupCode(e.attach(d, e.hctx(harness)), secret)
				e.gw.Journal().Reset()
				_, err := d.ProvisionHarness(e.ctx, h)
				if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
					t.Fatalf("err = %v\nwant %q", err, tc.want)
				}
				if calls := e.gw.Journal().Calls(); len(calls) != 0 {
					t.Fatalf("gateway calls %v", e.methods())
				}
				e.requireSetupTokenOnlyInRuntimeProvider(err.Error())
			})
		}
	}
	t.Run("missing key", func(t *testing.T) {
		e.createSetupSecret("keyless-setup", e.ownerLabels(), padded)
		h := withSetupCode(e.attach(d, e.hctx(driver.HarnessOpenClaw)), "keyless-setup")
		h.Requirements.Env[len(h.Requirements.Env)-2].SecretKeyRef.Key = "other"
		e.gw.Journal().Reset()
		if _, err := d.ProvisionHarness(e.ctx, h); err == nil || !strings.HasPrefix(err.Error(), invalid) || len(e.gw.Journal().Calls()) != 0 {
			t.Fatalf("err = %v, calls %v", err, e.methods())
		}
	})
}

// Offline refusals of the environment: any Secret reference other than the setup code (for
// either Harness), a literal setup code, and a CA bundle given twice or unbounded. Render reads no Secret, so these need no cluster.
func TestRenderNodeEnrollmentRefusals(t *testing.T) {
	d := newTestDriver(t, nil)
	ref := &driver.SecretKeyRef{Name: testSetupSecret, Key: testSetupKey}
	cases := []struct {
		name    string
		harness string
		env     []driver.EnvVar
		want    string
	}{
		{"other secretKeyRef", driver.HarnessOpenClaw, []driver.EnvVar{{Name: "OPENCLAW_API_KEY", SecretKeyRef: ref}},
			"OpenShell cannot receive secretKeyRef environment OPENCLAW_API_KEY."},
		{"other secretKeyRef beside a setup code", driver.HarnessOpenClaw, []driver.EnvVar{{Name: envNodeSetupCode, SecretKeyRef: ref}, {Name: "GITHUB_TOKEN", SecretKeyRef: ref}},
			"OpenShell cannot receive secretKeyRef environment GITHUB_TOKEN."},
		{"other secretKeyRef beside a Codex setup code", driver.HarnessCodex, []driver.EnvVar{{Name: envNodeSetupCode, SecretKeyRef: ref}, {Name: "GITHUB_TOKEN", SecretKeyRef: ref}},
			"OpenShell cannot receive secretKeyRef environment GITHUB_TOKEN."},
		{"literal Codex setup code", driver.HarnessCodex, []driver.EnvVar{{Name: envNodeSetupCode, Value: setupCanary}},
			"OpenShell cannot receive literal environment OPENCLAW_NODE_SETUP_CODE."},
		{"two Codex CA bundles", driver.HarnessCodex, []driver.EnvVar{{Name: envNodeCAPEM, Value: testNodeCA}, {Name: envNodeCAPEM, Value: testNodeCA}}, msgNodeCA},
		{"literal setup code", driver.HarnessOpenClaw, []driver.EnvVar{{Name: envNodeSetupCode, Value: setupCanary}},
			"OpenShell cannot receive literal environment OPENCLAW_NODE_SETUP_CODE."},
		{"two setup codes", driver.HarnessOpenClaw, []driver.EnvVar{{Name: envNodeSetupCode, SecretKeyRef: ref}, {Name: envNodeSetupCode, SecretKeyRef: ref}},
			"OpenShell cannot receive literal environment OPENCLAW_NODE_SETUP_CODE."},
		{"two CA bundles", driver.HarnessOpenClaw, []driver.EnvVar{{Name: envNodeCAPEM, Value: testNodeCA}, {Name: envNodeCAPEM, Value: testNodeCA}}, msgNodeCA},
		{"CA bundle from a Secret", driver.HarnessOpenClaw, []driver.EnvVar{{Name: envNodeCAPEM, SecretKeyRef: ref}}, msgNodeCA},
		{"unbounded CA bundle", driver.HarnessOpenClaw, []driver.EnvVar{{Name: envNodeCAPEM, Value: strings.Repeat("A", 64<<10+1)}}, msgNodeCA},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := codexContext(testNamespace)
			if tc.harness == driver.HarnessOpenClaw {
				h = openclawContext(testNamespace)
			}
			h.Requirements.Env = append(slices.Clone(h.Requirements.Env), tc.env...)
			_, err := d.RenderCreateSandbox(h)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("err = %v\nwant %q", err, tc.want)
			}
			if strings.Contains(err.Error(), setupCanary) {
				t.Fatalf("error repeats the setup code: %q", err)
			}
		})
	}
}

// Render of an enrolling revision works without any cluster: it names the runtime provider,
// keeps the setup code out of the environment, and carries no enrollment rule.
func TestRenderOpenClawSetupCodeIsAReference(t *testing.T) {
	d := newTestDriver(t, nil)
	h := withSetupCode(openclawContext(testNamespace), testSetupSecret)
	req, err := d.RenderCreateSandbox(h)
	if err != nil {
		t.Fatal(err)
	}
	if got := req.Spec.Providers[len(req.Spec.Providers)-1]; got != RuntimeProviderName(h.Revision.ID) {
		t.Fatalf("last provider %q", got)
	}
	if _, ok := req.Spec.Environment[envNodeSetupCode]; ok {
		t.Fatal("setup code in the Sandbox environment")
	}
	if _, ok := req.Spec.Policy.NetworkPolicies[installation.ReservedNetworkPolicyName]; ok {
		t.Fatal("render added the enrollment rule without the Secret")
	}
}

// After the Agent Gateway re-issues an expired setup code for the same endpoint, a redeploy
// refreshes only node_setup_json, fenced by the stored version; a stored envelope that is still
// live, or one for another endpoint, is refused without any update.
func TestProvisionRefreshesExpiredSetupEnvelope(t *testing.T) {
	for _, harness := range enrollingHarnesses {
		testRefreshExpiredSetupEnvelope(t, harness)
	}
}

func testRefreshExpiredSetupEnvelope(t *testing.T, harness string) {
	for _, tc := range []struct {
		name     string
		stored   nodeSetupEnvelope
		refresh  bool
		wantFail string
	}{
		{name: "expired, same endpoint", stored: nodeSetupEnvelope{URL: testSetupURL, BootstrapToken: "old", ExpiresAtMs: time.Now().Add(-time.Hour).UnixMilli(), TLSFingerprint: testFingerprint}, refresh: true},
		{name: "still live", stored: nodeSetupEnvelope{URL: testSetupURL, BootstrapToken: "old", ExpiresAtMs: time.Now().Add(time.Minute).UnixMilli(), TLSFingerprint: testFingerprint},
			wantFail: "Refusing OpenShell provider "},
		{name: "expired, other endpoint", stored: nodeSetupEnvelope{URL: "wss://elsewhere/node", BootstrapToken: "old", ExpiresAtMs: time.Now().Add(-time.Hour).UnixMilli(), TLSFingerprint: testFingerprint},
			wantFail: "Refusing OpenShell provider "},
		{name: "expired, other fingerprint", stored: nodeSetupEnvelope{URL: testSetupURL, BootstrapToken: "old", ExpiresAtMs: time.Now().Add(-time.Hour).UnixMilli(), TLSFingerprint: "sha256:other"},
			wantFail: "Refusing OpenShell provider "},
	} {
		t.Run(harness+"/"+tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{})
			d := e.driver(nil)
			e.prepare(d)
			e.createSetupSecret(testSetupSecret, e.ownerLabels(), encodeSetupCode(t, setupFields(testSetupURL, time.Now().Add(time.Hour))))
			h := withSetupCode(e.attach(d, e.hctx(harness)), testSetupSecret)
			stored, err := json.Marshal(tc.stored)
			if err != nil {
				t.Fatal(err)
			}
			name := RuntimeProviderName(h.Revision.ID)
			config := map[string]string{configNodeSetupJSON: string(stored), configNodeCAPEM: testNodeCA}
			if harness == driver.HarnessCodex {
				config[configRuntimeJSON] = `{"kind":"codex","selections":[]}`
				config[configConfigTOML] = "model = \"gpt-5\"\n"
			}
			created, err := e.client.CreateProvider(e.ctx, e.ns.Name, gateway.ProviderSpec{
				Name: name, Labels: runtimeProviderLabels(h.Revision), Type: runtimeProfileOf(harness), ProfileWorkspace: e.ns.Name,
				Config: config,
			})
			if err != nil {
				t.Fatal(err)
			}
			e.gw.Journal().Reset()
			_, err = d.ProvisionHarness(e.ctx, h)
			if !tc.refresh {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantFail+name+" without exact AgentRevision ownership and content.") {
					t.Fatalf("err = %v", err)
				}
				// The provider is read with the profile, so the refusal precedes even the shared
				// profile's import.
				if got := e.mutationMethods(); len(got) != 0 {
					t.Fatalf("mutations %v before the refusal", got)
				}
				e.requireSetupTokenOnlyInRuntimeProvider(err.Error())
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, want := e.mutationMethods(), []string{"ImportProviderProfiles", "UpdateProvider", "CreateSandbox"}; !slices.Equal(got, want) {
				t.Fatalf("mutations %v, want %v", got, want)
			}
			upd := e.gw.Journal().Method("UpdateProvider")[0].Request.(*openshellv1.UpdateProviderRequest)
			if upd.GetProvider().GetMetadata().GetResourceVersion() != created.ResourceVersion || created.ResourceVersion == 0 {
				t.Fatalf("update fenced at %d, stored version %d", upd.GetProvider().GetMetadata().GetResourceVersion(), created.ResourceVersion)
			}
			if keys := slices.Sorted(maps.Keys(upd.GetProvider().GetConfig())); !slices.Equal(keys, []string{configNodeSetupJSON}) || len(upd.GetProvider().GetCredentials()) != 0 {
				t.Fatalf("update touches %v", keys)
			}
			p, err := e.client.GetProvider(e.ctx, e.ns.Name, name)
			if err != nil {
				t.Fatal(err)
			}
			var now nodeSetupEnvelope
			if err := json.Unmarshal([]byte(p.Config[configNodeSetupJSON]), &now); err != nil || now.BootstrapToken != setupCanary || p.Config[configNodeCAPEM] != testNodeCA || len(p.Config) != len(config) {
				t.Fatalf("provider after refresh: err=%v token refreshed=%v", err, now.BootstrapToken == setupCanary)
			}
			e.requireSetupTokenOnlyInRuntimeProvider()
			// The refreshed provider is now exact: a repeat mutates nothing more.
			e.gw.Journal().Reset()
			if _, err := d.ProvisionHarness(e.ctx, h); err != nil {
				t.Fatal(err)
			}
			if got := e.mutationMethods(); len(got) != 0 {
				t.Fatalf("repeat mutations %v", got)
			}
		})
	}
}

// The setup code's URL defaults its port by scheme and keeps the exact path.
func TestParseNodeSetupURL(t *testing.T) {
	for raw, want := range map[string]nodeBinding{
		"wss://gw.example":           {host: "gw.example", port: 443, path: "/", tls: true},
		"ws://gw.example/a/b":        {host: "gw.example", port: 80, path: "/a/b"},
		"wss://[fd00::1]:9443/node":  {host: "fd00::1", port: 9443, path: "/node", tls: true},
		"ws://10.0.0.7:18789/pair/x": {host: "10.0.0.7", port: 18789, path: "/pair/x"},
	} {
		got, err := parseNodeSetupURL(raw)
		if err != nil || got != want {
			t.Errorf("%s: %+v, %v; want %+v", raw, got, err, want)
		}
	}
	for _, raw := range []string{"ws:opaque", "wss://gw:0/", "wss://gw:99999/", "tcp://gw/", "wss://gw/?", "wss://@gw/"} {
		if _, err := parseNodeSetupURL(raw); err == nil || err.Error() != msgNodeSetupURL {
			t.Errorf("%s: %v", raw, err)
		}
	}
}

// The enrolling example revision loads through Compute's revision format and renders offline,
// with the setup code as a reference only.
func TestRenderOpenClawNodeExampleRevision(t *testing.T) {
	rf, err := compute.LoadRevisionFile("../../../testdata/revisions/openclaw-node.yaml")
	if err != nil {
		t.Fatal(err)
	}
	req, err := rf.Requirements()
	if err != nil {
		t.Fatal(err)
	}
	h := openclawContext(testNamespace)
	h.Revision.ID, h.Revision.AgentID, h.Revision.NamespaceID = rf.RevisionID, rf.AgentID, rf.NamespaceID
	h.Revision.Harness = rf.Harness
	h.Revision.SandboxDriverID = rf.SandboxDriverID
	h.Namespace.ID = rf.NamespaceID
	h.Requirements.Env = req.Env
	h.Requirements.Labels[driver.LabelNamespace] = rf.NamespaceID
	h.Requirements.Labels[driver.LabelAgent] = rf.AgentID
	h.Requirements.Labels[driver.LabelRevision] = rf.RevisionID
	d := newTestDriver(t, nil)
	out, err := d.RenderCreateSandbox(h)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Spec.Providers[len(out.Spec.Providers)-1]; got != RuntimeProviderName(rf.RevisionID) {
		t.Fatalf("last provider %q", got)
	}
	for _, k := range []string{envNodeSetupCode, envNodeCAPEM} {
		if _, ok := out.Spec.Environment[k]; ok {
			t.Fatalf("rendered environment carries %s", k)
		}
	}
	notes := RenderNotes(h)
	if len(notes) != 1 || !strings.Contains(notes[0], "agent-researcher-node-setup") || !strings.Contains(notes[0], "not read") {
		t.Fatalf("render notes %q", notes)
	}
}

// echoingProviders is a gateway that refuses provider creation with an error repeating the
// provider's config, as a careless server might.
type echoingProviders struct{ *gateway.Client }

func (g echoingProviders) CreateProvider(_ context.Context, _ string, spec gateway.ProviderSpec) (*gateway.Provider, error) {
	return nil, fmt.Errorf("provider %s refused: config %v", spec.Name, spec.Config)
}

// A gateway error that echoes the runtime provider's config does not carry the bootstrap token
// into the driver's error.
func TestProvisionRedactsSetupTokenFromGatewayErrors(t *testing.T) {
	for _, harness := range enrollingHarnesses {
		t.Run(harness, func(t *testing.T) { testRedactSetupToken(t, harness) })
	}
}

func testRedactSetupToken(t *testing.T, harness string) {
	e := newEnv(t, envOptions{})
	opts := testOptions(t, nil)
	opts.Gateway = echoingProviders{Client: e.client}
	d, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.prepare(d)
	e.createSetupSecret(testSetupSecret, e.ownerLabels(), encodeSetupCode(t, setupFields(testSetupURL, time.Now().Add(time.Hour))))
	h := withSetupCode(e.attach(d, e.hctx(harness)), testSetupSecret)
	_, err = d.ProvisionHarness(e.ctx, h)
	if err == nil || !strings.Contains(err.Error(), "refused: config") {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), setupCanary) || !strings.Contains(err.Error(), "[redacted]") {
		t.Fatalf("error not redacted: %v", err)
	}
}
