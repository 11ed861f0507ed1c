package profile

import (
	"fmt"
	"net"
	"slices"

	"github.com/openclaw/occ/internal/occdev/state"
)

// HostPort is the loopback port of a control plane's host port that was not given: the default
// environment keeps def (what occ and OCE's Compose files have always used, so an engineer's
// bookmarks and scripts keep working), and any other environment takes a port free now, never
// def nor one of avoid, so environments side by side never publish on the same port. Another
// process could take a free port before it is published; the profile's preflight or Compose
// then refuses it and `up` rolls back.
func HostPort(in Input, def int, avoid ...int) (int, error) {
	if in.Environment == "" || in.Environment == state.DefaultEnvironment {
		return def, nil
	}
	for range 16 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("find a free port on 127.0.0.1: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if port != def && !slices.Contains(avoid, port) {
			return port, nil
		}
	}
	return 0, fmt.Errorf("find a free port on 127.0.0.1 other than %d and %v: none found in 16 tries", def, avoid)
}
