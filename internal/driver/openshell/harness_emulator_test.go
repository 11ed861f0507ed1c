package openshell

import (
	"net"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/driver"
)

// A provisioned Codex revision is reached at its Sandbox's bearer-passthrough service: the
// advertised origin becomes a ws:// URL on the port the client reaches the gateway on, and the
// workspace root is the configured data mount. Before provisioning there is nothing to reach,
// and a revision asking for another app-server port is not served by this service.
func TestHarnessEndpointCodexOnEmulator(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.driver(nil)
	e.prepare(d)
	h := e.attach(d, e.hctx(driver.HarnessCodex))

	if _, err := d.HarnessEndpoint(e.ctx, h); err == nil || !strings.Contains(err.Error(), "has no Harness service; provision the revision first") {
		t.Fatalf("before provisioning: %v", err)
	}
	ref, err := d.ProvisionHarness(e.ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	e.gw.Journal().Reset()
	ep, err := d.HarnessEndpoint(e.ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := WorkspaceName(e.ns.Name)
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(e.gw.Addr())
	host := ws + "--" + ref.ResourceName + ".openshell.localhost:" + port
	want := HarnessEndpoint{URL: "ws://" + host + "/", Origin: "http://" + host + "/", WorkspaceRoot: "/sandbox/enterprise"}
	if *ep != want {
		t.Fatalf("endpoint %+v, want %+v", *ep, want)
	}
	if d.DataMountPath() != want.WorkspaceRoot {
		t.Fatalf("fixture data mount %q", d.DataMountPath())
	}
	if got := e.methods(); len(got) != 1 || got[0] != "GetService" {
		t.Fatalf("HarnessEndpoint made calls %v, want one GetService", got)
	}
	if len(e.mutations()) != 0 {
		t.Fatalf("HarnessEndpoint mutated the gateway: %+v", e.mutations())
	}

	other := h
	other.Requirements.Env = append([]driver.EnvVar(nil), h.Requirements.Env...)
	for i := range other.Requirements.Env {
		if other.Requirements.Env[i].Name == envAppServerPort {
			other.Requirements.Env[i].Value = "4501"
		}
	}
	if _, err := d.HarnessEndpoint(e.ctx, other); err == nil || !strings.Contains(err.Error(), "without its exact bearer-passthrough Harness service") {
		t.Fatalf("port mismatch: %v", err)
	}
}

// Native OpenClaw connects outbound: its answer is an outbound endpoint, typed rather than an
// error, and the gateway is not asked.
func TestHarnessEndpointOpenClawOnEmulator(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.driver(nil)
	e.prepare(d)
	h := e.attach(d, e.hctx(driver.HarnessOpenClaw))
	if _, err := d.ProvisionHarness(e.ctx, h); err != nil {
		t.Fatal(err)
	}
	e.gw.Journal().Reset()
	ep, err := d.HarnessEndpoint(e.ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	if *ep != (HarnessEndpoint{Outbound: true}) {
		t.Fatalf("endpoint %+v", *ep)
	}
	if got := e.methods(); len(got) != 0 {
		t.Fatalf("HarnessEndpoint called the gateway for OpenClaw: %v", got)
	}
}
