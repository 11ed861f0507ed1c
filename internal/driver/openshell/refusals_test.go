package openshell

import (
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/installation"
)

// canary stands in for a real secret value (a raw app-server token, Secret data). No refusal
// may ever repeat it.
const canary = "CANARY-7f3a9e51-do-not-leak"

// refusalCase is one revision or configuration provisioning must refuse before any gateway call.
type refusalCase struct {
	name   string
	config func(*installation.SandboxConfiguration)
	hctx   func(*driver.HarnessContext)
	want   string // the sentence the error starts with
	code   driver.Code
}

func setEnv(h *driver.HarnessContext, name string, v driver.EnvVar) {
	v.Name = name
	for i := range h.Requirements.Env {
		if h.Requirements.Env[i].Name == name {
			h.Requirements.Env[i] = v
			return
		}
	}
	h.Requirements.Env = append(h.Requirements.Env, v)
}

func dropEnv(h *driver.HarnessContext, name string) {
	var out []driver.EnvVar
	for _, e := range h.Requirements.Env {
		if e.Name != name {
			out = append(out, e)
		}
	}
	h.Requirements.Env = out
}

var refusalCases = []refusalCase{
	{name: "managed workspace mode", config: func(c *installation.SandboxConfiguration) { c.Gateway.WorkspaceMode = "managed" },
		want: "OpenShell managed workspace mode is not implemented; cannot provision a Harness."},
	{name: "embedded Harness", hctx: func(h *driver.HarnessContext) { h.Revision.Harness.Mode = "embedded" },
		want: "OpenShell SandboxDriver supports only dedicated Codex or OpenClaw Harness revisions.", code: driver.CodeHarnessUnsupported},
	{name: "other Harness runtime", hctx: func(h *driver.HarnessContext) { h.Revision.Harness.ID = "claude-code" },
		want: "OpenShell SandboxDriver supports only dedicated Codex or OpenClaw Harness revisions.", code: driver.CodeHarnessUnsupported},
	{name: "pinned to another Sandbox Driver", hctx: func(h *driver.HarnessContext) { h.Revision.SandboxDriverID = "sandbox-other" },
		want: "Refusing an AgentRevision pinned to another Sandbox Driver."},
	{name: "not pinned at all", hctx: func(h *driver.HarnessContext) { h.Revision.SandboxDriverID = "" },
		want: "Refusing an AgentRevision pinned to another Sandbox Driver."},
	{name: "revision of another Namespace", hctx: func(h *driver.HarnessContext) { h.Revision.NamespaceID = "ns_other" },
		want: "Refusing to provision a Sandbox outside its selected AgentRevision and Namespace."},
	{name: "namespace name too long for a Workspace", hctx: func(h *driver.HarnessContext) { h.Namespace.Name = "oce-0123456789abcdef0" },
		want: "OpenShell operator-mode Workspace names require a Kubernetes namespace name that is a DNS-1123 label of at most 19 characters."},
	{name: "revision ID without a UUID", hctx: func(h *driver.HarnessContext) {
		h.Revision.ID = "rev_42"
		h.Requirements.Labels[driver.LabelRevision] = "rev_42"
	}, want: "OpenShell requires an Agent revision ID containing a stable UUID."},
	{name: "Agent ServiceAccount and projected token", hctx: func(h *driver.HarnessContext) {
		h.Requirements.WorkloadIdentity = &driver.WorkloadIdentity{ServiceAccountName: "agent-support", Token: &driver.ProjectedToken{Audience: "openclaw-enterprise", ExpirationSeconds: 900, MountPath: "/var/run/secrets/openclaw", Path: "token", ReadOnly: true}}
	}, want: "OpenShell cannot preserve an Agent ServiceAccount and projected identity token", code: driver.CodeHarnessUnsupported},
	{name: "raw APP_SERVER_TOKEN literal", hctx: func(h *driver.HarnessContext) { setEnv(h, "APP_SERVER_TOKEN", driver.EnvVar{Value: canary}) },
		want: "OpenShell dedicated Codex cannot receive APP_SERVER_TOKEN.", code: driver.CodeSecretEnvironmentUnsupported},
	{name: "Secret-backed APP_SERVER_TOKEN", hctx: func(h *driver.HarnessContext) {
		setEnv(h, "APP_SERVER_TOKEN", driver.EnvVar{SecretKeyRef: &driver.SecretKeyRef{Name: "openclaw-agent-transport", Key: "token"}})
	}, want: "OpenShell dedicated Codex cannot receive APP_SERVER_TOKEN.", code: driver.CodeSecretEnvironmentUnsupported},
	{name: "missing APP_TOKEN_SHA", hctx: func(h *driver.HarnessContext) { dropEnv(h, "APP_TOKEN_SHA") },
		want: "OpenShell dedicated Codex requires one literal APP_TOKEN_SHA verifier. Malformed deployment or raw app-server token.", code: driver.CodeSecretEnvironmentUnsupported},
	{name: "raw token in APP_TOKEN_SHA", hctx: func(h *driver.HarnessContext) { setEnv(h, "APP_TOKEN_SHA", driver.EnvVar{Value: canary}) },
		want: "OpenShell dedicated Codex requires one literal APP_TOKEN_SHA verifier.", code: driver.CodeSecretEnvironmentUnsupported},
	{name: "upper-case APP_TOKEN_SHA", hctx: func(h *driver.HarnessContext) {
		setEnv(h, "APP_TOKEN_SHA", driver.EnvVar{Value: strings.ToUpper(testAppTokenSHA)})
	},
		want: "OpenShell dedicated Codex requires one literal APP_TOKEN_SHA verifier.", code: driver.CodeSecretEnvironmentUnsupported},
	{name: "two APP_TOKEN_SHA entries", hctx: func(h *driver.HarnessContext) {
		h.Requirements.Env = append(h.Requirements.Env, driver.EnvVar{Name: "APP_TOKEN_SHA", Value: testAppTokenSHA})
	}, want: "OpenShell dedicated Codex requires one literal APP_TOKEN_SHA verifier.", code: driver.CodeSecretEnvironmentUnsupported},
	{name: "Secret-backed APP_TOKEN_SHA", hctx: func(h *driver.HarnessContext) {
		setEnv(h, "APP_TOKEN_SHA", driver.EnvVar{SecretKeyRef: &driver.SecretKeyRef{Name: "s", Key: "k"}})
	}, want: "OpenShell dedicated Codex requires one literal APP_TOKEN_SHA verifier.", code: driver.CodeSecretEnvironmentUnsupported},
	{name: "secretKeyRef environment", hctx: func(h *driver.HarnessContext) {
		setEnv(h, "OPENAI_API_KEY", driver.EnvVar{SecretKeyRef: &driver.SecretKeyRef{Name: "model-key", Key: "value"}})
	}, want: "OpenShell cannot receive secretKeyRef environment OPENAI_API_KEY.", code: driver.CodeSecretEnvironmentUnsupported},
	{name: "OpenClaw secretKeyRef environment", hctx: func(h *driver.HarnessContext) {
		*h = openclawContext(testNamespace)
		// The workspace-node setup code is the one Secret reference OpenClaw may carry.
		setEnv(h, "OPENCLAW_GATEWAY_TOKEN", driver.EnvVar{SecretKeyRef: &driver.SecretKeyRef{Name: "setup", Key: "code"}})
	}, want: "OpenShell cannot receive secretKeyRef environment OPENCLAW_GATEWAY_TOKEN.", code: driver.CodeSecretEnvironmentUnsupported},
	{name: "Codex without plugin-runtime files", hctx: func(h *driver.HarnessContext) { dropEnv(h, "OPENCLAW_PLUGIN_CODEX_CONFIG_TOML") },
		want: "OpenShell dedicated Codex requires its exact bounded plugin-runtime files.", code: driver.CodeHarnessUnsupported},
	{name: "malformed plugin-runtime manifest", hctx: func(h *driver.HarnessContext) {
		setEnv(h, "OPENCLAW_PLUGIN_RUNTIME_MANIFEST", driver.EnvVar{Value: "{kind: codex"})
	}, want: "OpenShell dedicated Codex requires a valid plugin-runtime manifest.", code: driver.CodeHarnessUnsupported},
	{name: "selected plugins", hctx: func(h *driver.HarnessContext) {
		setEnv(h, "OPENCLAW_PLUGIN_RUNTIME_MANIFEST", driver.EnvVar{Value: `{"kind":"codex","selections":[{"plugin":"github"}]}`})
	}, want: "OpenShell dedicated Codex does not yet support selected plugins or repository credentials.", code: driver.CodeHarnessUnsupported},
	{name: "repository credentials", hctx: func(h *driver.HarnessContext) {
		setEnv(h, "OPENCLAW_PLUGIN_RUNTIME_MANIFEST", driver.EnvVar{Value: `{"kind":"codex","selections":[],"repositoryBrokerNetworkPolicy":{"host":"github.com"}}`})
	}, want: "OpenShell dedicated Codex does not yet support selected plugins or repository credentials.", code: driver.CodeHarnessUnsupported},
	{name: "OpenClaw with Codex plugin-runtime files", hctx: func(h *driver.HarnessContext) {
		*h = openclawContext(testNamespace)
		setEnv(h, "OPENCLAW_PLUGIN_RUNTIME_MANIFEST", driver.EnvVar{Value: `{"kind":"codex","selections":[]}`})
	}, want: "OpenShell dedicated OpenClaw cannot receive Codex plugin-runtime files.", code: driver.CodeHarnessUnsupported},
	{name: "Codex without APP_SERVER_PORT", hctx: func(h *driver.HarnessContext) { dropEnv(h, "APP_SERVER_PORT") },
		want: "OpenShell requires a literal APP_SERVER_PORT for create-time service exposure."},
	{name: "login mode disagreeing with the environment", hctx: func(h *driver.HarnessContext) { setEnv(h, "CODEX_LOGIN_MODE", driver.EnvVar{Value: "chatgpt"}) },
		want: "OpenShell Harness login mode disagrees with its environment."},
	{name: "label outside the gateway's allowed Pod labels", hctx: func(h *driver.HarnessContext) { h.Requirements.Labels["team"] = "support" },
		want: "OpenShell Harness workload labels must be allowed Pod labels of the gateway."},
	{name: "labels of another revision", hctx: func(h *driver.HarnessContext) {
		h.Requirements.Labels[driver.LabelRevision] = "rev_00000000-0000-0000-0000-000000000001"
	}, want: "OpenShell Harness workload labels must identify the exact Agent revision."},
	{name: "broad network profile", hctx: func(h *driver.HarnessContext) { h.Requirements.Labels[driver.LabelNetworkProfile] = "broad-egress-v1" },
		want: "OpenShell requires the provider-fenced network profile on the Harness template."},
	{name: "missing network profile", hctx: func(h *driver.HarnessContext) { delete(h.Requirements.Labels, driver.LabelNetworkProfile) },
		want: "OpenShell requires the provider-fenced network profile on the Harness template."},
	{name: "attachment outside the oce-cs- shape", hctx: func(h *driver.HarnessContext) {
		h.Requirements.CredentialAttachments = []driver.CredentialAttachment{{SourceID: "cs_x", Ref: "openai-shared"}}
	}, want: "The Harness requires a credential attachment that this OpenShell Backend did not issue."},
	{name: "attachment ref of another source", hctx: func(h *driver.HarnessContext) {
		h.Requirements.CredentialAttachments = []driver.CredentialAttachment{{SourceID: "cs_mine", Ref: CredentialProviderName("cs_theirs")}}
	}, want: "The Harness requires a credential attachment that this OpenShell Backend did not issue."},
	{name: "repeated attachment", hctx: func(h *driver.HarnessContext) {
		a := driver.CredentialAttachment{SourceID: "cs_a", Ref: CredentialProviderName("cs_a")}
		h.Requirements.CredentialAttachments = []driver.CredentialAttachment{a, a}
	}, want: "The Harness requires a credential attachment that this OpenShell Backend did not issue."},
	{name: "static provider in the credential-source namespace", config: func(c *installation.SandboxConfiguration) {
		c.Providers = []string{CredentialProviderName("cs_openai_default")}
	}, want: "OpenShell static providers must be nonempty names outside the OCC credential-source namespace."},
	// An operator-configured provider named like a revision's runtime provider would stand in
	// for that revision's own runtime files; the whole oce-runtime- shape is OCC's, as the
	// Installation validator also says.
	{name: "static provider named like the runtime provider", config: func(c *installation.SandboxConfiguration) {
		c.Providers = []string{RuntimeProviderName(testRevisionID)}
	}, want: "OpenShell static providers must be nonempty names outside the OCC credential-source namespace. Names of the form oce-runtime-<16 hex digits> belong to OCC revision runtime providers."},
	{name: "data mount matching no approved mount", hctx: func(h *driver.HarnessContext) { h.Requirements.Mounts[0].SubPath = "other" },
		want: "OpenShell sandboxDataMount must exactly match one approved Harness workspace mount."},
	{name: "data mount weakening a read-only mount", hctx: func(h *driver.HarnessContext) { h.Requirements.Mounts[0].ReadOnly = true },
		want: "OpenShell sandboxDataMount must not weaken an approved read-only workspace mount."},
	{name: "approved mount at the PVC root", hctx: func(h *driver.HarnessContext) {
		h.Requirements.Mounts = append(h.Requirements.Mounts, driver.WorkspaceMount{ClaimName: testClaim, SubPath: "../x", MountPath: "/home/node/x"})
	}, want: "OpenShell requires exact approved PVC subpath mounts.", code: driver.CodeHarnessUnsupported},
	{name: "mount beneath the runtime root", hctx: func(h *driver.HarnessContext) {
		h.Requirements.Mounts = append(h.Requirements.Mounts, driver.WorkspaceMount{ClaimName: testClaim, SubPath: "state", MountPath: "/sandbox/.openclaw-runtime/home/state"})
	}, want: "OpenShell workspace mounts must not overlap beneath the runtime home."},
	{name: "read-write policy on a read-only mount", hctx: func(h *driver.HarnessContext) {
		h.Requirements.Mounts = append(h.Requirements.Mounts, driver.WorkspaceMount{ClaimName: testClaim, SubPath: "skills", MountPath: "/opt/skills", ReadOnly: true})
	}, config: func(c *installation.SandboxConfiguration) {
		c.Policy.Filesystem = &installation.FilesystemPolicy{ReadWrite: []string{"/opt"}}
	}, want: "OpenShell filesystem policy must not grant read-write access to read-only mount /opt/skills."},
	{name: "root path in the filesystem policy", config: func(c *installation.SandboxConfiguration) {
		c.Policy.Filesystem = &installation.FilesystemPolicy{ReadOnly: []string{"/"}}
	}, want: "OpenShell policy.filesystem.readOnly[0] must be an exact non-root absolute path."},
	{name: "best_effort Landlock", config: func(c *installation.SandboxConfiguration) { c.Policy.LandlockCompatibility = ptr("best_effort") },
		want: "OpenShell policy.landlockCompatibility must be hard_requirement or omitted; best_effort is not supported."},
	{name: "old passthrough TLS spelling", config: func(c *installation.SandboxConfiguration) {
		c.Policy.NetworkPolicies[0].Endpoints[0].TLS = ptr("passthrough")
	},
		want: "OpenShell network policy source-control TLS mode must be one of: skip, terminate."},
	{name: "unknown enforcement", config: func(c *installation.SandboxConfiguration) {
		c.Policy.NetworkPolicies[0].Endpoints[0].Protocol = ptr("rest")
		c.Policy.NetworkPolicies[0].Endpoints[0].Access = ptr("full")
		c.Policy.NetworkPolicies[0].Endpoints[0].Enforcement = ptr("block")
	}, want: "OpenShell network policy source-control enforcement mode must be one of: enforce, audit."},
	{name: "unknown access preset", config: func(c *installation.SandboxConfiguration) {
		c.Policy.NetworkPolicies[0].Endpoints[0].Protocol = ptr("rest")
		c.Policy.NetworkPolicies[0].Endpoints[0].Access = ptr("constructor")
	}, want: "OpenShell network policy source-control access preset must be one of: read_only, read_write, full."},
	{name: "json-rpc protocol", config: func(c *installation.SandboxConfiguration) {
		c.Policy.NetworkPolicies[0].Endpoints[0].Protocol = ptr("json-rpc")
	},
		want: "OpenShell network policy source-control protocol must be one of: tcp, rest, websocket, graphql, sql."},
	{name: "no network policy", config: func(c *installation.SandboxConfiguration) { c.Policy.NetworkPolicies = nil },
		want: "OpenShell requires at least one sandbox network policy."},
	{name: "reserved network policy name", config: func(c *installation.SandboxConfiguration) {
		c.Policy.NetworkPolicies[0].Name = "workspace-node-enrollment"
	},
		want: "OpenShell network policy workspace-node-enrollment uses a reserved name."},
	{name: "duplicate network policy names", config: func(c *installation.SandboxConfiguration) {
		c.Policy.NetworkPolicies = append(c.Policy.NetworkPolicies, c.Policy.NetworkPolicies[0])
	}, want: "OpenShell network policy source-control is declared more than once."},
	{name: "network policy without binaries", config: func(c *installation.SandboxConfiguration) { c.Policy.NetworkPolicies[0].Binaries = nil },
		want: "OpenShell network policy source-control requires at least one binary path."},
	{name: "invalid port", config: func(c *installation.SandboxConfiguration) {
		c.Policy.NetworkPolicies[0].Endpoints[0].Ports = []int{70000}
	},
		want: "OpenShell network policy source-control port must be a valid TCP port."},
	{name: "too many environment variables", hctx: func(h *driver.HarnessContext) {
		for i := 0; i < 130; i++ {
			h.Requirements.Env = append(h.Requirements.Env, driver.EnvVar{Name: "VAR_" + strings.Repeat("X", i%5) + string(rune('A'+i%26)) + string(rune('A'+i/26)), Value: "v"})
		}
	}, want: "OpenShell Harness environment exceeds the gateway's limits."},
}

// Every refusal carries its exact sentence and code, and none repeats a secret value.
func TestRenderRefusals(t *testing.T) {
	for _, tc := range refusalCases {
		t.Run(tc.name, func(t *testing.T) {
			d := newTestDriver(t, tc.config)
			h := codexContext(testNamespace)
			if tc.hctx != nil {
				tc.hctx(&h)
			}
			_, err := d.RenderCreateSandbox(h)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %q\nwant prefix %q", err, tc.want)
			}
			if driver.CodeOf(err) != tc.code {
				t.Fatalf("code %q, want %q", driver.CodeOf(err), tc.code)
			}
			if strings.Contains(err.Error(), canary) {
				t.Fatalf("error repeats the secret value: %q", err)
			}
		})
	}
}

// A Backend that pairs another Sandbox driver is refused at construction.
func TestNewRefusesForeignBackend(t *testing.T) {
	opts := testOptions(t, nil)
	opts.ID = "sandbox-other"
	if _, err := New(opts); err == nil || err.Error() != "The OpenShell Backend does not declare this Sandbox Driver as a member. (backend \"openshell\" names sandbox driver \"sandbox-openshell-development\", not \"sandbox-other\")" {
		t.Fatalf("New: %v", err)
	}
}
