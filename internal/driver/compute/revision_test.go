package compute

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/driver"
)

const revisionsDir = "../../../testdata/revisions"

// The physical name is the documented digest: stable across runs, a 19-character DNS label,
// and different for different Namespaces.
func TestPhysicalNamespaceNameIsTheDocumentedDigest(t *testing.T) {
	name, err := PhysicalNamespaceName("ns_acme")
	if err != nil {
		t.Fatal(err)
	}
	// sha256("ns_acme") starts with these 15 hex characters (computed independently with
	// `printf ns_acme | sha256sum`).
	if want := "oce-894208c4e2d019f"; name != want {
		t.Fatalf("name = %q, want %q", name, want)
	}
	if len(name) != MaxNamespaceNameLength || !regexp.MustCompile(`^oce-[0-9a-f]{15}$`).MatchString(name) {
		t.Fatalf("name %q is not oce- plus 15 lowercase hex characters", name)
	}
	again, _ := PhysicalNamespaceName("ns_acme")
	other, _ := PhysicalNamespaceName("ns_acme2")
	if again != name || other == name {
		t.Fatalf("names not deterministic/distinct: %q %q %q", name, again, other)
	}
	for _, bad := range []string{"", "has space", strings.Repeat("a", 64), "-leading"} {
		if _, err := PhysicalNamespaceName(bad); err == nil {
			t.Errorf("PhysicalNamespaceName(%q) succeeded; want a refusal", bad)
		}
	}
}

// The two documented examples load, and the requirements Compute derives from them carry the
// exact image, command, mounts, login mode and revision labels.
func TestRevisionExamplesDeriveRequirements(t *testing.T) {
	rf, err := LoadRevisionFile(filepath.Join(revisionsDir, "codex.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	req, err := rf.Requirements()
	if err != nil {
		t.Fatal(err)
	}
	if req.Image != rf.Workload.Image || strings.Join(req.Command, " ") != "node /app/dist/harness/codex.js" {
		t.Fatalf("image/command = %q %v", req.Image, req.Command)
	}
	if req.LoginMode != "api_key" || req.WorkloadIdentity != nil {
		t.Fatalf("login mode %q identity %+v", req.LoginMode, req.WorkloadIdentity)
	}
	if got := envValue(req.Env, EnvCodexLoginMode); got != "api_key" {
		t.Fatalf("%s = %q, want api_key rendered from loginMode", EnvCodexLoginMode, got)
	}
	if len(req.Mounts) != 1 || req.Mounts[0] != (driver.WorkspaceMount{ClaimName: "agent-support-data", SubPath: "workspace", MountPath: "/sandbox/enterprise"}) {
		t.Fatalf("mounts = %+v", req.Mounts)
	}
	if req.Labels[driver.LabelRevision] != rf.RevisionID || req.Labels[driver.LabelAgent] != "agent_support" || req.Labels[driver.LabelNamespace] != "ns_acme" {
		t.Fatalf("labels = %v", req.Labels)
	}
	if len(req.CredentialAttachments) != 0 {
		t.Fatal("attachments must come from the Credential Gateway, not the file")
	}
	if src := rf.Sources(); len(src) != 1 || src[0].NamespaceID != "ns_acme" || src[0].CredentialGatewayID != "credential-gateway-openshell-development" {
		t.Fatalf("sources = %+v", src)
	}
	if sel := rf.HarnessSelector(); !strings.Contains(sel, driver.LabelRevision+"="+rf.RevisionID) {
		t.Fatalf("selector %q does not select the revision", sel)
	}

	oc, err := LoadRevisionFile(filepath.Join(revisionsDir, "openclaw.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	ocReq, err := oc.Requirements()
	if err != nil {
		t.Fatal(err)
	}
	if envValue(ocReq.Env, EnvCodexLoginMode) != "" {
		t.Fatal("OpenClaw must not receive the Codex login-mode variable")
	}
}

// Integers in the native configuration survive decoding exactly (no float rewrite).
func TestRevisionConfigurationKeepsNumbersExact(t *testing.T) {
	rf, err := ParseRevisionFile([]byte(strings.Replace(minimalRevision, "configuration: {}", "configuration: {maxTokens: 9007199254740993}", 1)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(rf.Configuration)
	if string(b) != `{"maxTokens":9007199254740993}` {
		t.Fatalf("configuration re-encoded as %s", b)
	}
}

// Each invalid example is refused with a message that names the key and the rule.
func TestInvalidRevisionFilesAreRefused(t *testing.T) {
	cases := map[string][]string{
		"unknown-key.yaml":             {`workload.imagePullPolicy (line 13, value "imagePullPolicy"): unknown key "imagePullPolicy" in workload`},
		"bad-revision-id.yaml":         {"revisionId (line", "rev_ followed by a nonzero hyphenated UUID"},
		"env-value-and-secret.yaml":    {`workload.env[0] (line 14, value "MODEL_KEY"): MODEL_KEY sets both value and secretKeyRef`},
		"mount-escapes.yaml":           {`workload.mounts[0].subPath (line 16, value "../other-agent")`, "workload.mounts[0].readOnly (missing in the block at line 15)"},
		"sources-without-api-key.yaml": {`workload.loginMode (line 14, value "chatgpt")`, "must use loginMode api_key"},
		"duplicate-key.yaml":           {"agentId (line", "the key appears more than once"},
		"wrong-kind.yaml":              {"kind (line", "kind: AgentRevision"},
		"bad-image.yaml":               {`workload.image (line 11, value "Registry.example/Runtime:latest")`, "not a valid image reference"},
	}
	for file, wants := range cases {
		t.Run(file, func(t *testing.T) {
			_, err := LoadRevisionFile(filepath.Join(revisionsDir, "invalid", file))
			if err == nil {
				t.Fatal("loaded; want a refusal")
			}
			for _, w := range wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if !strings.Contains(err.Error(), file) {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

// A Codex revision may not set its login-mode variable to something other than loginMode.
func TestCodexLoginModeEnvMustAgree(t *testing.T) {
	src := strings.Replace(minimalRevision, "  loginMode: api_key", "  env:\n    - {name: CODEX_LOGIN_MODE, value: chatgpt}\n  loginMode: api_key", 1)
	rf, err := ParseRevisionFile([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rf.Requirements(); err == nil || !strings.Contains(err.Error(), "CODEX_LOGIN_MODE") {
		t.Fatalf("err = %v, want a CODEX_LOGIN_MODE disagreement", err)
	}
}

const minimalRevision = `apiVersion: occ.openclaw.dev/v1alpha1
kind: AgentRevision
namespaceId: ns_acme
agentId: agent_support
revisionId: rev_3f2b9c4e-8d1a-4b6f-9e2d-1c0a7b5e4f31
sandboxDriverId: sandbox-openshell-development
harness: {id: codex, mode: dedicated}
configuration: {}
workload:
  image: runtime@sha256:4f2a0c1f9d6f8e1b7a3c5d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c
  command: [node]
  loginMode: api_key
`

func envValue(env []driver.EnvVar, name string) string {
	for _, e := range env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}
