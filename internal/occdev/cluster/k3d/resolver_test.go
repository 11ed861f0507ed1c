package k3d

import (
	"context"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	k3dconfig "github.com/k3d-io/k3d/v5/pkg/config"
	k3druntimes "github.com/k3d-io/k3d/v5/pkg/runtimes"
	k3dfixes "github.com/k3d-io/k3d/v5/pkg/types/fixes"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/progress"
)

const testSetting = "--k3d-dns-resolver (" + EnvDNSResolver + ")"

// linuxDocker is Docker Engine on a Linux host whose files are files (path → content, without
// the leading slash).
func linuxDocker(files map[string]string) Host {
	fsys := fstest.MapFS{}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(data)}
	}
	return Host{EngineKind: "docker", EnginePlatform: "Docker Engine - Community", OS: "linux", Files: fsys}
}

// A developer on a VPN names the resolver the node must use: an IPv4 address is taken in its
// canonical form whatever the host, "k3d" keeps k3d's own handling, nothing and "auto" let occ
// choose, and anything else is refused naming the setting, the value, the rule and the fix.
func TestChooseNodeDNSSetting(t *testing.T) {
	host := linuxDocker(map[string]string{"etc/resolv.conf": "nameserver 10.0.0.2\n"})
	for raw, want := range map[string]NodeDNS{
		"10.64.0.53":    {Choice: DNSGiven, Address: "10.64.0.53", From: testSetting, Setting: testSetting},
		" 192.168.1.1 ": {Choice: DNSGiven, Address: "192.168.1.1", From: testSetting, Setting: testSetting},
		"k3d":           {Choice: DNSK3d, Setting: testSetting},
		"":              {Choice: DNSHostUpstream, Address: "10.0.0.2", From: "/etc/resolv.conf", Setting: testSetting},
		"auto":          {Choice: DNSHostUpstream, Address: "10.0.0.2", From: "/etc/resolv.conf", Setting: testSetting},
	} {
		got, err := ChooseNodeDNS(testSetting, raw, host)
		if err != nil || got != want {
			t.Errorf("ChooseNodeDNS(%q) = %+v, %v; want %+v", raw, got, err, want)
		}
	}
	for raw, rule := range map[string]string{
		"dns.corp.example": "is not an IPv4 address in dotted decimal (or auto or k3d)",
		"fd00::53":         "is not an IPv4 address",
		"10.0.0.053":       "is not an IPv4 address",
		"127.0.0.53":       "is a loopback address",
		"0.0.0.0":          "is not a unicast address",
		"224.0.0.251":      "is not a unicast address",
		"255.255.255.255":  "is not a unicast address",
		"K3D":              "is not an IPv4 address",
		"AUTO":             "is not an IPv4 address",
	} {
		_, err := ChooseNodeDNS(testSetting, raw, host)
		oe, ok := err.(*option.Error)
		if !ok || oe.Option != testSetting || oe.Value != raw || !strings.Contains(oe.Rule, rule) || !strings.Contains(oe.Fix, "auto for occ's choice, or k3d for k3d's own DNS handling") {
			t.Errorf("ChooseNodeDNS(%q) = %v; want an option error with rule %q", raw, err, rule)
		}
	}
}

