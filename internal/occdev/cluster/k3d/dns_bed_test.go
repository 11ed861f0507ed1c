package k3d_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"

	"github.com/openclaw/occ/internal/occdev/cluster/k3d"
	"github.com/openclaw/occ/internal/progress"
)

const (
	dnsSetting = "--k3d-dns-resolver (" + k3d.EnvDNSResolver + ")"
	// checkName is the registry host the node looks up; only the test's server knows it.
	checkName = "registry.occ.test"
)

// dnsNetwork makes a Docker network of the test's own and returns its name and gateway: the
// gateway is an address of this host on that network's bridge, which a node on the network
// reaches, so the test's DNS server listens there.
func dnsNetwork(t *testing.T, ctx context.Context, b *bed, name string) (string, string) {
	t.Helper()
	id, netName := testNetwork(t, ctx, b, name, "dns")
	ins, err := b.Engine.API.NetworkInspect(ctx, id, network.InspectOptions{})
	if err != nil || len(ins.IPAM.Config) == 0 || ins.IPAM.Config[0].Gateway == "" {
		t.Fatalf("network %s has no gateway: %v %+v", netName, err, ins.IPAM)
	}
	return netName, ins.IPAM.Config[0].Gateway
}

// dnsRequest is a request for a cluster on a network of the test's own whose node must resolve
// checkName through the resolver dnsSetting gives: a DNS server the test runs at the network's
// gateway, answering 192.0.2.10 until told otherwise. It returns the gateway and the server too.
func dnsRequest(t *testing.T, ctx context.Context, b *bed) (k3d.Request, string, *k3d.DNSServer) {
	t.Helper()
	req := b.request(t, newRecorder(t))
	var gw string
	req.Network, gw = dnsNetwork(t, ctx, b, req.Name)
	srv := k3d.StartDNSServer(t, net.JoinHostPort(gw, "53"), netip.MustParseAddr("192.0.2.10"))
	req.DNS = k3d.NodeDNS{Choice: k3d.DNSGiven, Address: gw, From: dnsSetting, Setting: dnsSetting}
	req.DNSCheckName = checkName
	return req, gw, srv
}

// notes runs fn as a step and returns the notes it reported.
func notes(fn func(progress.Reporter) error) ([]string, error) {
	var got []string
	sink := progress.Sink(func(e progress.Event) {
		if e.Kind == progress.Note {
			got = append(got, e.Message)
		}
	})
	err := sink.Step("Create k3d cluster", "", fn)
	return got, err
}

