package k3d

import (
	"context"
	"os"
)

// BridgeResolver is p's reading of the resolver a network's containers get, for the bed's tests.
func BridgeResolver(ctx context.Context, p *Provider, image, network string) (string, error) {
	return p.bridgeResolver(ctx, image, network)
}

// HostUpstream is this machine's upstream resolver, as the automatic choice reads it.
func HostUpstream() string {
	addr, _, _ := hostUpstream(os.DirFS("/"))
	return addr
}