// The default on each kind of host, read from that host's resolv.conf (given as files) and the
// engine's own word about itself: Docker on Linux takes the host's first upstream a node can
// reach (through systemd-resolved's stub to its upstream list), Docker Desktop the resolver of
// its default bridge (read later, never the Mac's own, which may answer only the Mac), Podman and
// other engines k3d's handling; a host without a usable upstream keeps k3d's handling and says
// why. The dry run's words name the address and the file it came from.
func TestAutomaticNodeDNSByHostKind(t *testing.T) {
	const (
		stub     = "# This is /run/systemd/resolve/stub-resolv.conf managed by man:systemd-resolved(8).\nnameserver 127.0.0.53\noptions edns0 trust-ad\nsearch corp.example\n"
		upstream = "# This is /run/systemd/resolve/resolv.conf managed by man:systemd-resolved(8).\nnameserver 10.8.0.1\nnameserver 192.168.1.1\nsearch corp.example\n"
	)
	desktop := func(os string) Host {
		return Host{EngineKind: "docker", EnginePlatform: "Docker Desktop 4.37.1 (178610)", OS: os,
			Files: fstest.MapFS{"etc/resolv.conf": {Data: []byte("nameserver 198.51.100.53\n")}}}
	}
	cases := []struct {
		name       string
		host       Host
		want       NodeDNS
		wantString []string
	}{
		{"Linux Docker with a plain resolv.conf", linuxDocker(map[string]string{"etc/resolv.conf": "nameserver 192.168.1.1\nnameserver 1.1.1.1\n"}),
			NodeDNS{Choice: DNSHostUpstream, Address: "192.168.1.1", From: "/etc/resolv.conf"},
			[]string{"192.168.1.1, this host's upstream resolver (auto: the first usable IPv4 nameserver of /etc/resolv.conf)"}},
		{"systemd-resolved's stub stands for its upstream servers", linuxDocker(map[string]string{"etc/resolv.conf": stub, "run/systemd/resolve/resolv.conf": upstream}),
			NodeDNS{Choice: DNSHostUpstream, Address: "10.8.0.1", From: "/run/systemd/resolve/resolv.conf (systemd-resolved's upstream servers; /etc/resolv.conf names its stub 127.0.0.53)"},
			[]string{"10.8.0.1, this host's upstream resolver", "/run/systemd/resolve/resolv.conf", "stub 127.0.0.53"}},
		{"comments, options and a trailing comment", linuxDocker(map[string]string{"etc/resolv.conf": "# nameserver 1.1.1.1\n; nameserver 8.8.8.8\noptions ndots:2 timeout:1\nsearch example.test\n  nameserver   10.0.0.2   # the office resolver\n"}),
			NodeDNS{Choice: DNSHostUpstream, Address: "10.0.0.2", From: "/etc/resolv.conf"}, nil},
		{"link-local, IPv6 and IPv4-mapped entries", linuxDocker(map[string]string{"etc/resolv.conf": "nameserver 169.254.169.254\nnameserver fe80::1%eth0\nnameserver ::ffff:10.9.8.7\n"}),
			NodeDNS{Choice: DNSHostUpstream, Address: "10.9.8.7", From: "/etc/resolv.conf"}, nil},
		{"IPv6-only upstreams", linuxDocker(map[string]string{"etc/resolv.conf": "nameserver 2001:db8::53\nnameserver fe80::1%eth0\n"}),
			NodeDNS{Choice: DNSK3d, Note: "/etc/resolv.conf names no IPv4 server a node can reach (only 2001:db8::53, fe80::1%eth0)"},
			[]string{"k3d's own DNS handling (auto: /etc/resolv.conf names no IPv4 server a node can reach (only 2001:db8::53"}},
		{"systemd-resolved with IPv6-only upstreams", linuxDocker(map[string]string{"etc/resolv.conf": stub, "run/systemd/resolve/resolv.conf": "nameserver 2001:db8::53\n"}),
			NodeDNS{Choice: DNSK3d, Note: "/etc/resolv.conf names systemd-resolved's stub 127.0.0.53, and /run/systemd/resolve/resolv.conf names no IPv4 server a node can reach (only 2001:db8::53)"}, nil},
		{"systemd-resolved's stub without its upstream list", linuxDocker(map[string]string{"etc/resolv.conf": stub}),
			NodeDNS{Choice: DNSK3d, Note: "/etc/resolv.conf names systemd-resolved's stub 127.0.0.53, and /run/systemd/resolve/resolv.conf cannot be read (open run/systemd/resolve/resolv.conf: file does not exist)"}, nil},
		{"another local stub (dnsmasq)", linuxDocker(map[string]string{"etc/resolv.conf": "nameserver 127.0.1.1\n"}),
			NodeDNS{Choice: DNSK3d, Note: "/etc/resolv.conf names no IPv4 server a node can reach (only 127.0.1.1)"}, nil},
		{"no nameserver at all", linuxDocker(map[string]string{"etc/resolv.conf": "search example.test\n"}),
			NodeDNS{Choice: DNSK3d, Note: "/etc/resolv.conf names no IPv4 server a node can reach (no nameserver at all)"}, nil},
		{"no resolv.conf", linuxDocker(nil),
			NodeDNS{Choice: DNSK3d, Note: "cannot read /etc/resolv.conf (open etc/resolv.conf: file does not exist)"}, nil},
		{"Docker Desktop on a Mac behind a VPN", desktop("darwin"),
			NodeDNS{Choice: DNSDesktopBridge, From: "a throwaway container of the node image on Docker Desktop's default bridge network"},
			[]string{"Docker Desktop's default-bridge resolver (auto: read from a throwaway container of the node image on Docker Desktop's default bridge network when the cluster is created)"}},
		{"Docker Desktop on Linux", desktop("linux"),
			NodeDNS{Choice: DNSDesktopBridge, From: "a throwaway container of the node image on Docker Desktop's default bridge network"}, nil},
		{"Podman", Host{EngineKind: "podman", OS: "linux", Files: fstest.MapFS{"etc/resolv.conf": {Data: []byte("nameserver 10.0.0.2\n")}}},
			NodeDNS{Choice: DNSK3d, Note: "the engine is Podman, whose networks answer DNS at their gateway"}, nil},
		{"OrbStack on a Mac", Host{EngineKind: "docker", EnginePlatform: "OrbStack", OS: "darwin", Files: fstest.MapFS{}},
			NodeDNS{Choice: DNSK3d, Note: "Docker on darwin that is not Docker Desktop (OrbStack, Colima and others handle the node's DNS themselves)"}, nil},
		{"no engine answered while planning", Host{OS: "linux", Files: fstest.MapFS{}},
			NodeDNS{Choice: DNSK3d, Note: "no engine answered while planning, so the kind of host is not known"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ChooseNodeDNS(testSetting, "", c.host)
			c.want.Setting = testSetting
			if err != nil || got != c.want {
				t.Fatalf("ChooseNodeDNS = %+v, %v\nwant %+v", got, err, c.want)
			}
			for _, w := range c.wantString {
				if !strings.Contains(got.String(), w) {
					t.Errorf("the dry run's words %q lack %q", got.String(), w)
				}
			}
			if err := got.check(); err != nil {
				t.Errorf("the choice breaks the request's rule: %v", err)
			}
		})
	}
	// An explicit choice wins over every host's default.
	for _, h := range []Host{desktop("darwin"), linuxDocker(map[string]string{"etc/resolv.conf": stub, "run/systemd/resolve/resolv.conf": upstream})} {
		if got, _ := ChooseNodeDNS(testSetting, "192.0.2.53", h); got.Choice != DNSGiven || got.Address != "192.0.2.53" {
			t.Errorf("an explicit resolver on %s = %+v", h.EnginePlatform, got)
		}
		if got, _ := ChooseNodeDNS(testSetting, "k3d", h); got.Choice != DNSK3d || got.Address != "" || got.String() != "k3d's own DNS handling ("+testSetting+" is k3d)" {
			t.Errorf("k3d on %s = %+v (%s)", h.EnginePlatform, got, got)
		}
	}
}

