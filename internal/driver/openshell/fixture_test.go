package openshell

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/installation"
)

// Identifiers of the fixture revision.
const (
	testDriverID    = "sandbox-openshell-development"
	testCGID        = "credential-gateway-openshell-development"
	testNamespaceID = "ns_acme"
	testAgentID     = "agent_support"
	testRevisionID  = "rev_3f2b9c4e-8d1a-4b6f-9e2d-1c0a7b5e4f31"
	testClaim       = "agent-support-data"
	testAppTokenSHA = "9b74c9897bac770ffc029102a200c5de3c7e5b5b3c9f1e2d4a6b8c0d1e2f3a4b"
)

// loadInstallation reads the development Installation fixture through the real loader, so the
// driver is always tested with a configuration that passed package installation's validation.
func loadInstallation(t testing.TB) *installation.Installation {
	t.Helper()
	in, err := installation.Load("../../../testdata/installation/dev.yaml")
	if err != nil {
		t.Fatalf("load dev Installation: %v", err)
	}
	// The fixture waits 30 s after creation for the pinned gateway; tests do not.
	in.Drivers.Sandbox.Configuration.StartupDelayMs = nil
	return in
}

// testOptions returns driver options for the fixture; mutate adjusts the configuration.
func testOptions(t testing.TB, mutate func(*installation.SandboxConfiguration)) Options {
	t.Helper()
	in := loadInstallation(t)
	cfg := in.Drivers.Sandbox.Configuration
	if mutate != nil {
		mutate(&cfg)
	}
	return Options{ID: in.SandboxDriverID(), Config: cfg, Backend: in.OpenShellBackend()}
}

func newTestDriver(t testing.TB, mutate func(*installation.SandboxConfiguration)) *Driver {
	t.Helper()
	d, err := New(testOptions(t, mutate))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return d
}

// codexContext is a valid dedicated Codex revision in namespace nsName, the shape Kubernetes
// Compute derives (see testdata/revisions/codex.yaml).
func codexContext(nsName string) driver.HarnessContext {
	return driver.HarnessContext{
		NamespaceContext: driver.NamespaceContext{Namespace: driver.Namespace{ID: testNamespaceID, Name: nsName}},
		Revision: driver.Revision{
			AgentID: testAgentID, ID: testRevisionID, NamespaceID: testNamespaceID,
			Harness:         driver.Harness{ID: driver.HarnessCodex, Mode: driver.HarnessModeDedicated},
			SandboxDriverID: testDriverID,
		},
		Requirements: driver.HarnessWorkloadRequirements{
			Image:   "openclaw-enterprise-runtime@sha256:4f2a0c1f9d6f8e1b7a3c5d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c",
			Command: []string{"node", "/app/dist/harness/codex.js"},
			Env: []driver.EnvVar{
				{Name: "APP_SERVER_PORT", Value: "4500"},
				{Name: "APP_TOKEN_SHA", Value: testAppTokenSHA},
				{Name: "CODEX_HOME", Value: "/home/node/.codex"},
				{Name: "OPENCLAW_PLUGIN_RUNTIME_MANIFEST", Value: `{"kind":"codex","selections":[]}`},
				{Name: "OPENCLAW_PLUGIN_CODEX_CONFIG_TOML", Value: "model = \"gpt-5\"\n"},
			},
			Mounts:    []driver.WorkspaceMount{{ClaimName: testClaim, SubPath: "workspace", MountPath: "/home/node/workspace"}},
			LoginMode: "api_key",
			CredentialAttachments: []driver.CredentialAttachment{
				{SourceID: "cs_openai_default", Ref: CredentialProviderName("cs_openai_default")},
			},
			Labels: map[string]string{
				driver.LabelManagedBy:      driver.ManagedByValue,
				driver.LabelNamespace:      testNamespaceID,
				driver.LabelAgent:          testAgentID,
				driver.LabelRevision:       testRevisionID,
				driver.LabelNetworkProfile: driver.NetworkProfileProviderFenced,
			},
		},
	}
}

// openclawContext is the native OpenClaw variant: no app-server, no exposure.
func openclawContext(nsName string) driver.HarnessContext {
	h := codexContext(nsName)
	h.Revision.Harness.ID = driver.HarnessOpenClaw
	h.Requirements.Env = []driver.EnvVar{{Name: "OPENCLAW_STATE_DIR", Value: "/home/node/.openclaw"}}
	h.Requirements.LoginMode = ""
	return h
}

func mustQuantities(t testing.TB, m map[string]string) corev1.ResourceList {
	t.Helper()
	out := corev1.ResourceList{}
	for k, v := range m {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			t.Fatal(err)
		}
		out[corev1.ResourceName(k)] = q
	}
	return out
}
