package openshell

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/gateway/openshellv1"
)

// A new Codex revision meets a Workspace where something with one of its names already exists
// and is not its own, while the runtime profile and provider it needs are still missing: the
// refusal comes before the first mutation, so the gateway journal shows no import, no create.
// (Reading everything first is also what lets the reads run concurrently.)
func TestProvisionRefusalsPrecedeEveryMutation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		plant  func(e *env, p *provisionPlan)
		prefix func(p *provisionPlan) string
	}{
		{
			name: "foreign Sandbox",
			plant: func(e *env, p *provisionPlan) {
				foreign := p.gatewayRequest()
				foreign.Spec = proto.Clone(foreign.Spec).(*openshellv1.SandboxSpec)
				foreign.Spec.Template.Image = "attacker/image:latest"
				// Only the credential provider exists yet, so that is all it may name.
				foreign.Spec.Providers = []string{CredentialProviderName("cs_openai_default")}
				if _, err := e.client.CreateSandbox(e.ctx, foreign); err != nil {
					e.t.Fatal(err)
				}
			},
			prefix: func(p *provisionPlan) string {
				return "Refusing OpenShell Sandbox " + p.name + " without exact AgentRevision ownership and content."
			},
		},
		{
			name: "foreign runtime provider",
			plant: func(e *env, p *provisionPlan) {
				foreign := p.runtime.spec
				foreign.Config = map[string]string{"runtime_json": `{"kind":"codex","selections":["other"]}`, "config_toml": "model = \"other\"\n"}
				if _, err := e.client.CreateProvider(e.ctx, e.ns.Name, foreign); err != nil {
					e.t.Fatal(err)
				}
			},
			prefix: func(p *provisionPlan) string {
				return "Refusing OpenShell provider " + p.runtime.spec.Name + " without exact AgentRevision ownership and content."
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{})
			d := e.driver(nil)
			e.prepare(d)
			h := e.attach(d, e.hctx(driver.HarnessCodex))
			p, err := d.plan(h)
			if err != nil {
				t.Fatal(err)
			}
			tc.plant(e, p)
			e.gw.Journal().Reset()
			_, err = d.ProvisionHarness(e.ctx, h)
			if err == nil || !strings.HasPrefix(err.Error(), tc.prefix(p)) {
				t.Fatalf("err = %v, want %q", err, tc.prefix(p))
			}
			if m := e.mutationMethods(); len(m) != 0 {
				t.Fatalf("mutations before the refusal: %v (calls %v)", m, e.methods())
			}
		})
	}
}
