package openshell

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/gateway/openshellv1"
	"github.com/openclaw/occ/internal/installation"
)

const testNamespace = "oce-0123456789abcde"

func ptr[T any](v T) *T { return &v }

// Sandbox names are a pure function of the revision: 19 characters, stable, distinct per
// revision, so cleanup can find the Sandbox after any lost response.
func TestSandboxNameIsStable19Characters(t *testing.T) {
	a, err := SandboxName("os", testRevisionID)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := SandboxName("os", testRevisionID)
	c, _ := SandboxName("os", "rev_00000000-0000-0000-0000-000000000001")
	if len(a) != 19 || a != b || a == c || !strings.HasPrefix(a, "os-") || !dnsLabel.MatchString(a) {
		t.Fatalf("names %q %q %q", a, b, c)
	}
	if n, _ := SandboxName("s", testRevisionID); len(n) != 19 {
		t.Fatalf("one-character prefix gives %q", n)
	}
	if _, err := SandboxName("abc", testRevisionID); err == nil || !strings.HasPrefix(err.Error(), "Sandbox name prefix is too long for OpenShell's 19-character limit.") {
		t.Fatalf("three-character prefix: %v", err)
	}
	if p := CredentialProviderName("cs_openai_default"); !IsCredentialProviderName(p) || len(p) != 31 {
		t.Fatalf("credential provider name %q", p)
	}
}

