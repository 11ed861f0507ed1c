package profile

import (
	"fmt"
	"net/netip"

	"github.com/openclaw/occ/internal/occdev/state"
)

// Subnet is the subnet of a control plane's engine network when it was not given: the default
// environment keeps def (what occ and OCE's Compose files have always used), and any other
// environment takes the first /24 of def's /16 after def that overlaps none of the subnets taken
// returns (the engine's networks and the host's addresses now), so environments side by side
// never ask the engine for the same subnet. Another network could take it before it is created; the engine
// then refuses it and `up` rolls back.
func Subnet(in Input, def netip.Prefix, taken func() ([]netip.Prefix, error)) (netip.Prefix, error) {
	if in.Environment == "" || in.Environment == state.DefaultEnvironment {
		return def, nil
	}
	used, err := taken()
	if err != nil {
		return netip.Prefix{}, err
	}
	base := def.Masked().Addr().As4()
	for i := 1; i < 256; i++ {
		b := base
		b[2] += byte(i)
		p := netip.PrefixFrom(netip.AddrFrom4(b), 24)
		free := true
		for _, u := range used {
			if u.Overlaps(p) {
				free = false
				break
			}
		}
		if free {
			return p, nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("find a /24 in %s other than %s that no network of the engine or address of the host uses: none is free", netip.PrefixFrom(def.Addr(), 16).Masked(), def)
}
