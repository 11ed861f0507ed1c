package openshell

import (
	"os"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/compute"
	"github.com/openclaw/occ/internal/installation"
)

// An operator writes a network rule OpenShell cannot enforce as meant (the port inside the
// host, an empty port list, no endpoint, a binary by relative name); render refuses it offline,
// naming the rule and the fix, instead of the gateway finding out later.
func TestRenderRefusesUnenforceableNetworkRules(t *testing.T) {
	cases := []struct {
		name   string
		config func(*installation.SandboxConfiguration)
		want   string
	}{
		{"host with a port", func(c *installation.SandboxConfiguration) {
			c.Policy.NetworkPolicies[0].Endpoints[0].Host = "github.com:443"
		},
			"OpenShell network policy source-control endpoint host must be a bare host name"},
		{"empty port list", func(c *installation.SandboxConfiguration) { c.Policy.NetworkPolicies[0].Endpoints[0].Ports = []int{} },
			"OpenShell network policy source-control endpoint needs at least one port"},
		{"no endpoints", func(c *installation.SandboxConfiguration) { c.Policy.NetworkPolicies[0].Endpoints = nil },
			"OpenShell network policy source-control requires at least one endpoint"},
		{"relative binary", func(c *installation.SandboxConfiguration) { c.Policy.NetworkPolicies[0].Binaries[0].Path = "git" },
			"OpenShell network policy source-control binary path must be an exact absolute path"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newTestDriver(t, tc.config)
			req, err := d.RenderCreateSandbox(codexContext(testNamespace))
			if err == nil {
				t.Fatalf("rendered: %v", req.GetSpec().GetPolicy().GetNetworkPolicies()["source-control"])
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error %q\nwant prefix %q", err, tc.want)
			}
		})
	}
}

// A revision binds a credential source held by another Credential Gateway. Compute's offline
// plan (which both render and provision run before the namespace step) refuses it: this Backend
// would never issue that attachment.
func TestPlanRefusesForeignCredentialGateway(t *testing.T) {
	data, err := os.ReadFile("../../../testdata/revisions/codex.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := strings.Replace(string(data), "credentialGatewayId: credential-gateway-openshell-development", "credentialGatewayId: credential-gateway-elsewhere", 1)
	rf, err := compute.ParseRevisionFile([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	d := newTestDriver(t, nil)
	plan, err := (&compute.Compute{Driver: d}).PlanRevision(rf)
	if err == nil {
		t.Fatalf("planned sources %+v", plan.Sources)
	}
	for _, want := range []string{"credential-gateway-elsewhere", "credential-gateway-openshell-development", "credentialSources[0].credentialGatewayId"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}

// A Codex revision with one malformed APP_TOKEN_SHA is told what is wrong in plain English.
func TestAppTokenSHAMessageGrammar(t *testing.T) {
	d := newTestDriver(t, nil)
	h := codexContext(testNamespace)
	setEnv(&h, "APP_TOKEN_SHA", driver.EnvVar{Value: "not-hex"})
	_, err := d.RenderCreateSandbox(h)
	if err == nil {
		t.Fatal("accepted")
	}
	if strings.Contains(err.Error(), "1 entries") {
		t.Errorf("ungrammatical count: %v", err)
	}
	if !strings.Contains(err.Error(), "found 1 entry") {
		t.Errorf("error does not say it found 1 entry: %v", err)
	}
}