// The request a dedicated Codex revision sends, checked field by field against the
// SandboxDriver's provisioning contract.
func TestRenderCodexRequest(t *testing.T) {
	d := newTestDriver(t, nil)
	req, err := d.RenderCreateSandbox(codexContext(testNamespace))
	if err != nil {
		t.Fatal(err)
	}
	name, _ := SandboxName("os", testRevisionID)
	if req.Name != name || req.GetWorkspaceScope().GetWorkspace() != testNamespace || req.RequestId != "3f2b9c4e-8d1a-4b6f-9e2d-1c0a7b5e4f31" {
		t.Fatalf("identity: name %q workspace %q request_id %q", req.Name, req.GetWorkspaceScope().GetWorkspace(), req.RequestId)
	}
	if len(req.ServiceExposures) != 1 || req.ServiceExposures[0].Service != "" || req.ServiceExposures[0].TargetPort != 4500 ||
		req.ServiceExposures[0].AuthorizationMode != openshellv1.ServiceAuthorizationMode_SERVICE_AUTHORIZATION_MODE_BEARER_PASSTHROUGH {
		t.Fatalf("exposures %v", req.ServiceExposures)
	}
	if req.Annotations[driver.AnnotationRevisionID] != testRevisionID || req.Annotations[driver.AnnotationAgentID] != testAgentID || req.Annotations[driver.AnnotationNamespaceID] != testNamespaceID {
		t.Fatalf("annotations %v", req.Annotations)
	}
	spec := req.Spec
	env := spec.Environment
	if env["HOME"] != "/sandbox/.openclaw-runtime/home" || env["TMPDIR"] != "/tmp" || env["OPENCLAW_WORKSPACE_DIR"] != "/sandbox/enterprise" ||
		env["CODEX_HOME"] != "/sandbox/.openclaw-runtime/home/.codex" || env["CODEX_LOGIN_MODE"] != "api_key" || env["APP_TOKEN_SHA"] != testAppTokenSHA {
		t.Fatalf("environment %v", env)
	}
	// The runtime files reach the Harness through the runtime provider, which comes last.
	if !slices.Equal(spec.Providers, []string{CredentialProviderName("cs_openai_default"), RuntimeProviderName(testRevisionID)}) {
		t.Fatalf("providers %v", spec.Providers)
	}
	if _, ok := env[envRuntimeManifest]; ok {
		t.Fatalf("the runtime manifest is both provider-supplied and literal environment: %v", env)
	}
	if _, ok := env[envCodexConfigTOML]; ok {
		t.Fatalf("the Codex config is both provider-supplied and literal environment: %v", env)
	}
	tpl := spec.Template
	if tpl.RuntimeClassName != "openshell-sandbox" || tpl.UserNamespaces == nil || *tpl.UserNamespaces || tpl.Labels[driver.LabelNetworkProfile] != "provider-fenced-v1" || tpl.Labels[driver.LabelRevision] != testRevisionID {
		t.Fatalf("template %v", tpl)
	}
	k := tpl.DriverConfig.AsMap()["kubernetes"].(map[string]any)
	agent := k["containers"].(map[string]any)["agent"].(map[string]any)
	res := agent["resources"].(map[string]any)
	if res["requests"].(map[string]any)["ephemeral-storage"] != "256Mi" || res["limits"].(map[string]any)["ephemeral-storage"] != "1Gi" {
		t.Fatalf("resources %v", res)
	}
	mounts := agent["volume_mounts"].([]any)
	if len(mounts) != 2 {
		t.Fatalf("volume mounts %v", mounts)
	}
	rt, data := mounts[0].(map[string]any), mounts[1].(map[string]any)
	if rt["mount_path"] != RuntimeRoot || rt["sub_path"] != runtimeSubPath(testRevisionID) || rt["read_only"] != false ||
		data["mount_path"] != "/sandbox/enterprise" || data["sub_path"] != "workspace" || data["read_only"] != false {
		t.Fatalf("mounts %v", mounts)
	}
	vols := k["volumes"].([]any)
	if len(vols) != 1 || vols[0].(map[string]any)["persistent_volume_claim"].(map[string]any)["claim_name"] != testClaim {
		t.Fatalf("volumes %v", vols)
	}
	if k["pod"].(map[string]any)["runtime_class_name"] != "openshell-sandbox" {
		t.Fatalf("pod %v", k["pod"])
	}

	pol := spec.Policy
	if pol.Version != 1 || pol.Landlock.GetCompatibility() != "hard_requirement" || pol.Process.RunAsUser != "1000" || pol.Process.RunAsGroup != "1000" {
		t.Fatalf("policy %v", pol)
	}
	fs := pol.Filesystem
	if !fs.IncludeWorkdir || !slices.Equal(fs.ReadOnly, []string{"/bin", "/usr", "/lib", "/proc", "/dev/urandom", "/etc", "/var/log", "/app"}) ||
		!slices.Equal(fs.ReadWrite, []string{"/tmp", "/dev/null", RuntimeRoot, "/sandbox/enterprise"}) {
		t.Fatalf("baseline filesystem ro=%v rw=%v", fs.ReadOnly, fs.ReadWrite)
	}
	rule := pol.NetworkPolicies["source-control"]
	if rule == nil || len(rule.Binaries) != 1 || rule.Binaries[0].Path != "/usr/bin/git" || len(rule.Endpoints) != 1 ||
		rule.Endpoints[0].Host != "github.com" || !slices.Equal(rule.Endpoints[0].Ports, []uint32{443}) || rule.Endpoints[0].Tls != openshellv1.NetworkTlsMode_NETWORK_TLS_MODE_SKIP {
		t.Fatalf("network policy %v", rule)
	}
}

// Native OpenClaw connects outbound only: no exposure and no app-server variables required.
func TestRenderOpenClawRequestHasNoExposure(t *testing.T) {
	d := newTestDriver(t, nil)
	req, err := d.RenderCreateSandbox(openclawContext(testNamespace))
	if err != nil {
		t.Fatal(err)
	}
	if len(req.ServiceExposures) != 0 {
		t.Fatalf("exposures %v", req.ServiceExposures)
	}
	if req.Spec.Environment["OPENCLAW_STATE_DIR"] != "/sandbox/.openclaw-runtime/home/.openclaw" {
		t.Fatalf("environment %v", req.Spec.Environment)
	}
}

