package k3d

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	k3dfixes "github.com/k3d-io/k3d/v5/pkg/types/fixes"

	"github.com/openclaw/occ/internal/fsutil"
	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/option"
)

// EnvDNSResolver selects the node's DNS resolver: auto (the default), k3d for k3d's own handling,
// or an IPv4 address.
const EnvDNSResolver = "OCC_DEVELOPMENT_K3D_DNS_RESOLVER"

// The words EnvDNSResolver takes besides an address.
const (
	// ResolverAuto lets occ choose by the kind of host (ChooseNodeDNS).
	ResolverAuto = "auto"
	// ResolverK3d keeps k3d's own DNS handling.
	ResolverK3d = "k3d"
)

// ResolverFile is the node's resolv.conf in the state directory, bind-mounted read-only over
// the node's /etc/resolv.conf when the node gets a resolver of occ's choosing.
const ResolverFile = "node-resolv.conf"

// DNSChoice says how the node's resolver was chosen.
type DNSChoice string

const (
	// DNSK3d is k3d's own handling: k3d points the node at its network's gateway and rewrites
	// Docker's DNS forwarding rules inside the node to match (k3d's DNS fix).
	DNSK3d DNSChoice = "k3d"
	// DNSGiven is an IPv4 address the user gave.
	DNSGiven DNSChoice = "given"
	// DNSHostUpstream is the automatic choice on Docker on Linux: the host's own first upstream
	// IPv4 resolver.
	DNSHostUpstream DNSChoice = "host-upstream"
	// DNSDesktopBridge is the automatic choice on Docker Desktop: the resolver Docker Desktop
	// gives containers on its default bridge network, read when the cluster is created.
	DNSDesktopBridge DNSChoice = "docker-desktop-bridge"
)

// NodeDNS is the node's DNS resolver as the plan decided it. The zero value is k3d's own
// handling.
type NodeDNS struct {
	Choice DNSChoice `json:"choice,omitempty"`
	// Address is the IPv4 address the node's resolv.conf names. It is empty for k3d's own
	// handling, and for Docker Desktop's bridge resolver until the cluster is created.
	Address string `json:"address,omitempty"`
	// From says in words where the choice came from (a setting, a file of the host).
	From string `json:"from,omitempty"`
	// Note says why the automatic choice kept k3d's own handling.
	Note string `json:"note,omitempty"`
	// Setting names the flag and variable that choose the resolver, for messages.
	Setting string `json:"setting,omitempty"`
}

// automatic says whether occ chose the resolver rather than the user.
func (d NodeDNS) automatic() bool { return d.Choice == DNSHostUpstream || d.Choice == DNSDesktopBridge }

// String describes the resolver and where it came from, for the dry run and messages.
func (d NodeDNS) String() string {
	switch d.Choice {
	case DNSGiven:
		return d.Address + " (given by " + d.setting() + ")"
	case DNSHostUpstream:
		return d.Address + ", this host's upstream resolver (auto: the first usable IPv4 nameserver of " + d.From + ")"
	case DNSDesktopBridge:
		if d.Address != "" {
			return d.Address + ", Docker Desktop's default-bridge resolver (auto)"
		}
		return "Docker Desktop's default-bridge resolver (auto: read from " + d.From + " when the cluster is created)"
	}
	if d.Note != "" {
		return "k3d's own DNS handling (auto: " + d.Note + ")"
	}
	return "k3d's own DNS handling (" + d.setting() + " is " + ResolverK3d + ")"
}

func (d NodeDNS) setting() string {
	if d.Setting != "" {
		return d.Setting
	}
	return EnvDNSResolver
}

// Host is what the automatic choice reads of the machine: the engine that will run the node, as
// it identified itself, and the host's own files.
type Host struct {
	// EngineKind is docker or podman; empty when no engine answered while planning.
	EngineKind engine.Kind
	// EnginePlatform is the platform name the engine reports with its version ("Docker Desktop
	// 4.37.1 (178610)" on Docker Desktop).
	EnginePlatform string
	// OS is the host's operating system, as runtime.GOOS names it.
	OS string
	// Files is the host's root file system, where /etc/resolv.conf is read.
	Files fs.FS
}

