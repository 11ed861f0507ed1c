package k3d

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"strings"
	"time"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/pins"
)

// lookupNamePattern is a DNS host name: dot-separated labels of letters, digits and '-', with a
// letter somewhere (an IPv4 address is no name).
var lookupNamePattern = regexp.MustCompile(`^(?i)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$`)

// dockerHubHost is the host Docker Hub's images are pulled from: "docker.io" in a reference
// names the registry, not a host that serves it.
const dockerHubHost = "registry-1.docker.io"

// LookupName is the host name the node's DNS check looks up: the registry host of the first of
// imgs that names its registry by a host name (an address or localhost needs no DNS). The pinned
// images came from there, so the name resolves on the user's network; a node that cannot resolve
// it cannot resolve what its Pods need either. Empty when no image names a registry by name.
func LookupName(imgs ...pins.Image) string {
	for _, img := range imgs {
		host := img.Registry
		if h, _, ok := strings.Cut(host, ":"); ok {
			host = h
		}
		if _, err := netip.ParseAddr(host); err == nil || host == "localhost" || !lookupNamePattern.MatchString(host) || !strings.ContainsAny(strings.ToLower(host), "abcdefghijklmnopqrstuvwxyz") {
			continue
		}
		if host == "docker.io" || host == "index.docker.io" {
			return dockerHubHost
		}
		return host
	}
	return ""
}

// DNSOutcome is what the node's lookup showed of its resolver.
type DNSOutcome string

const (
	// DNSResolved: the resolver answered the name with an address.
	DNSResolved DNSOutcome = "resolved"
	// DNSRefused: the resolver refused the query (the REFUSED answer), or nothing listens at its
	// address (the query was refused as a connection): nothing the node looks up will resolve.
	DNSRefused DNSOutcome = "refused"
	// DNSInconclusive: anything else (no answer in time, a server failure, no such name, a node
	// image without nslookup). A network may drop DNS to the internet on purpose, so this is no
	// proof of a broken resolver.
	DNSInconclusive DNSOutcome = "inconclusive"
	// DNSNotChecked: no name was given to look up.
	DNSNotChecked DNSOutcome = "not checked"
)

// DNSReport is the outcome of the node's DNS check.
type DNSReport struct {
	Outcome DNSOutcome
	// Node is the node that looked the name up, Name the name.
	Node, Name string
	// DNS is the node's resolver.
	DNS NodeDNS
	// Detail says what the lookup printed, in short ("no answer within 12s", "SERVFAIL").
	Detail string
}

// The DNS check's bounds. A refusal right after the node started is asked again, as k3d rewrites
// the node's forwarding rules while the node starts; anything else is final at once.
const (
	dnsCheckAttempts   = 3
	dnsCheckRetryDelay = time.Second
	// dnsAttemptTimeout bounds one lookup: BusyBox's nslookup gives up on a silent server by
	// itself before this.
	dnsAttemptTimeout = 15 * time.Second
)

// The lookup's output. BusyBox's nslookup (the k3s image's) and BIND's print the answer as a
// "Name:" line followed by "Address" lines; a refused query as the REFUSED answer code or as a
// refused connection (nothing listens at the resolver's address); no answer as "timed out".
var (
	lookupAnswer     = regexp.MustCompile(`(?m)^Name:\s*\S+\s*\n(?:.*\n)*?Address(?:\s+\d+)?:\s*\S+`)
	lookupRefusedRC  = regexp.MustCompile(`(?m):\s*REFUSED\s*$`)
	lookupRefusedTCP = regexp.MustCompile(`(?i)connection refused`)
	lookupTimedOut   = regexp.MustCompile(`(?i)timed out`)
	lookupRcode      = regexp.MustCompile(`(?m):\s*(SERVFAIL|NXDOMAIN|FORMERR|NOTIMP)\s*$`)
)

// classifyLookup reads what `nslookup name` printed in the node (or why it did not run).
func classifyLookup(res engine.ExecResult, err error) (DNSOutcome, string) {
	if err != nil {
		return DNSInconclusive, err.Error()
	}
	out := res.Stdout + "\n" + res.Stderr
	switch {
	case lookupAnswer.MatchString(out):
		return DNSResolved, "answered"
	case lookupRefusedRC.MatchString(out):
		return DNSRefused, "the server answered REFUSED"
	case lookupRefusedTCP.MatchString(out):
		return DNSRefused, "connection refused: nothing answers DNS at that address"
	case lookupTimedOut.MatchString(out):
		return DNSInconclusive, "no answer: the query timed out"
	}
	if m := lookupRcode.FindStringSubmatch(out); m != nil {
		return DNSInconclusive, "the server answered " + m[1]
	}
	return DNSInconclusive, fmt.Sprintf("nslookup exited with %d: %s", res.ExitCode, lastLine(out))
}