// An explicit filesystem block replaces the baseline, but required mounts, the runtime root and
// /tmp are still added; enum spellings map to the exact wire enums.
func TestRenderExplicitPolicy(t *testing.T) {
	d := newTestDriver(t, func(c *installation.SandboxConfiguration) {
		c.Policy.Filesystem = &installation.FilesystemPolicy{IncludeWorkdir: ptr(false), ReadOnly: []string{"/usr", "/sandbox/enterprise"}, ReadWrite: []string{"/var/cache"}}
		c.Policy.NetworkPolicies = append(c.Policy.NetworkPolicies, installation.NetworkPolicy{
			Name: "api", Binaries: []installation.Binary{{Path: "/usr/bin/curl"}},
			Endpoints: []installation.Endpoint{{Host: "api.example.com", Ports: []int{443}, Protocol: ptr("REST"), TLS: ptr("terminate"), Enforcement: ptr("audit"), Access: ptr("read_only")}},
		})
	})
	req, err := d.RenderCreateSandbox(codexContext(testNamespace))
	if err != nil {
		t.Fatal(err)
	}
	fs := req.Spec.Policy.Filesystem
	if fs.IncludeWorkdir || !slices.Equal(fs.ReadOnly, []string{"/usr"}) || !slices.Equal(fs.ReadWrite, []string{"/var/cache", RuntimeRoot, "/sandbox/enterprise", "/tmp"}) {
		t.Fatalf("filesystem ro=%v rw=%v", fs.ReadOnly, fs.ReadWrite)
	}
	ep := req.Spec.Policy.NetworkPolicies["api"].Endpoints[0]
	if ep.Protocol != "rest" || ep.Tls != openshellv1.NetworkTlsMode_NETWORK_TLS_MODE_TERMINATE ||
		ep.Enforcement != openshellv1.NetworkEnforcementMode_NETWORK_ENFORCEMENT_MODE_AUDIT || ep.Access != openshellv1.NetworkAccessPreset_NETWORK_ACCESS_PRESET_READ_ONLY {
		t.Fatalf("endpoint %v", ep)
	}
}

// Configured resources are replaced for ephemeral storage only.
func TestRenderForcesEphemeralStorage(t *testing.T) {
	d := newTestDriver(t, func(c *installation.SandboxConfiguration) {
		c.Kubernetes.AgentResources = &installation.AgentResources{
			Requests: mustQuantities(t, map[string]string{"cpu": "500m", "ephemeral-storage": "10Gi"}),
			Limits:   mustQuantities(t, map[string]string{"memory": "2Gi", "ephemeral-storage": "50Gi"}),
		}
	})
	req, err := d.RenderCreateSandbox(codexContext(testNamespace))
	if err != nil {
		t.Fatal(err)
	}
	res := req.Spec.Template.DriverConfig.AsMap()["kubernetes"].(map[string]any)["containers"].(map[string]any)["agent"].(map[string]any)["resources"].(map[string]any)
	if toJSON(t, res) != `{"limits":{"ephemeral-storage":"1Gi","memory":"2Gi"},"requests":{"cpu":"500m","ephemeral-storage":"256Mi"}}` {
		t.Fatalf("resources %s", toJSON(t, res))
	}
}

// Rendering is reproducible byte for byte, so `occ sandbox render` output can be diffed.
func TestMarshalRequestJSONIsStable(t *testing.T) {
	d := newTestDriver(t, nil)
	var first []byte
	for i := 0; i < 5; i++ {
		req, err := d.RenderCreateSandbox(codexContext(testNamespace))
		if err != nil {
			t.Fatal(err)
		}
		out, err := MarshalRequestJSON(req)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = out
			if !json.Valid(out) || !bytes.Contains(out, []byte(`"request_id": "3f2b9c4e-8d1a-4b6f-9e2d-1c0a7b5e4f31"`)) {
				t.Fatalf("output:\n%s", out)
			}
		} else if !bytes.Equal(out, first) {
			t.Fatalf("render %d differs:\n%s\nvs\n%s", i, out, first)
		}
	}
}