// ThisHost is the machine occ runs on with the engine that answered while planning.
func ThisHost(engineKind engine.Kind, enginePlatform string) Host {
	return Host{EngineKind: engineKind, EnginePlatform: enginePlatform, OS: runtime.GOOS, Files: os.DirFS("/")}
}

// dockerDesktop says whether the engine is Docker Desktop's, which names itself so in the
// platform of its version (its `docker info` says "Docker Desktop" as the operating system).
func (h Host) dockerDesktop() bool { return strings.HasPrefix(h.EnginePlatform, "Docker Desktop") }

// ChooseNodeDNS applies the rule of EnvDNSResolver (setting names it in errors) on host: auto
// (or nothing) chooses by the kind of host, k3d keeps k3d's own handling, and any other value must
// be an IPv4 address in dotted decimal that a node can send queries to (not loopback, which
// inside the node is the node itself, and not unspecified, multicast or broadcast).
//
// The automatic choice: k3d's own handling points the node at its network's gateway and rewrites
// Docker's DNS forwarding rules inside the node, which the node reads with legacy iptables; on a
// Docker host whose rules are written with iptables-nft the node finds none to rewrite and its
// queries are refused, and Docker Desktop's gateway drops them. So Docker on Linux gives the node
// the host's own upstream resolver, and Docker Desktop the resolver it gives containers on its
// default bridge (the host's own resolvers may answer only the host, a VPN's for example).
// Podman's networks answer DNS at their gateway themselves, and other engines (OrbStack,
// Colima) handle it their own way: both keep k3d's handling.
func ChooseNodeDNS(setting, raw string, host Host) (NodeDNS, error) {
	v := strings.TrimSpace(raw)
	switch v {
	case ResolverK3d:
		return NodeDNS{Choice: DNSK3d, Setting: setting}, nil
	case "", ResolverAuto:
		d := autoNodeDNS(host)
		d.Setting = setting
		return d, nil
	}
	addr, err := parseResolver(setting, raw)
	if err != nil {
		return NodeDNS{}, err
	}
	return NodeDNS{Choice: DNSGiven, Address: addr, From: setting, Setting: setting}, nil
}

func autoNodeDNS(h Host) NodeDNS {
	keep := func(note string) NodeDNS { return NodeDNS{Choice: DNSK3d, Note: note} }
	switch {
	case h.EngineKind != "" && h.EngineKind.Registration().K3dPodman:
		return keep("the engine is Podman, whose networks answer DNS at their gateway")
	case h.EngineKind == "":
		return keep("no engine answered while planning, so the kind of host is not known")
	case h.dockerDesktop():
		return NodeDNS{Choice: DNSDesktopBridge, From: "a throwaway container of the node image on Docker Desktop's default bridge network"}
	case h.OS != "linux":
		return keep("Docker on " + h.OS + " that is not Docker Desktop (OrbStack, Colima and others handle the node's DNS themselves)")
	}
	addr, from, why := hostUpstream(h.Files)
	if addr == "" {
		return keep(why)
	}
	return NodeDNS{Choice: DNSHostUpstream, Address: addr, From: from}
}

// systemd-resolved's stub listeners: a host whose /etc/resolv.conf names one keeps its real
// upstream servers in resolvedUpstreams.
var resolvedStubs = []string{"127.0.0.53", "127.0.0.54"}

const (
	hostResolvConf    = "etc/resolv.conf"
	resolvedUpstreams = "run/systemd/resolve/resolv.conf"
)

// hostUpstream is the host's first upstream resolver a node can reach, the file it came from,
// or why there is none. /etc/resolv.conf is read in order, as the host's own lookups use it; a
// systemd-resolved stub there stands for the upstream servers resolved keeps in
// /run/systemd/resolve/resolv.conf.
func hostUpstream(files fs.FS) (addr, from, why string) {
	data, err := fs.ReadFile(files, hostResolvConf)
	if err != nil {
		return "", "", "cannot read /" + hostResolvConf + " (" + err.Error() + ")"
	}
	var skipped []string
	for _, s := range nameservers(data) {
		if a, ok := usableUpstream(s); ok {
			return a, "/" + hostResolvConf, ""
		}
		if !isResolvedStub(s) {
			skipped = append(skipped, s)
			continue
		}
		up, err := fs.ReadFile(files, resolvedUpstreams)
		if err != nil {
			return "", "", "/" + hostResolvConf + " names systemd-resolved's stub " + s + ", and /" + resolvedUpstreams + " cannot be read (" + err.Error() + ")"
		}
		var others []string
		for _, u := range nameservers(up) {
			if a, ok := usableUpstream(u); ok {
				return a, "/" + resolvedUpstreams + " (systemd-resolved's upstream servers; /" + hostResolvConf + " names its stub " + s + ")", ""
			}
			others = append(others, u)
		}
		return "", "", "/" + hostResolvConf + " names systemd-resolved's stub " + s + ", and /" + resolvedUpstreams + " names no IPv4 server a node can reach" + listed(others)
	}
	return "", "", "/" + hostResolvConf + " names no IPv4 server a node can reach" + listed(skipped)
}

