package k3d

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	k3dfixes "github.com/k3d-io/k3d/v5/pkg/types/fixes"

	"github.com/openclaw/occ/internal/fsutil"
	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/option"
)

// EnvDNSResolver selects the node's DNS resolver: an IPv4 address, or "k3d" for k3d's own
// handling (the default).
const EnvDNSResolver = "OCC_DEVELOPMENT_K3D_DNS_RESOLVER"

// ResolverK3d is the EnvDNSResolver value that keeps k3d's own DNS handling.
const ResolverK3d = "k3d"

// ResolverFile is the node's resolv.conf in the state directory, bind-mounted read-only over
// the node's /etc/resolv.conf when a resolver is chosen.
const ResolverFile = "node-resolv.conf"

// ParseDNSResolver applies the rule of EnvDNSResolver (named opt in errors): empty or "k3d" keep
// k3d's own DNS handling and return ""; otherwise the value must be an IPv4 address in dotted
// decimal that a node can send queries to (not loopback, which inside the node is the node
// itself, and not unspecified, multicast or broadcast).
func ParseDNSResolver(opt, raw string) (string, error) {
	v := strings.TrimSpace(raw)
	if v == "" || v == ResolverK3d {
		return "", nil
	}
	bad := func(rule string) error {
		return &option.Error{Option: opt, Value: raw, Rule: rule,
			Fix: "give the IPv4 address of a DNS server the cluster's node can reach (the VPN's resolver, for example), or " + ResolverK3d + " for k3d's own DNS handling"}
	}
	addr, err := netip.ParseAddr(v)
	switch {
	case err != nil || !addr.Is4():
		return "", bad("is not an IPv4 address in dotted decimal (or " + ResolverK3d + ")")
	case addr.IsLoopback():
		return "", bad("is a loopback address, which inside the node is the node itself")
	case addr.IsUnspecified(), addr.IsMulticast(), addr == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "", bad("is not a unicast address")
	}
	return addr.String(), nil
}

// resolvConf is the node's resolv.conf for resolver.
func resolvConf(resolver string) []byte {
	return []byte("# Written by occ dev up: the node's DNS resolver (" + EnvDNSResolver + ").\nnameserver " + resolver + "\n")
}

// writeResolvConf writes the node's resolv.conf into the state directory and returns its path. It
// is 0644 because the node reads it through a bind mount; the state directory stays 0700.
func writeResolvConf(stateDir, resolver string) (string, error) {
	p := filepath.Join(stateDir, ResolverFile)
	if err := fsutil.WriteFileAtomic(p, resolvConf(resolver), 0o644); err != nil {
		return "", fmt.Errorf("write the node's resolv.conf: %w", err)
	}
	return p, nil
}

// fixDNSEnv is k3d's DNS fix setting for one creation. A chosen resolver turns the fix off (k3d
// refuses a node with its own /etc/resolv.conf mount while the fix is on); otherwise the
// setting the process started with is restored, so k3d decides as it would by itself.
func fixDNSEnv(resolver string) docker.EnvVar {
	name := string(k3dfixes.EnvFixDNS)
	if resolver != "" {
		return docker.EnvVar{Name: name, Value: "false"}
	}
	if startFixDNSSet {
		return docker.EnvVar{Name: name, Value: startFixDNS}
	}
	return docker.EnvVar{Name: name, Unset: true}
}

// The DNS fix setting of the environment occ started in.
var startFixDNS, startFixDNSSet = os.LookupEnv(string(k3dfixes.EnvFixDNS))

// forgetK3dFixes drops k3d's process-wide memo of which fixes are on, which k3d computes once
// from the environment: each creation decides its DNS fix anew. The caller holds k3dMu.
func forgetK3dFixes() { k3dfixes.EnabledFixes = nil }
