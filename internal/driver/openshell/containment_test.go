package openshell

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/installation"
)

// seedNativeContainment is the SandboxDriver's rule for native OpenClaw provisioning, which
// every refusal of this kind must quote.
const seedNativeContainment = "It needs kubernetes.userNamespaces: false, at most one gateway.operatorWorkspaceResources ServiceAccount and the pinned Gateway's default identity, without UID/GID overrides; Agent save refuses dedicated OpenClaw otherwise."

func serviceAccountObject(name string) unstructured.Unstructured {
	return unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": name},
	}}
}

// An operator turns on user namespaces, or renders a workspace chart with a second
// ServiceAccount: native OpenClaw's subpath privatization would run as the wrong identity, so
// saving (configureAgent), workspace setup and render all refuse a dedicated OpenClaw revision,
// quoting the seed's rule, while dedicated Codex is unaffected.
func TestNativeOpenClawContainmentRefused(t *testing.T) {
	cases := []struct {
		name   string
		config func(*installation.SandboxConfiguration)
	}{
		{"userNamespaces true", func(c *installation.SandboxConfiguration) { c.Kubernetes.UserNamespaces = ptr(true) }},
		{"two workspace ServiceAccounts", func(c *installation.SandboxConfiguration) {
			c.Gateway.OperatorWorkspaceResources = append(c.Gateway.OperatorWorkspaceResources, serviceAccountObject("second-sandbox"))
		}},
	}
	oc := driver.Harness{ID: driver.HarnessOpenClaw, Mode: driver.HarnessModeDedicated}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newTestDriver(t, tc.config)
			check := func(step string, err error) {
				t.Helper()
				if err == nil {
					t.Errorf("%s accepted dedicated OpenClaw", step)
					return
				}
				if !strings.Contains(err.Error(), seedNativeContainment) {
					t.Errorf("%s refusal does not quote the native containment rule:\n%v", step, err)
				}
			}
			_, err := d.ConfigureAgent(mustConfig(t, `{}`), oc)
			check("configureAgent", err)
			check("validateWorkspaceSetup", d.ValidateWorkspaceSetup(mustConfig(t, `{}`), oc, WorkspaceSetup{Workspace: "/sandbox/enterprise", Files: []string{"AGENTS.md"}}))
			req, err := d.RenderCreateSandbox(openclawContext(testNamespace))
			if err == nil {
				t.Errorf("render accepted dedicated OpenClaw: user_namespaces %v", req.GetSpec().GetTemplate().UserNamespaces)
			} else {
				check("render", err)
			}

			// Codex's containment does not depend on the subpath privatization.
			if _, err := d.RenderCreateSandbox(codexContext(testNamespace)); err != nil {
				t.Errorf("dedicated Codex refused: %v", err)
			}
		})
	}
}

// A dedicated OpenClaw revision on the development Installation (userNamespaces: false, one
// ServiceAccount), or on one that omits userNamespaces, renders with user namespaces explicitly
// off: its containment never rests on the gateway's default.
func TestNativeOpenClawContainmentAccepted(t *testing.T) {
	for name, config := range map[string]func(*installation.SandboxConfiguration){
		"userNamespaces false":   nil,
		"userNamespaces omitted": func(c *installation.SandboxConfiguration) { c.Kubernetes.UserNamespaces = nil },
	} {
		d := newTestDriver(t, config)
		if _, err := d.ConfigureAgent(mustConfig(t, `{}`), driver.Harness{ID: driver.HarnessOpenClaw, Mode: driver.HarnessModeDedicated}); err != nil {
			t.Errorf("%s: configureAgent: %v", name, err)
		}
		req, err := d.RenderCreateSandbox(openclawContext(testNamespace))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if un := req.GetSpec().GetTemplate().UserNamespaces; un == nil || *un {
			t.Errorf("%s: user_namespaces = %v, want an explicit false", name, un)
		}
	}
}
