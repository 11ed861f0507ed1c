package openshell

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/gateway"
	"github.com/openclaw/occ/internal/gateway/openshellv1"
	"github.com/openclaw/occ/internal/installation"
)

// A dedicated Codex revision whose setup code comes from its Agent's Secret provisions: its one
// runtime provider carries the plugin-runtime files and the enrollment envelope and CA bundle,
// the shared Codex profile renders all four files, and the Sandbox may reach exactly the setup
// endpoint from the Node runtime. Render differs only by that rule; a repeat changes nothing;
// the bootstrap token reaches the gateway only in the runtime provider; cleanup removes it.
func TestProvisionCodexWorkspaceNodeEnrollment(t *testing.T) {
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
	h := withSetupCode(e.attach(d, e.hctx(driver.HarnessCodex)), testSetupSecret)

	rendered, err := d.RenderCreateSandbox(h)
	if err != nil {
		t.Fatal(err)
	}
	renderedJSON, err := MarshalRequestJSON(rendered)
	if err != nil {
		t.Fatal(err)
	}
	notes := RenderNotes(h)
	if len(notes) != 1 || !strings.Contains(notes[0], testSetupSecret) || !strings.Contains(notes[0], RuntimeProviderName(h.Revision.ID)) {
		t.Fatalf("render notes %q", notes)
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
		t.Fatalf("Sandbox providers %v, want %v (one runtime provider, last)", sent.Spec.Providers, want)
	}
	for _, k := range []string{envNodeSetupCode, envNodeCAPEM, envRuntimeManifest, envCodexConfigTOML} {
		if _, ok := sent.Spec.Environment[k]; ok {
			t.Fatalf("Sandbox environment carries %s; the runtime provider supplies it", k)
		}
	}
	if sent.Spec.Environment["APP_TOKEN_SHA"] != testAppTokenSHA {
		t.Fatalf("Codex verifier missing from the Sandbox environment")
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
	wantKeys := []string{configConfigTOML, configNodeCAPEM, configNodeSetupJSON, configRuntimeJSON}
	if p.Type != RuntimeProfileCodex || envelope != wantEnvelope || p.Config[configNodeCAPEM] != testNodeCA ||
		p.Config[configRuntimeJSON] != `{"kind":"codex","selections":[]}` || p.Config[configConfigTOML] != "model = \"gpt-5\"\n" ||
		!slices.Equal(slices.Sorted(maps.Keys(p.Config)), wantKeys) || len(p.CredentialKeys) != 0 {
		t.Fatalf("runtime provider type %q config keys %v envelope ok=%v", p.Type, slices.Sorted(maps.Keys(p.Config)), envelope == wantEnvelope)
	}
	if _, err := e.client.GetProviderProfile(e.ctx, e.ns.Name, RuntimeProfileOpenClaw); !gateway.IsNotFound(err) {
		t.Fatalf("a Codex revision imported the OpenClaw runtime profile: %v", err)
	}
	prof, err := e.client.GetProviderProfile(e.ctx, e.ns.Name, RuntimeProfileCodex)
	if err != nil {
		t.Fatal(err)
	}
	want := []*openshellv1.ProviderProfileFile{
		{Path: "runtime.json", Content: "{{config.runtime_json}}", EnvVar: "OPENCLAW_PLUGIN_RUNTIME_MANIFEST"},
		{Path: "config.toml", Content: "{{config.config_toml}}", EnvVar: "OPENCLAW_PLUGIN_CODEX_CONFIG_TOML"},
		{Path: "node-setup.json", Content: "{{config.node_setup_json}}", EnvVar: "OPENCLAW_NODE_SETUP_ENVELOPE"},
		{Path: "node-ca.pem", Content: "{{config.node_ca_pem}}", EnvVar: "OPENCLAW_NODE_CA_PATH"},
	}
	if !slices.EqualFunc(prof.Files, want, func(a, b *openshellv1.ProviderProfileFile) bool { return proto.Equal(a, b) }) || prof.InferenceCapable {
		t.Fatalf("Codex runtime profile files %v", prof.Files)
	}
	e.requireSetupTokenOnlyInRuntimeProvider(logs.String(), string(renderedJSON), strings.Join(notes, "\n"))

	rev := h.Revision
	if err := d.Cleanup(e.ctx, driver.CleanupContext{NamespaceContext: e.nctx(), Revision: &rev}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.GetProvider(e.ctx, e.ns.Name, name); !gateway.IsNotFound(err) {
		t.Fatalf("runtime provider after cleanup: %v", err)
	}
}

// Render of an enrolling Codex revision works without any cluster and reads no Secret: the
// runtime provider stays the last provider, the setup code and CA bundle leave the environment,
// and there is no enrollment rule; a Codex revision without a setup code has no render notes
// (its render is exactly what provisioning sends) and keeps a literal CA bundle as environment.
func TestRenderCodexSetupCodeIsAReference(t *testing.T) {
	d := newTestDriver(t, nil)
	h := withSetupCode(codexContext(testNamespace), testSetupSecret)
	req, err := d.RenderCreateSandbox(h)
	if err != nil {
		t.Fatal(err)
	}
	if got := req.Spec.Providers[len(req.Spec.Providers)-1]; got != RuntimeProviderName(h.Revision.ID) {
		t.Fatalf("last provider %q", got)
	}
	for _, k := range []string{envNodeSetupCode, envNodeCAPEM} {
		if _, ok := req.Spec.Environment[k]; ok {
			t.Fatalf("%s in the Sandbox environment", k)
		}
	}
	if _, ok := req.Spec.Policy.NetworkPolicies[installation.ReservedNetworkPolicyName]; ok {
		t.Fatal("render added the enrollment rule without the Secret")
	}
	if len(RenderNotes(h)) != 1 {
		t.Fatalf("render notes %q", RenderNotes(h))
	}

	plain := codexContext(testNamespace)
	plain.Requirements.Env = append(slices.Clone(plain.Requirements.Env), driver.EnvVar{Name: envNodeCAPEM, Value: testNodeCA})
	if notes := RenderNotes(plain); len(notes) != 0 {
		t.Fatalf("render notes without a setup code %q", notes)
	}
	req, err = d.RenderCreateSandbox(plain)
	if err != nil {
		t.Fatal(err)
	}
	if req.Spec.Environment[envNodeCAPEM] != testNodeCA {
		t.Fatal("a CA bundle without a setup code left the literal environment")
	}
}
