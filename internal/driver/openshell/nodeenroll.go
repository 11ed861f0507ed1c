package openshell

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/gateway"
	"github.com/openclaw/occ/internal/gateway/openshellv1"
	"github.com/openclaw/occ/internal/installation"
)

// Workspace-node enrollment lets a native OpenClaw or dedicated Codex Harness enroll as a
// workspace node with its Agent Gateway. The setup code is a Secret: it is read from Compute's
// Secret only while provisioning (never by render), validated, and delivered to the Sandbox only
// as the runtime provider's node_setup_json config, which the runtime profile renders into a
// file. Nothing else (errors, logs, the Sandbox spec, render output) ever carries it.
const (
	envNodeSetupCode = "OPENCLAW_NODE_SETUP_CODE"
	envNodeCAPEM     = "OPENCLAW_NODE_CA_PEM"
	// The variables the runtime profile sets to the rendered files' paths.
	envNodeSetupEnvelope = "OPENCLAW_NODE_SETUP_ENVELOPE"
	envNodeCAPath        = "OPENCLAW_NODE_CA_PATH"

	// RuntimeProfileOpenClaw is the provider profile (and provider type) of native OpenClaw's
	// workspace-node enrollment files.
	RuntimeProfileOpenClaw = "oce-openclaw-runtime"

	configNodeSetupJSON = "node_setup_json"
	configNodeCAPEM     = "node_ca_pem"

	// nodeEnrollmentBinary is the only program the enrollment network rule lets connect.
	nodeEnrollmentBinary = "/usr/local/bin/node"
	nodeSetupPairPrefix  = "oc-pair://"
	maxNodeSetupBytes    = 64 << 10
	maxNodeCABytes       = 64 << 10
	// maxSafeInteger is JavaScript's Number.MAX_SAFE_INTEGER: the Harness reads expiresAtMs as
	// a JavaScript number, so a larger value would silently lose precision there.
	maxSafeInteger = 1<<53 - 1

	msgNodeSetupOwnership = "Refusing a workspace node setup Secret without exact Agent ownership."
	msgNodeSetupURL       = "The workspace node setup URL must be an exact ws or wss endpoint without credentials, query, or fragment."
	msgNodeCA             = "OpenShell requires at most one bounded literal workspace-node CA bundle."
	msgNodeSetupCode      = "OpenShell requires a valid workspace node setup code."
)

// nodeEnrollment is what plan learned offline about a revision's enrollment: where the setup
// code lives (never its value) and the literal CA bundle, if any.
type nodeEnrollment struct {
	ref   driver.SecretKeyRef
	caPEM string
	hasCA bool
}

// nodeSetupEnvelope is the decoded setup code. Its JSON form (fields in this order) is the
// node_setup_json config the Harness reads.
type nodeSetupEnvelope struct {
	URL            string `json:"url"`
	BootstrapToken string `json:"bootstrapToken"`
	ExpiresAtMs    int64  `json:"expiresAtMs"`
	TLSFingerprint string `json:"tlsFingerprint,omitempty"`
}

// nodeBinding is the network endpoint the envelope's URL names.
type nodeBinding struct {
	host string
	port uint32
	path string
	tls  bool
}

// planNodeEnrollment checks the enrollment variables of the Harness environment and returns the
// environment the literal builder should see. Native OpenClaw and dedicated Codex enroll alike;
// the setup code is the only Secret reference taken out here, so the literal builder still
// refuses every other secretKeyRef. The setup code must be one Secret reference (a literal
// would put the Secret into the Sandbox spec); the CA bundle at most one bounded literal, which
// moves into the runtime provider only when there is a setup code to use it with.
func planNodeEnrollment(env []driver.EnvVar) (*nodeEnrollment, []driver.EnvVar, error) {
	var setup []driver.EnvVar
	var ca []driver.EnvVar
	for _, e := range env {
		switch e.Name {
		case envNodeSetupCode:
			setup = append(setup, e)
		case envNodeCAPEM:
			ca = append(ca, e)
		}
	}
	if len(ca) > 1 || (len(ca) == 1 && (!ca[0].Literal() || strings.TrimSpace(ca[0].Value) == "" || len(ca[0].Value) > maxNodeCABytes)) {
		return nil, nil, unsupported(msgNodeCA, errorf("%s must appear at most once, as a nonempty literal of at most %d bytes (found %d entries)", envNodeCAPEM, maxNodeCABytes, len(ca)))
	}
	if len(setup) == 0 {
		return nil, env, nil
	}
	if len(setup) > 1 || setup[0].Literal() {
		return nil, nil, secretEnvironment(fmt.Sprintf("OpenShell cannot receive literal environment %s.", envNodeSetupCode),
			errorf("%s must appear exactly once, as a secretKeyRef to the Agent's setup Secret (found %d entries)", envNodeSetupCode, len(setup)))
	}
	n := &nodeEnrollment{ref: *setup[0].SecretKeyRef}
	if len(ca) == 1 {
		n.caPEM, n.hasCA = ca[0].Value, true
	}
	rest := make([]driver.EnvVar, 0, len(env))
	for _, e := range env {
		if e.Name != envNodeSetupCode && e.Name != envNodeCAPEM {
			rest = append(rest, e)
		}
	}
	return n, rest, nil
}

