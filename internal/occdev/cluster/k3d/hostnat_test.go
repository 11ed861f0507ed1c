package k3d

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/docker/docker/api/types/system"

	"github.com/openclaw/occ/internal/occdev/docker"
)

const (
	natRelease  = "6.8.0-41-generic"
	natHostname = "devbox"
	natModDir   = "lib/modules/" + natRelease + "/"
	// What an Ubuntu kernel ships as modules, and what it builds in.
	natDep     = "kernel/net/ipv4/netfilter/ip_tables.ko.zst: kernel/net/netfilter/x_tables.ko.zst\nkernel/net/ipv4/netfilter/iptable_nat.ko.zst: kernel/net/netfilter/nf_nat.ko.zst kernel/net/ipv4/netfilter/ip_tables.ko.zst\n"
	natBuiltin = "kernel/net/netfilter/x_tables.ko\n"
	// An nftables-only host: x_tables is loaded for nft_compat, ip_tables is not.
	nftModules = "nft_compat 20480 4 - Live 0x0\nx_tables 65536 6 nft_compat, Live 0x0\nnf_nat 65536 1 - Live 0x0\n"
)

// nftHost is the reported failure: the kernel ships the legacy modules, and nothing has loaded
// ip_tables, so the node cannot have its nat table.
var nftHost = map[string]string{
	"proc/modules":                nftModules,
	natModDir + "modules.dep":     natDep,
	natModDir + "modules.builtin": natBuiltin,
}

func hostFS(files ...map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{
		"proc/sys/kernel/osrelease": {Data: []byte(natRelease + "\n")},
		"proc/sys/kernel/hostname":  {Data: []byte(natHostname + "\n")},
	}
	for _, f := range files {
		for name, data := range f {
			fsys[name] = &fstest.MapFile{Data: []byte(data)}
		}
	}
	return fsys
}

func with(base map[string]string, extra map[string]string) map[string]string {
	m := maps.Clone(base)
	maps.Copy(m, extra)
	return m
}

