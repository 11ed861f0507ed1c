package profile_test

import (
	"net/netip"
	"testing"

	"github.com/openclaw/occ/internal/occdev/profile"
)

func TestSubnet(t *testing.T) {
	def := netip.MustParsePrefix("172.30.41.0/24")
	p := netip.MustParsePrefix
	for _, c := range []struct {
		name, env string
		taken     []netip.Prefix
		want      string
	}{
		{"the default environment keeps the default, even when taken", "default", []netip.Prefix{def}, "172.30.41.0/24"},
		{"an unnamed one is the default", "", nil, "172.30.41.0/24"},
		{"a named one never takes the default", "feature-x", nil, "172.30.42.0/24"},
		{"nor a subnet a network or the host uses", "feature-x", []netip.Prefix{p("172.30.42.0/24"), p("172.30.43.7/32"), p("172.30.44.0/23")}, "172.30.46.0/24"},
		{"wrapping around the /16", "feature-x", []netip.Prefix{p("172.30.42.0/23"), p("172.30.44.0/22"), p("172.30.48.0/20"), p("172.30.64.0/18"), p("172.30.128.0/17")}, "172.30.0.0/24"},
	} {
		got, err := profile.Subnet(profile.Input{Environment: c.env}, def, func() ([]netip.Prefix, error) { return c.taken, nil })
		if err != nil || got.String() != c.want {
			t.Errorf("%s: got %v (%v), want %s", c.name, got, err, c.want)
		}
	}
	if got, err := profile.Subnet(profile.Input{Environment: "feature-x"}, def, func() ([]netip.Prefix, error) { return []netip.Prefix{p("172.30.0.0/16")}, nil }); err == nil {
		t.Errorf("a /16 all taken gave %v, want an error", got)
	}
}