// nodeEnrollmentFiles are the workspace-node enrollment files every runtime profile renders:
// the setup envelope and the CA bundle from provider config, each announced to the Harness by
// its path variable.
func nodeEnrollmentFiles() []runtimeFile {
	return []runtimeFile{
		{Path: "node-setup.json", Content: "{{config." + configNodeSetupJSON + "}}", EnvVar: envNodeSetupEnvelope},
		{Path: "node-ca.pem", Content: "{{config." + configNodeCAPEM + "}}", EnvVar: envNodeCAPath},
	}
}

// openclawRuntimeProfile is native OpenClaw's runtime profile: only the enrollment files.
func openclawRuntimeProfile() runtimeProfileContent {
	return runtimeProfileContent{
		ID:          RuntimeProfileOpenClaw,
		DisplayName: "OpenClaw Enterprise OpenClaw runtime",
		Description: "Workspace-node enrollment files of one native OpenClaw Agent revision.",
		Category:    openshellv1.ProviderProfileCategory_PROVIDER_PROFILE_CATEGORY_OTHER.String(),
		Files:       nodeEnrollmentFiles(),
	}
}

// addTo puts the enrollment into the revision's runtime provider: Codex already has one for
// its plugin-runtime files, which then also carries the CA bundle (node_setup_json is filled in
// by resolve, at provisioning time); native OpenClaw gets one for the enrollment alone.
func (n *nodeEnrollment) addTo(rp *runtimeProvider, workspace string, rev driver.Revision) *runtimeProvider {
	if rp == nil {
		rp = n.runtimeProvider(workspace, rev)
	} else if n.hasCA {
		rp.spec.Config[configNodeCAPEM] = n.caPEM
	}
	return rp
}

// runtimeProvider describes the revision's OpenClaw runtime provider. Its node_setup_json is
// filled in by resolve, at provisioning time; render shows the provider by name only.
func (n *nodeEnrollment) runtimeProvider(workspace string, rev driver.Revision) *runtimeProvider {
	profile := openclawRuntimeProfile()
	config := map[string]string{}
	if n.hasCA {
		config[configNodeCAPEM] = n.caPEM
	}
	return &runtimeProvider{
		profile: profile,
		spec: gateway.ProviderSpec{
			Name:             RuntimeProviderName(rev.ID),
			Labels:           runtimeProviderLabels(rev),
			Type:             profile.ID,
			Config:           config,
			ProfileWorkspace: workspace,
		},
	}
}

// resolveNodeEnrollment reads and validates the setup Secret, completes the runtime provider's
// config and adds the enrollment network rule to the Sandbox policy. It runs after plan and
// before any gateway call, so every refusal here still leaves the gateway untouched. Errors name
// the Secret and key, never a value.
func (d *Driver) resolveNodeEnrollment(ctx context.Context, hctx driver.HarnessContext, p *provisionPlan) error {
	n := p.enrollment
	if n == nil {
		return nil
	}
	if hctx.Kube == nil {
		return errorf("OpenShell workspace node enrollment needs Compute's Kubernetes client to read Secret %s", n.ref.Name)
	}
	ns := hctx.Namespace.Name
	sec, err := hctx.Kube.CoreV1().Secrets(ns).Get(ctx, n.ref.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read workspace node setup Secret %s/%s: %w", ns, n.ref.Name, err)
	}
	rev := hctx.Revision
	if sec.Namespace != ns || sec.Labels[driver.LabelNamespace] != rev.NamespaceID || sec.Labels[driver.LabelAgent] != rev.AgentID {
		return secretEnvironment(msgNodeSetupOwnership,
			errorf("Secret %s/%s must carry labels %s=%s and %s=%s", ns, n.ref.Name, driver.LabelNamespace, rev.NamespaceID, driver.LabelAgent, rev.AgentID))
	}
	raw, ok := sec.Data[n.ref.Key]
	if !ok {
		return secretEnvironment(msgNodeSetupCode, errorf("Secret %s/%s has no key %s", ns, n.ref.Name, n.ref.Key))
	}
	env, binding, err := decodeNodeSetupCode(raw, time.Now(), fmt.Sprintf("Secret %s/%s key %s", ns, n.ref.Name, n.ref.Key))
	if err != nil {
		return err
	}
	setupJSON, err := json.Marshal(env)
	if err != nil {
		return fmt.Errorf("encode workspace node setup envelope: %w", err)
	}
	p.runtime.spec.Config[configNodeSetupJSON] = string(setupJSON)
	if p.spec.Policy.NetworkPolicies == nil {
		p.spec.Policy.NetworkPolicies = map[string]*openshellv1.NetworkPolicyRule{}
	}
	p.spec.Policy.NetworkPolicies[installation.ReservedNetworkPolicyName] = binding.rule()
	return nil
}

