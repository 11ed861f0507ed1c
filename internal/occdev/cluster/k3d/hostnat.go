package k3d

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// The node runs k3s with IPTABLES_MODE=legacy (simpleConfig), so kube-proxy needs the host
// kernel's legacy iptables nat table. The node cannot load kernel modules itself (its modprobe
// has no host modules), but once ip_tables is in the host kernel, the kernel loads iptable_nat by
// itself when the node first asks for the nat table. On a host that has loaded neither (an
// nftables-only host), kube-proxy exits, k3s stops, and k3d reports nothing but a timeout
// minutes later: the preflight refuses that host up front, with the command that fixes it.

// The legacy modules, and the command that loads them (with those the node's rules use beside
// the nat table).
const (
	natModule      = "iptable_nat"
	iptablesModule = "ip_tables"
	natRemedy      = "sudo modprobe --all iptable_nat iptable_filter iptable_mangle br_netfilter"
)

// natState is what the host kernel offers the node's legacy nat table.
type natState int

const (
	// natAvailable: the nat table is there, built in, or loads on demand (ip_tables is there).
	natAvailable natState = iota
	// natUnloadable: the kernel ships the modules, but nothing can load them for the node
	// (ip_tables is not in the kernel, or module loading is switched off).
	natUnloadable
	// natMissing: the kernel ships no legacy nat table at all.
	natMissing
	// natUnknown: the host does not show enough to decide (modules kept elsewhere, as on NixOS,
	// or a kernel without a module index).
	natUnknown
)

// legacyNATState reads what an ordinary user may read of the running kernel (root is the host's
// root, release its kernel release). A loaded module is in /sys/module and /proc/modules; a
// built-in one is in neither (without parameters), but in modules.builtin; modules.dep lists
// those the kernel ships as modules. /proc/net/ip_tables_names exists while ip_tables is in the
// kernel, and only root may read it, so only its existence counts for that.
func legacyNATState(root fs.FS, release string) natState {
	modules, _ := fs.ReadFile(root, "proc/modules")
	loaded := func(module string) bool {
		if _, err := fs.Stat(root, "sys/module/"+module); err == nil {
			return true
		}
		return hasLine(modules, func(l string) bool { name, _, _ := strings.Cut(l, " "); return name == module })
	}
	if loaded(natModule) {
		return natAvailable
	}
	if tables, err := fs.ReadFile(root, "proc/net/ip_tables_names"); err == nil && hasLine(tables, func(l string) bool { return strings.TrimSpace(l) == "nat" }) {
		return natAvailable
	}
	if release == "" || strings.Contains(release, "/") || !fs.ValidPath(release) {
		return natUnknown
	}
	dir := path.Join("lib/modules", release)
	builtin, builtinErr := fs.ReadFile(root, path.Join(dir, "modules.builtin"))
	if builtinErr == nil && listsModule(builtin, natModule) {
		return natAvailable
	}
	deps, err := fs.ReadFile(root, path.Join(dir, "modules.dep"))
	switch {
	case err != nil:
		return natUnknown
	case !listsModule(deps, natModule) && builtinErr != nil:
		return natUnknown
	case !listsModule(deps, natModule):
		return natMissing
	}
	if off, err := fs.ReadFile(root, "proc/sys/kernel/modules_disabled"); err == nil && strings.TrimSpace(string(off)) == "1" {
		return natUnloadable
	}
	if _, err := fs.Stat(root, "proc/net/ip_tables_names"); err == nil || loaded(iptablesModule) || (builtinErr == nil && listsModule(builtin, iptablesModule)) {
		return natAvailable
	}
	if builtinErr != nil {
		return natUnknown // a built-in ip_tables cannot be ruled out
	}
	return natUnloadable
}

// listsModule says whether a modules.builtin or modules.dep names module: the first path of a
// line, kernel/net/ipv4/netfilter/iptable_nat.ko or .ko.zst (and the like).
func listsModule(data []byte, module string) bool {
	return hasLine(data, func(l string) bool {
		file, _, _ := strings.Cut(l, ":")
		base := path.Base(strings.TrimSpace(file))
		return base == module+".ko" || strings.HasPrefix(base, module+".ko.")
	})
}

func hasLine(data []byte, match func(string) bool) bool {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if match(sc.Text()) {
			return true
		}
	}
	return false
}

// HostKernelError is a host whose kernel cannot give the node its legacy iptables nat table.
// Nothing has been created when it is returned.
type HostKernelError struct {
	Release string
	Missing bool
}

func (e *HostKernelError) Error() string {
	if e.Missing {
		return fmt.Sprintf("the host kernel %s provides no legacy iptables nat table (%s), which the k3d node needs: occ runs k3s with IPTABLES_MODE=legacy, so the cluster would never start; use a kernel that ships the %s module", e.Release, natModule, natModule)
	}
	return fmt.Sprintf("the host kernel %s has not loaded the legacy iptables modules (%s, %s) that the k3d node needs: occ runs k3s with IPTABLES_MODE=legacy and the node cannot load kernel modules itself, so the cluster would never start (k3d would wait until its timeout); load them on the host, then run occ dev up again:\n  %s",
		e.Release, iptablesModule, natModule, natRemedy)
}

// hostNATWarning is said when the host's kernel could not be read well enough to decide.
func hostNATWarning(release string) string {
	return fmt.Sprintf("warning: could not confirm that the host kernel %s provides the legacy iptables nat table (%s) the k3d node uses; continuing. If the cluster does not start, run on the host: %s", release, natModule, natRemedy)
}

// natFailureHint is added to a failed creation after a preflight that could not decide: the
// rollback removes the node's log, which would show kube-proxy's error.
const natFailureHint = "if the node could not set up the legacy iptables nat table (" + natModule + "), run on the host: " + natRemedy

// checkHostNAT decides whether the host kernel gives the node its legacy nat table. The host's
// files describe the node's kernel only when the engine runs on it: on Linux, when the engine
// reports this host's kernel release and host name (Docker Desktop, Podman machines and remote
// engines run the node on another kernel, and are not checked). It returns a HostKernelError
// for a host that cannot, and unsure for one whose kernel did not show enough.
func (p *Provider) checkHostNAT(ctx context.Context) (unsure bool, release string, err error) {
	if p.host.os != "linux" {
		return false, "", nil
	}
	release, hostname := p.host.kernelValue("osrelease"), p.host.kernelValue("hostname")
	if release == "" || hostname == "" {
		return false, "", nil
	}
	id, err := p.engine.Verbs().Identify(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return false, "", ctx.Err()
		}
		return false, "", nil // no answer about the engine's kernel: nothing to compare
	}
	if id.Host.KernelVersion != release || id.Host.Name != hostname {
		return false, "", nil
	}
	switch legacyNATState(p.host.root, release) {
	case natUnloadable:
		return false, release, &HostKernelError{Release: release}
	case natMissing:
		return false, release, &HostKernelError{Release: release, Missing: true}
	case natUnknown:
		return true, release, nil
	}
	return false, release, nil
}

func (h hostSystem) kernelValue(name string) string {
	data, err := fs.ReadFile(h.root, "proc/sys/kernel/"+name)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}
