package k3d

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	k3dconfig "github.com/k3d-io/k3d/v5/pkg/config"
	k3druntimes "github.com/k3d-io/k3d/v5/pkg/runtimes"
	k3dfixes "github.com/k3d-io/k3d/v5/pkg/types/fixes"

	"github.com/openclaw/occ/internal/occdev/option"
)

// A developer on a VPN names the resolver the node must use: an IPv4 address is taken in its
// canonical form, "k3d" and nothing keep k3d's own DNS handling, and anything else is refused
// naming the variable, the value, the rule and the fix.
func TestParseDNSResolver(t *testing.T) {
	for raw, want := range map[string]string{"": "", "k3d": "", "10.64.0.53": "10.64.0.53", " 192.168.1.1 ": "192.168.1.1"} {
		got, err := ParseDNSResolver(EnvDNSResolver, raw)
		if err != nil || got != want {
			t.Errorf("ParseDNSResolver(%q) = %q, %v; want %q", raw, got, err, want)
		}
	}
	for raw, rule := range map[string]string{
		"dns.corp.example": "is not an IPv4 address",
		"fd00::53":         "is not an IPv4 address",
		"10.0.0.053":       "is not an IPv4 address",
		"127.0.0.53":       "is a loopback address",
		"0.0.0.0":          "is not a unicast address",
		"224.0.0.251":      "is not a unicast address",
		"255.255.255.255":  "is not a unicast address",
		"K3D":              "is not an IPv4 address",
	} {
		_, err := ParseDNSResolver(EnvDNSResolver, raw)
		oe, ok := err.(*option.Error)
		if !ok || oe.Option != EnvDNSResolver || oe.Value != raw || !strings.Contains(oe.Rule, rule) || !strings.Contains(oe.Fix, "k3d") {
			t.Errorf("ParseDNSResolver(%q) = %v; want an option error with rule %q", raw, err, rule)
		}
	}
}

// With a resolver, the node gets the state directory's resolv.conf read-only over its own, and
// k3d's DNS fix is turned off for that creation (k3d refuses the mount with the fix on); without
// one, the setting the process started with is restored and nothing is mounted. k3d's memo of
// its fixes is dropped, so a second creation in the same process decides anew.
func TestDNSResolverMountAndFix(t *testing.T) {
	r := testRequest(t)
	r.DNSResolver = "10.64.0.53"
	if err := r.validate(); err != nil {
		t.Fatal(err)
	}
	p, err := writeResolvConf(r.StateDir, r.DNSResolver)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	fi, _ := os.Stat(p)
	if err != nil || !strings.Contains(string(data), "\nnameserver 10.64.0.53\n") || fi.Mode().Perm() != 0o644 {
		t.Fatalf("%s: %q (%v), mode %v", p, data, err, fi.Mode())
	}
	sc := r.simpleConfig("/tmp/admission.yaml", p)
	cc, err := k3dconfig.TransformSimpleToClusterConfig(context.Background(), k3druntimes.Docker, sc, "")
	if err != nil {
		t.Fatal(err)
	}
	if want := p + ":/etc/resolv.conf:ro"; !slices.Contains(cc.Cluster.Nodes[0].Volumes, want) {
		t.Errorf("server volumes %q lack %q", cc.Cluster.Nodes[0].Volumes, want)
	}
	if v := fixDNSEnv("10.64.0.53"); v.Name != "K3D_FIX_DNS" || v.Value != "false" || v.Unset {
		t.Errorf("fix setting with a resolver = %v", v)
	}
	if v := fixDNSEnv(""); v.Name != "K3D_FIX_DNS" || (startFixDNSSet && v.Value != startFixDNS) || (!startFixDNSSet && !v.Unset) {
		t.Errorf("fix setting without a resolver = %v (started with %q, set %v)", v, startFixDNS, startFixDNSSet)
	}
	k3dfixes.EnabledFixes = map[k3dfixes.K3DFixEnv]bool{k3dfixes.EnvFixDNS: true}
	forgetK3dFixes()
	if k3dfixes.EnabledFixes != nil {
		t.Error("k3d's memo of its fixes was kept")
	}
	if d := strings.Join(r.Describe(), "\n"); !strings.Contains(d, "node-resolv.conf") || !strings.Contains(d, "nameserver 10.64.0.53") {
		t.Errorf("the dry run does not describe the resolver:\n%s", d)
	}
	r.DNSResolver = "127.0.0.1"
	if err := r.Check(); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("Check accepted a loopback resolver: %v", err)
	}
}