// decodeNodeSetupCode validates a setup code: at most 64 KiB; an optional oc-pair:// prefix;
// then canonical base64url of one JSON object with only url, bootstrapToken, expiresAtMs and
// tlsFingerprint; an expiry in the future; and an exact ws or wss URL. The returned errors
// describe the rule broken, never the code or any part of it.
func decodeNodeSetupCode(raw []byte, now time.Time, where string) (nodeSetupEnvelope, nodeBinding, error) {
	var zero nodeSetupEnvelope
	bad := func(rule string) (nodeSetupEnvelope, nodeBinding, error) {
		return zero, nodeBinding{}, secretEnvironment(msgNodeSetupCode, errorf("%s: %s", where, rule))
	}
	if len(raw) == 0 || len(raw) > maxNodeSetupBytes {
		return bad(fmt.Sprintf("the setup code must be 1 to %d bytes", maxNodeSetupBytes))
	}
	code := strings.TrimPrefix(string(raw), nodeSetupPairPrefix)
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(code, "="))
	if err != nil || (base64.RawURLEncoding.EncodeToString(payload) != code && base64.URLEncoding.EncodeToString(payload) != code) {
		return bad("the setup code must be exact base64url (optionally after oc-pair://), without whitespace")
	}
	var fields struct {
		URL            *string      `json:"url"`
		BootstrapToken *string      `json:"bootstrapToken"`
		ExpiresAtMs    *json.Number `json:"expiresAtMs"`
		TLSFingerprint *string      `json:"tlsFingerprint"`
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(&fields); err != nil || dec.More() {
		return bad("the setup code must decode to one JSON object with only url, bootstrapToken, expiresAtMs and tlsFingerprint")
	}
	if fields.URL == nil || fields.BootstrapToken == nil || *fields.BootstrapToken == "" || fields.ExpiresAtMs == nil {
		return bad("the setup code must carry url, a nonempty bootstrapToken and expiresAtMs")
	}
	exp, err := strconv.ParseInt(fields.ExpiresAtMs.String(), 10, 64)
	if err != nil || exp < 0 || exp > maxSafeInteger {
		return bad("expiresAtMs must be a nonnegative safe integer of milliseconds since the epoch")
	}
	if exp <= now.UnixMilli() {
		return bad("the setup code has expired; issue a new one")
	}
	binding, err := parseNodeSetupURL(*fields.URL)
	if err != nil {
		// The URL may itself carry credentials, so the detail names only where it came from.
		return zero, nodeBinding{}, secretEnvironment(msgNodeSetupURL, errorf("the url of %s", where))
	}
	env := nodeSetupEnvelope{URL: *fields.URL, BootstrapToken: *fields.BootstrapToken, ExpiresAtMs: exp}
	if fields.TLSFingerprint != nil {
		env.TLSFingerprint = *fields.TLSFingerprint
	}
	return env, binding, nil
}

// parseNodeSetupURL accepts only ws:// and wss:// URLs with a host and no user information,
// query or fragment: the enrollment rule is bound to exactly that endpoint.
func parseNodeSetupURL(raw string) (nodeBinding, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Opaque != "" || u.User != nil ||
		u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(raw, "#") || u.Hostname() == "" {
		return nodeBinding{}, plain(msgNodeSetupURL, nil)
	}
	b := nodeBinding{host: u.Hostname(), path: u.EscapedPath(), tls: u.Scheme == "wss", port: 80}
	if b.tls {
		b.port = 443
	}
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return nodeBinding{}, plain(msgNodeSetupURL, nil)
		}
		b.port = uint32(n)
	}
	if b.path == "" {
		b.path = "/"
	}
	return b, nil
}

