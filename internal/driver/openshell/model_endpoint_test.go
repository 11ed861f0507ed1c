package openshell

import (
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/installation"
)

// An operator writes a network rule for the model endpoint directly or through a wildcard: the
// credential provider's profile already allows api.openai.com with TLS inspection, so render
// refuses both with the same rule validate uses, before any request is built.
func TestRenderRefusesRulesCoveringTheModelEndpoint(t *testing.T) {
	for _, host := range []string{"api.openai.com", "*.openai.com", "*.com"} {
		d := newTestDriver(t, func(c *installation.SandboxConfiguration) {
			c.Policy.NetworkPolicies[0].Endpoints[0].Host = host
		})
		_, err := d.RenderCreateSandbox(codexContext(testNamespace))
		if err == nil || !strings.Contains(err.Error(), "Do not add a policy for the model endpoint") {
			t.Errorf("render with host %s: %v", host, err)
		}
	}
}