// What the host kernel shows decides: a nat table loaded, registered or built in is there; with
// ip_tables in the kernel it loads on demand; a kernel that ships the modules but has loaded
// neither, or may load none, cannot give the node its table; a kernel without the module has
// none; a host that does not show enough is undecided, never refused.
func TestLegacyNATState(t *testing.T) {
	for _, c := range []struct {
		name    string
		files   map[string]string
		release string
		want    natState
	}{
		{"iptable_nat loaded (sysfs)", map[string]string{"sys/module/iptable_nat/refcnt": "1\n"}, natRelease, natAvailable},
		{"iptable_nat loaded (proc)", map[string]string{"proc/modules": "iptable_nat 12288 0 - Live 0x0\n"}, natRelease, natAvailable},
		{"nat table registered", map[string]string{"proc/net/ip_tables_names": "filter\nnat\n"}, natRelease, natAvailable},
		{"nat built in", map[string]string{natModDir + "modules.builtin": "kernel/net/ipv4/netfilter/ip_tables.ko\nkernel/net/ipv4/netfilter/iptable_nat.ko\n", natModDir + "modules.dep": ""}, natRelease, natAvailable},
		{"ip_tables loaded: nat loads on demand", with(nftHost, map[string]string{"proc/modules": nftModules + "ip_tables 36864 1 iptable_filter, Live 0x0\n"}), natRelease, natAvailable},
		{"ip_tables in sysfs", with(nftHost, map[string]string{"sys/module/ip_tables/refcnt": "1\n"}), natRelease, natAvailable},
		{"ip_tables there, its table list root-only", with(nftHost, map[string]string{"proc/net/ip_tables_names": ""}), natRelease, natAvailable},
		{"ip_tables built in", with(nftHost, map[string]string{natModDir + "modules.builtin": natBuiltin + "kernel/net/ipv4/netfilter/ip_tables.ko\n"}), natRelease, natAvailable},
		{"nftables-only host", nftHost, natRelease, natUnloadable},
		{"uncompressed modules, ip_tables not loaded", map[string]string{natModDir + "modules.builtin": natBuiltin, natModDir + "modules.dep": "kernel/net/ipv4/netfilter/iptable_nat.ko: kernel/net/netfilter/nf_nat.ko\n"}, natRelease, natUnloadable},
		{"module loading switched off", with(nftHost, map[string]string{"proc/modules": nftModules + "ip_tables 36864 1 iptable_filter, Live 0x0\n", "proc/sys/kernel/modules_disabled": "1\n"}), natRelease, natUnloadable},
		{"names that only look alike", with(nftHost, map[string]string{"proc/modules": "iptable_natural 1 0 - Live 0x0\nip_tables_extra 1 0 - Live 0x0\n", natModDir + "modules.builtin": "kernel/net/ipv4/netfilter/xip_tables.ko\n"}), natRelease, natUnloadable},
		{"a kernel without the module", map[string]string{natModDir + "modules.builtin": natBuiltin, natModDir + "modules.dep": "kernel/net/ipv4/netfilter/ip_tables.ko.zst:\n"}, natRelease, natMissing},
		{"no builtin list, nat shipped", map[string]string{natModDir + "modules.dep": natDep}, natRelease, natUnknown},
		{"no module index (NixOS, a kernel without modules)", map[string]string{"proc/modules": nftModules}, natRelease, natUnknown},
		{"a release that is no path", map[string]string{"lib/modules/x/modules.dep": natDep}, "../x", natUnknown},
	} {
		if got := legacyNATState(hostFS(c.files), c.release); got != c.want {
			t.Errorf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

// infoAPI is an engine that answers only Info.
type infoAPI struct {
	docker.API
	info system.Info
	err  error
}

func (a infoAPI) Info(context.Context) (system.Info, error) { return a.info, a.err }

func natProvider(os string, root fs.FS, info system.Info, err error) *Provider {
	return &Provider{engine: &docker.Engine{API: infoAPI{info: info, err: err}}, host: hostSystem{root: root, os: os}}
}

// A developer on an nftables-only Linux host runs `occ dev up`: before anything is created
// (before the engine's images are even looked at) occ refuses, naming the host kernel, the
// modules, why the node needs them, and the modprobe command that fixes it. A kernel without
// the module is refused with its own fix; an undecided host only warns; an engine that runs on
// another kernel (Docker Desktop, a Podman machine, a remote engine, an equal release elsewhere)
// and a host that is not Linux are not judged by this host's files.
func TestHostNATPreflight(t *testing.T) {
	here := system.Info{KernelVersion: natRelease, Name: natHostname}
	p := natProvider("linux", hostFS(nftHost), here, nil)
	_, err := p.preflight(context.Background(), &Request{})
	var hk *HostKernelError
	if !errors.As(err, &hk) {
		t.Fatalf("preflight = %v, want the host kernel's refusal first", err)
	}
	for _, w := range []string{"the host kernel " + natRelease + " has not loaded the legacy iptables modules (ip_tables, iptable_nat)", "IPTABLES_MODE=legacy",
		"the node cannot load kernel modules itself", "load them on the host, then run occ dev up again:\n  sudo modprobe --all iptable_nat iptable_filter iptable_mangle br_netfilter"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("refusal %q lacks %q", err, w)
		}
	}
	if _, _, err := natProvider("linux", hostFS(map[string]string{natModDir + "modules.builtin": natBuiltin, natModDir + "modules.dep": ""}), here, nil).checkHostNAT(context.Background()); err == nil ||
		!strings.Contains(err.Error(), "the host kernel "+natRelease+" provides no legacy iptables nat table (iptable_nat)") || !strings.Contains(err.Error(), "use a kernel that ships the iptable_nat module") {
		t.Errorf("a kernel without the module: %v", err)
	}
	unsure, release, err := natProvider("linux", hostFS(map[string]string{"proc/modules": nftModules}), here, nil).checkHostNAT(context.Background())
	if err != nil || !unsure || release != natRelease {
		t.Errorf("undecided host: unsure %v, release %q, %v", unsure, release, err)
	}
	if w := hostNATWarning(natRelease); !strings.HasPrefix(w, "warning: could not confirm that the host kernel "+natRelease+" provides the legacy iptables nat table (iptable_nat)") ||
		!strings.Contains(w, "continuing") || !strings.Contains(w, natRemedy) {
		t.Errorf("warning %q", w)
	}
	for _, c := range []struct {
		name string
		os   string
		info system.Info
		err  error
	}{
		{"Docker Desktop's VM", "linux", system.Info{KernelVersion: "6.10.14-linuxkit", Name: "docker-desktop"}, nil},
		{"the same release on another host", "linux", system.Info{KernelVersion: natRelease, Name: "localhost.localdomain"}, nil},
		{"an engine that does not say", "linux", system.Info{}, errors.New("no info")},
		{"a Mac", "darwin", here, nil},
	} {
		unsure, _, err := natProvider(c.os, hostFS(nftHost), c.info, c.err).checkHostNAT(context.Background())
		if err != nil || unsure {
			t.Errorf("%s: unsure %v, %v; want the host left alone", c.name, unsure, err)
		}
	}
}