// rule is the workspace-node-enrollment network rule: only the Node runtime may reach the setup
// endpoint. A wss endpoint is bound by host and port with TLS passed through uninspected (the
// node pins the gateway's certificate itself); a plain ws endpoint is inspected as REST with
// full access to exactly the setup path.
func (b nodeBinding) rule() *openshellv1.NetworkPolicyRule {
	ep := &openshellv1.NetworkEndpoint{Host: b.host, Ports: []uint32{b.port}}
	if b.tls {
		ep.Tls = openshellv1.NetworkTlsMode_NETWORK_TLS_MODE_SKIP
		ep.Enforcement = openshellv1.NetworkEnforcementMode_NETWORK_ENFORCEMENT_MODE_ENFORCE
	} else {
		ep.Protocol = "rest"
		ep.Access = openshellv1.NetworkAccessPreset_NETWORK_ACCESS_PRESET_FULL
		ep.Path = b.path
	}
	return &openshellv1.NetworkPolicyRule{
		Name:      installation.ReservedNetworkPolicyName,
		Binaries:  []*openshellv1.NetworkBinary{{Path: nodeEnrollmentBinary}},
		Endpoints: []*openshellv1.NetworkEndpoint{ep},
	}
}

// setupEnvelopeRefresh reports whether a stored runtime provider differs from the wanted one
// only by an expired setup envelope that the wanted, later envelope replaces for the same URL
// and TLS fingerprint. That is the one drift provisioning repairs (a redeploy after the code
// was re-issued); any other difference is refused.
func setupEnvelopeRefresh(cur *gateway.Provider, want gateway.ProviderSpec, now time.Time) bool {
	if cur.Type != want.Type || !slices.Contains(runtimeProfileIDs, want.Type) || len(cur.CredentialKeys) > 0 {
		return false
	}
	if cur.Name != want.Name || !maps.Equal(cur.Labels, want.Labels) || (cur.ProfileWorkspace != "" && cur.ProfileWorkspace != want.ProfileWorkspace) {
		return false
	}
	stored, wanted := maps.Clone(cur.Config), maps.Clone(want.Config)
	oldJSON, newJSON := stored[configNodeSetupJSON], wanted[configNodeSetupJSON]
	delete(stored, configNodeSetupJSON)
	delete(wanted, configNodeSetupJSON)
	if !maps.Equal(stored, wanted) || oldJSON == newJSON {
		return false
	}
	var o, n nodeSetupEnvelope
	if json.Unmarshal([]byte(oldJSON), &o) != nil || json.Unmarshal([]byte(newJSON), &n) != nil {
		return false
	}
	return o.ExpiresAtMs <= now.UnixMilli() && n.ExpiresAtMs > o.ExpiresAtMs && o.URL == n.URL && o.TLSFingerprint == n.TLSFingerprint
}

// RenderNotes explains how RenderCreateSandbox's output for hctx differs from what provisioning
// sends: for native OpenClaw or dedicated Codex with a workspace-node setup code, render does
// not read the Secret, so the runtime provider is named but its node_setup_json and the
// workspace-node-enrollment network rule are added only by ProvisionHarness. The notes name the Secret, never its content,
// and are empty for every other revision (whose render is exactly the first request sent).
func RenderNotes(hctx driver.HarnessContext) []string {
	if id := hctx.Revision.Harness.ID; id != driver.HarnessOpenClaw && id != driver.HarnessCodex {
		return nil
	}
	for _, e := range hctx.Requirements.Env {
		if e.Name == envNodeSetupCode && e.SecretKeyRef != nil {
			return []string{fmt.Sprintf("%s is a reference to Secret %s key %s, which render has not read: provisioning reads it, "+
				"adds the setup envelope to runtime provider %s as %s and adds the %s network rule for its endpoint.",
				envNodeSetupCode, e.SecretKeyRef.Name, e.SecretKeyRef.Key, RuntimeProviderName(hctx.Revision.ID), configNodeSetupJSON, installation.ReservedNetworkPolicyName)}
		}
	}
	return nil
}

// redactSetupToken keeps an error about the runtime provider from repeating the bootstrap
// token. The gateway client scrubs only credential values from its errors, and the token
// travels as provider config, so a gateway that echoed the config back would otherwise leak it.
func redactSetupToken(err error, rp *runtimeProvider) error {
	if err == nil || rp == nil {
		return err
	}
	var env nodeSetupEnvelope
	if json.Unmarshal([]byte(rp.spec.Config[configNodeSetupJSON]), &env) != nil || env.BootstrapToken == "" {
		return err
	}
	msg := err.Error()
	if !strings.Contains(msg, env.BootstrapToken) {
		return err
	}
	out := &driver.Error{Message: strings.ReplaceAll(msg, env.BootstrapToken, "[redacted]")}
	var de *driver.Error
	if errors.As(err, &de) {
		out.Code, out.Retryable = de.Code, de.Retryable
	}
	return out
}