// A developer whose network's DNS the node must use (a VPN's resolver, given by the setting):
// the node of a real k3d cluster on the bed's engine looks the registry host up through a DNS
// server the test runs on the host, and what its BusyBox nslookup meets decides. An answer is
// reported on the cluster step's line; the REFUSED answer is a refusal that names the node, the
// name, the resolver and the setting that chooses another; silence only warns, after BusyBox's
// own timeout; and once nothing listens at the resolver's address the query is refused as a
// connection, which is fatal too.
func TestNodeDNSCheckOutcomesOnTheBed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b := startBed(t, ctx)
	req, gw, srv := dnsRequest(t, ctx, b)

	var c *k3d.Cluster
	got, err := notes(func(rep progress.Reporter) error {
		req.Progress = rep
		var err error
		c, err = b.provider.Create(ctx, req)
		return err
	})
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	b.deleteAtEnd(t, k3d.Identity{Name: req.Name, Owner: req.Owner, UID: c.UID})
	want := "node DNS: " + c.NodeContainer + " resolves " + checkName + " through " + gw + " (given by " + dnsSetting + ")"
	if c.DNSCheck.Outcome != k3d.DNSResolved || !strings.Contains(strings.Join(got, "\n"), want) || srv.Queries() == 0 {
		t.Fatalf("check %+v after %d queries; notes:\n%s\nwant %q", c.DNSCheck, srv.Queries(), strings.Join(got, "\n"), want)
	}

	check := func() (k3d.DNSReport, error, time.Duration) {
		start := time.Now()
		rep, err := b.provider.CheckNodeDNS(ctx, req.Name, checkName, req.DNS, "")
		return rep, err, time.Since(start)
	}
	srv.SetMode(k3d.DNSRefuses)
	before := srv.Queries()
	rep, err, took := check()
	var refused *k3d.NodeDNSError
	if !errors.As(err, &refused) || rep.Outcome != k3d.DNSRefused || rep.Detail != "the server answered REFUSED" {
		t.Fatalf("REFUSED: %+v, %v", rep, err)
	}
	for _, w := range []string{"k3d node " + c.NodeContainer + " cannot resolve " + checkName, "the resolver " + gw + " given by " + dnsSetting + " refused the query (the server answered REFUSED)",
		"set " + dnsSetting + " to the IPv4 address of a DNS server the node can reach, to auto for occ's choice, or to k3d"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("refusal %q lacks %q", err, w)
		}
	}
	t.Logf("REFUSED: fatal after %s and %d queries (asked three times)", took.Round(time.Millisecond), srv.Queries()-before)

	srv.SetMode(k3d.DNSSilent)
	rep, err, took = check()
	if err != nil || rep.Outcome != k3d.DNSInconclusive || rep.Detail != "no answer: the query timed out" ||
		!strings.HasPrefix(rep.Note(), "warning: could not confirm that "+c.NodeContainer+" resolves "+checkName+" through "+gw) || !strings.Contains(rep.Note(), "continuing") {
		t.Fatalf("silence: %+v (%s), %v", rep, rep.Note(), err)
	}
	t.Logf("silence: a warning after %s", took.Round(time.Millisecond))

	srv.Close()
	rep, err, took = check()
	if !errors.As(err, &refused) || rep.Outcome != k3d.DNSRefused || !strings.Contains(err.Error(), "connection refused: nothing answers DNS at that address") {
		t.Fatalf("nothing listening: %+v, %v", rep, err)
	}
	t.Logf("nothing listening: fatal after %s", took.Round(time.Millisecond))
}

// The refusal stops the creation itself: Create fails with the refusal, which names the
// resolver and the setting, and rolls the cluster back, leaving no container of it.
func TestNodeDNSRefusalRollsTheClusterBack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b := startBed(t, ctx)
	req, gw, srv := dnsRequest(t, ctx, b)
	srv.SetMode(k3d.DNSRefuses)
	b.deleteAtEnd(t, k3d.Identity{Name: req.Name, Owner: req.Owner})
	_, err := b.provider.Create(ctx, req)
	var refused *k3d.NodeDNSError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "rolled back: no container, network or volume of it is left") ||
		!strings.Contains(err.Error(), "the resolver "+gw+" given by "+dnsSetting+" refused the query") {
		t.Fatalf("Create = %v, want the refusal, rolled back", err)
	}
	if cs := containersOf(t, ctx, b.engine, req.Name); len(cs) != 0 {
		t.Errorf("the refused cluster left %d containers", len(cs))
	}
}

// Docker Desktop's resolver is read from a throwaway container of the node image, which the
// engine removes when it exits: on the host's network the container reads the host's own
// resolv.conf, whose first upstream a node can reach is returned; on a user network Docker
// names its embedded resolver 127.0.0.11, which a node cannot use, and the reading fails saying
// so. No container of the probe is left either way.
func TestBridgeResolverProbeOnTheBed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b := startBed(t, ctx)
	image := b.node.DigestReference()
	addr, err := k3d.BridgeResolver(ctx, b.provider, image, "host")
	if want := k3d.HostUpstream(); err != nil || addr != want {
		t.Errorf("on the host network: %q, %v; want this host's upstream %q", addr, err, want)
	}
	netName, _ := dnsNetwork(t, ctx, b, uniqueName(t))
	if _, err := k3d.BridgeResolver(ctx, b.provider, image, netName); err == nil || !strings.Contains(err.Error(), "names no IPv4 server a node can reach (only 127.0.0.11)") {
		t.Errorf("on a user network: %v", err)
	}
	left, err := b.engine.API.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("ancestor", image))})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range left {
		if strings.HasPrefix(c.Command, "cat ") {
			t.Errorf("the probe left container %s (%s)", c.ID, c.Status)
		}
	}
}