// CheckNodeDNS looks name up inside server-0 of cluster through the node's own resolver (dns
// says which, for messages), with the node's nslookup. A refusal is returned as a NodeDNSError,
// which names the resolver and how to choose another (upstream, when not empty, is this host's
// upstream resolver, suggested when the node used k3d's handling); anything else is a report.
func (p *Provider) CheckNodeDNS(ctx context.Context, cluster, name string, dns NodeDNS, upstream string) (DNSReport, error) {
	rep := DNSReport{Node: serverNode(cluster), Name: name, DNS: dns, Outcome: DNSNotChecked}
	if name == "" {
		return rep, nil
	}
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, dnsAttemptTimeout)
		res, err := p.engine.Verbs().Exec(actx, rep.Node, engine.ExecInput{}, "nslookup", name)
		timedOut := errors.Is(actx.Err(), context.DeadlineExceeded)
		cancel()
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
		if timedOut {
			rep.Outcome, rep.Detail = DNSInconclusive, fmt.Sprintf("no answer within %s", dnsAttemptTimeout)
		} else {
			rep.Outcome, rep.Detail = classifyLookup(res, err)
		}
		if rep.Outcome != DNSRefused || attempt == dnsCheckAttempts {
			break
		}
		select {
		case <-ctx.Done():
			return rep, ctx.Err()
		case <-time.After(dnsCheckRetryDelay):
		}
	}
	if rep.Outcome == DNSRefused {
		return rep, &NodeDNSError{Report: rep, Upstream: upstream}
	}
	return rep, nil
}

// Note is the report as the cluster step's progress shows it.
func (r DNSReport) Note() string {
	switch r.Outcome {
	case DNSResolved:
		return fmt.Sprintf("node DNS: %s resolves %s through %s", r.Node, r.Name, r.DNS)
	case DNSNotChecked:
		return "node DNS: " + r.DNS.String() + "; not checked (the pinned images name no registry by host name)"
	}
	return fmt.Sprintf("warning: could not confirm that %s resolves %s through %s (%s); continuing. If the node cannot reach registries or the internet later, choose its resolver with %s",
		r.Node, r.Name, r.DNS, r.Detail, r.DNS.setting())
}

// NodeDNSError is the node's resolver refusing its lookup: nothing the node or its Pods look up
// by name would resolve (image pulls, the sandboxes' own lookups), so `up` stops here.
type NodeDNSError struct {
	Report DNSReport
	// Upstream is this host's upstream resolver, suggested when the node used k3d's handling.
	Upstream string
}

func (e *NodeDNSError) Error() string {
	r := e.Report
	d := r.DNS
	head := fmt.Sprintf("k3d node %s cannot resolve %s: ", r.Node, r.Name)
	var rule, fix string
	switch {
	case d.Address == "":
		rule = "the node uses k3d's own DNS handling (" + d.setting() + " is " + valueOf(d) + "), which refused the query (" + r.Detail + "): k3d forwards the node's DNS through its network's gateway, which fails on some hosts (Docker writing its rules with iptables-nft, for example)"
		fix = "set " + d.setting() + " to the IPv4 address of a DNS server the node can reach"
		if e.Upstream != "" {
			fix += " (this host's upstream resolver " + e.Upstream + ", for example)"
		}
		if d.Note == "" {
			fix += " or to " + ResolverAuto + " for occ's choice"
		}
	case d.automatic():
		rule = "the resolver " + d.String() + ", which occ chose because " + d.setting() + " is " + ResolverAuto + ", refused the query (" + r.Detail + ")"
		fix = "set " + d.setting() + " to the IPv4 address of a DNS server the node can reach, or to " + ResolverK3d + " for k3d's own DNS handling"
	default:
		rule = "the resolver " + d.Address + " given by " + d.setting() + " refused the query (" + r.Detail + ")"
		fix = "set " + d.setting() + " to the IPv4 address of a DNS server the node can reach, to " + ResolverAuto + " for occ's choice, or to " + ResolverK3d + " for k3d's own DNS handling"
	}
	return head + rule + "; " + fix + ", and run occ dev up again"
}

// valueOf is the setting's value that chose d, as the user would write it.
func valueOf(d NodeDNS) string {
	switch {
	case d.Choice == DNSGiven:
		return d.Address
	case (d.Choice == DNSK3d || d.Choice == "") && d.Note == "":
		return ResolverK3d
	}
	return ResolverAuto
}
