package k3d

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/openclaw/occ/internal/occdev/engine"
)

// desktopBridge is Docker's default bridge network: Docker Desktop gives the containers on it a
// resolver of its own, which forwards to the Mac's (or the PC's) resolvers, VPN ones included.
const desktopBridge = "bridge"

// bridgeProbeTimeout bounds reading the bridge's resolver, so a wedged engine cannot hold `up`
// before the cluster is created.
const bridgeProbeTimeout = 30 * time.Second

// bridgeResolver is the resolver the engine gives containers on network: the first nameserver
// a node can reach in /etc/resolv.conf of a throwaway container of image, which the engine
// removes when it exits. image is the node image, already in the engine: nothing is pulled.
func (p *Provider) bridgeResolver(ctx context.Context, image, network string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, bridgeProbeTimeout)
	defer cancel()
	res, err := p.engine.Verbs().RunOnce(ctx, engine.OneShot{Image: image, Network: network, Entrypoint: []string{"cat"}, Cmd: []string{"/etc/resolv.conf"}})
	if err != nil {
		return "", err
	}
	if res.ExitCode != 0 {
		return "", fmt.Errorf("cat /etc/resolv.conf exited with %d: %s", res.ExitCode, lastLine(res.Stderr+"\n"+res.Stdout))
	}
	var seen []string
	for _, s := range nameservers([]byte(res.Stdout)) {
		if a, ok := usableUpstream(s); ok {
			return a, nil
		}
		seen = append(seen, s)
	}
	return "", fmt.Errorf("its /etc/resolv.conf names no IPv4 server a node can reach%s", listed(seen))
}

// nodeDNS is the resolver the node gets: the request's, with Docker Desktop's bridge resolver
// read now. When it cannot be read the node keeps k3d's own handling, with a warning: the DNS
// check after creation then says whether that works.
func (p *Provider) nodeDNS(ctx context.Context, req *Request) (NodeDNS, error) {
	d := req.DNS
	if d.Choice != DNSDesktopBridge || d.Address != "" {
		return d, nil
	}
	image := req.NodeImage.DigestReference()
	req.Progress.Note("reading Docker Desktop's default-bridge DNS resolver from a throwaway container of " + image)
	addr, err := p.bridgeResolver(ctx, image, desktopBridge)
	if err != nil {
		if ctx.Err() != nil {
			return d, ctx.Err()
		}
		note := "Docker Desktop's default-bridge resolver could not be read (" + err.Error() + ")"
		req.Progress.Note("warning: " + note + "; the node keeps k3d's own DNS handling. If it cannot resolve names, set " + d.setting() + " to the IPv4 address of a DNS server the node can reach")
		return NodeDNS{Choice: DNSK3d, Note: note, Setting: d.Setting}, nil
	}
	d.Address = addr
	return d, nil
}

// lastLine is the last line a command printed, which says why it failed.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