// A request carries the plan's decision: a choice occ makes, an address in its canonical form
// wherever the choice needs one, none with k3d's handling, and Docker Desktop's bridge resolver
// may still be unread.
func TestNodeDNSRequestRule(t *testing.T) {
	for _, d := range []NodeDNS{{}, {Choice: DNSK3d}, {Choice: DNSDesktopBridge}, {Choice: DNSDesktopBridge, Address: "192.168.65.7"}, {Choice: DNSGiven, Address: "10.0.0.2"}} {
		r := testRequest(t)
		r.DNS = d
		if err := r.Check(); err != nil {
			t.Errorf("Check(%+v) = %v", d, err)
		}
	}
	for _, c := range []struct {
		dns  NodeDNS
		want string
	}{
		{NodeDNS{Choice: DNSK3d, Address: "10.0.0.2"}, "is set while the node keeps k3d's own DNS handling"},
		{NodeDNS{Choice: DNSGiven}, "is not an IPv4 address"},
		{NodeDNS{Choice: DNSHostUpstream, Address: "127.0.0.1"}, "loopback"},
		{NodeDNS{Choice: DNSGiven, Address: "010.0.0.2"}, "is not an IPv4 address"},
		{NodeDNS{Choice: "dhcp", Address: "10.0.0.2"}, "is not a way occ chooses the node's resolver"},
	} {
		r := testRequest(t)
		r.DNS = c.dns
		if err := r.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check(%+v) = %v, want %q", c.dns, err, c.want)
		}
	}
}