func listed(servers []string) string {
	if len(servers) == 0 {
		return " (no nameserver at all)"
	}
	return " (only " + strings.Join(servers, ", ") + ")"
}

func isResolvedStub(s string) bool {
	for _, stub := range resolvedStubs {
		if s == stub {
			return true
		}
	}
	return false
}

// nameservers are the addresses of a resolv.conf's nameserver lines, in order: the first word
// after the keyword (what follows it, a comment for example, is not part of it). Lines that are
// comments (# or ;) and other keywords (search, options) name none.
func nameservers(data []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "nameserver" {
			out = append(out, f[1])
		}
	}
	return out
}

// usableUpstream says whether the node can send queries to a host's nameserver s: an IPv4
// global unicast address. Loopback is the node itself inside the node, and a link-local address
// is on a link of the host's the node is not on; the node's resolv.conf names IPv4 servers only,
// as k3s's own network is IPv4.
func usableUpstream(s string) (string, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		return "", false
	}
	a = a.Unmap()
	if !a.Is4() || !a.IsGlobalUnicast() {
		return "", false
	}
	return a.String(), true
}

// check applies the rules of a decided NodeDNS (Request.Check): a choice occ makes, with an
// address in its canonical form wherever the choice needs one.
func (d NodeDNS) check() error {
	bad := func(value, rule string) error {
		return requestError("DNS resolver", value, rule, "pass the NodeDNS that ChooseNodeDNS returns")
	}
	switch d.Choice {
	case "", DNSK3d:
		if d.Address != "" {
			return bad(d.Address, "is set while the node keeps k3d's own DNS handling")
		}
		return nil
	case DNSDesktopBridge:
		if d.Address == "" {
			return nil // read when the cluster is created
		}
	case DNSGiven, DNSHostUpstream:
	default:
		return bad(string(d.Choice), "is not a way occ chooses the node's resolver")
	}
	v, err := parseResolver("k3d cluster DNS resolver", d.Address)
	if err != nil {
		return err
	}
	if v != d.Address {
		return bad(d.Address, "is not an IPv4 address in its canonical form")
	}
	return nil
}

// parseResolver applies the address rule of EnvDNSResolver (opt names it in errors).
func parseResolver(opt, raw string) (string, error) {
	bad := func(rule string) error {
		return &option.Error{Option: opt, Value: raw, Rule: rule,
			Fix: "give the IPv4 address of a DNS server the cluster's node can reach (the VPN's resolver, for example), " + ResolverAuto + " for occ's choice, or " + ResolverK3d + " for k3d's own DNS handling"}
	}
	addr, err := netip.ParseAddr(strings.TrimSpace(raw))
	switch {
	case err != nil || !addr.Is4():
		return "", bad("is not an IPv4 address in dotted decimal (or " + ResolverAuto + " or " + ResolverK3d + ")")
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

// resolverFileMode is the node's resolv.conf's mode: the node reads it through a bind mount.
const resolverFileMode = 0o644

// writeResolvConf writes the node's resolv.conf into the state directory and returns its path. It
// is 0644 because the node reads it through a bind mount; the state directory stays 0700.
func writeResolvConf(stateDir, resolver string) (string, error) {
	p := filepath.Join(stateDir, ResolverFile)
	if err := fsutil.WriteFileAtomic(p, resolvConf(resolver), resolverFileMode); err != nil {
		return "", fmt.Errorf("write the node's resolv.conf: %w", err)
	}
	return p, nil
}

// fixDNSEnv is k3d's DNS fix setting for one creation. A resolver of occ's turns the fix off (k3d
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