// With a resolver of occ's, the node gets the state directory's resolv.conf read-only over its
// own, and k3d's DNS fix is turned off for that creation (k3d refuses the mount with the fix on);
// without one, the setting the process started with is restored and nothing is mounted. k3d's
// memo of its fixes is dropped, so a second creation in the same process decides anew.
func TestDNSResolverMountAndFix(t *testing.T) {
	r := testRequest(t)
	r.DNS = NodeDNS{Choice: DNSGiven, Address: "10.64.0.53", Setting: testSetting}
	if err := r.validate(); err != nil {
		t.Fatal(err)
	}
	p, err := writeResolvConf(r.StateDir, r.DNS.Address)
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
	r.DNSCheckName = "ghcr.io"
	d := strings.Join(r.Describe().Creates, "\n")
	for _, w := range []string{"node-resolv.conf", "nameserver 10.64.0.53 (given by " + testSetting + ")", "k3d's DNS fix off", "looks up ghcr.io through its resolver: a refusal stops up"} {
		if !strings.Contains(d, w) {
			t.Errorf("the dry run does not say %q:\n%s", w, d)
		}
	}
	r.DNS = NodeDNS{Choice: DNSDesktopBridge, From: "a throwaway container of the node image on Docker Desktop's default bridge network"}
	if d := strings.Join(r.Describe().Creates, "\n"); !strings.Contains(d, "node-resolv.conf (0644; the node's resolv.conf with Docker Desktop's default-bridge resolver") || !strings.Contains(d, "removes itself") {
		t.Errorf("the dry run on Docker Desktop:\n%s", d)
	}
	r.DNS = NodeDNS{Choice: DNSK3d, Note: "the engine is Podman, whose networks answer DNS at their gateway"}
	if d := strings.Join(r.Describe().Creates, "\n"); !strings.Contains(d, "the node's DNS as k3d sets it up: k3d's own DNS handling (auto: the engine is Podman") || strings.Contains(d, ResolverFile) {
		t.Errorf("the dry run with k3d's handling:\n%s", d)
	}
}

// Docker Desktop's bridge resolver cannot be read (here: an engine client that runs no
// containers): the node keeps k3d's own handling, says so on the cluster step's line with the
// setting that chooses another, and the creation goes on.
func TestDesktopBridgeResolverUnreadableKeepsK3dHandling(t *testing.T) {
	p := &Provider{engine: &docker.Engine{API: noRunAPI{}}}
	r := testRequest(t)
	r.DNS = NodeDNS{Choice: DNSDesktopBridge, From: "a throwaway container of the node image on Docker Desktop's default bridge network", Setting: testSetting}
	var notes []string
	sink := progress.Sink(func(e progress.Event) {
		if e.Kind == progress.Note {
			notes = append(notes, e.Message)
		}
	})
	var got NodeDNS
	err := sink.Step("Create k3d cluster", "", func(rep progress.Reporter) error {
		r.Progress = rep
		var err error
		got, err = p.nodeDNS(context.Background(), &r)
		return err
	})
	if err != nil || got.Choice != DNSK3d || got.Address != "" || !strings.Contains(got.Note, "Docker Desktop's default-bridge resolver could not be read (run \"cat /etc/resolv.conf\" in a throwaway container of "+r.NodeImage.DigestReference()+": the engine refuses to create containers)") {
		t.Fatalf("nodeDNS = %+v, %v", got, err)
	}
	all := strings.Join(notes, "\n")
	if !strings.Contains(all, "reading Docker Desktop's default-bridge DNS resolver from a throwaway container of "+r.NodeImage.DigestReference()) ||
		!strings.Contains(all, "warning: Docker Desktop's default-bridge resolver could not be read") || !strings.Contains(all, "the node keeps k3d's own DNS handling") || !strings.Contains(all, "set "+testSetting) {
		t.Errorf("notes:\n%s", all)
	}
	// Another choice reads nothing.
	r.DNS = NodeDNS{Choice: DNSGiven, Address: "10.0.0.2"}
	if got, err := p.nodeDNS(context.Background(), &r); err != nil || got != r.DNS {
		t.Errorf("nodeDNS of a given resolver = %+v, %v", got, err)
	}
}

// noRunAPI is an engine that refuses to create containers.
type noRunAPI struct{ docker.API }

func (noRunAPI) ContainerCreate(context.Context, *container.Config, *container.HostConfig, *network.NetworkingConfig, *ocispec.Platform, string) (container.CreateResponse, error) {
	return container.CreateResponse{}, errors.New("the engine refuses to create containers")
}
