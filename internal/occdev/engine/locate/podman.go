package locate

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/option"
)

// The variables podman reads to find its service.
const (
	EnvContainerHost       = "CONTAINER_HOST"
	EnvContainerConnection = "CONTAINER_CONNECTION"
)

// The sockets of a local Podman service (the podman.socket systemd units listen there).
const (
	RootfulPodmanSocket = "/run/podman/podman.sock"
	// rootlessPodmanSocket is relative to $XDG_RUNTIME_DIR.
	rootlessPodmanSocket = "podman/podman.sock"
)

// defaultMachine is the machine `podman machine init` creates without a name.
const defaultMachine = "podman-machine-default"

// podmanPlaces finds the Podman service the way podman users expect, in podman's own order:
//
//  1. CONTAINER_CONNECTION names a connection of podman's configuration;
//  2. CONTAINER_HOST is the service's URL;
//  3. when podman talks to a service rather than to local storage — always on macOS, and on
//     Linux when containers.conf sets [engine] remote = true — the default connection;
//     a Podman machine's connection (ssh to the machine on this host) is reached through the
//     API socket podman forwards from the machine to this host;
//  4. otherwise, the local service: rootful /run/podman/podman.sock for root; for any other
//     user the rootless $XDG_RUNTIME_DIR/podman/podman.sock, then the rootful one.
//
// On macOS without any connection, the default machine's forwarded socket is where a started
// `podman machine` listens. Linux's native podman ignores the default connection (it does not
// need a service), so a connection to a remote host added for other work does not hide the
// local socket.
func podmanPlaces(env Env) ([]place, error) {
	unreadable := func(err error) []place {
		return []place{{kind: engine.Podman, source: "Podman's configuration", problem: err.Error()}}
	}
	if name := env.getenv(EnvContainerConnection); name != "" {
		cfg, err := readPodmanConfig(env)
		if err != nil {
			return unreadable(err), nil
		}
		d, ok := cfg.connections[name]
		if !ok {
			return nil, &option.Error{Option: EnvContainerConnection, Value: name,
				Rule: "names no Podman connection (" + cfg.describe() + ")",
				Fix:  "name a connection from `podman system connection list`, or unset CONTAINER_CONNECTION"}
		}
		return []place{connectionPlace(env, name, d, fmt.Sprintf("Podman connection %q (CONTAINER_CONNECTION, from %s)", name, cfg.from[name]))}, nil
	}
	if host := env.getenv(EnvContainerHost); host != "" {
		ep, rule := ParseUnix(host)
		if rule != "" {
			return nil, &option.Error{Option: EnvContainerHost, Value: redact(host), Rule: rule,
				Fix: "set CONTAINER_HOST=unix:///path/to/podman.sock, or unset it to use podman's default connection or local socket"}
		}
		return []place{{kind: engine.Podman, source: EnvContainerHost, sockets: []string{ep.Socket},
			start: "start the Podman service CONTAINER_HOST names (`podman system service --time=0 " + ep.String() + "`), or unset CONTAINER_HOST"}}, nil
	}
	cfg, err := readPodmanConfig(env)
	if err != nil {
		return unreadable(err), nil
	}
	darwin := env.goos() == "darwin"
	if darwin || cfg.remote {
		if cfg.defaultName != "" {
			d, ok := cfg.connections[cfg.defaultName]
			if !ok {
				return []place{{kind: engine.Podman, source: fmt.Sprintf("Podman's default connection %q (%s)", cfg.defaultName, cfg.defaultFrom),
					problem: "names no connection; choose one with `podman system connection default NAME`"}}, nil
			}
			return []place{connectionPlace(env, cfg.defaultName, d,
				fmt.Sprintf("Podman's default connection %q (%s)", cfg.defaultName, cfg.defaultFrom))}, nil
		}
		if darwin {
			p := machinePlace(env, defaultMachine, fmt.Sprintf("Podman machine %q (no Podman connection is configured)", defaultMachine))
			p.start = "create and start a machine with `podman machine init` and `podman machine start`"
			return []place{p}, nil
		}
	}
	rootful := place{kind: engine.Podman, source: "the rootful Podman socket", sockets: []string{env.system(RootfulPodmanSocket)}}
	if env.uid() == 0 {
		rootful.start = "start it with `systemctl start podman.socket`"
		return []place{rootful}, nil
	}
	rootful.start = "start it with `sudo systemctl start podman.socket` (and give your user access to the socket, or use the rootless one)"
	rootless := place{kind: engine.Podman, source: "the rootless Podman socket ($XDG_RUNTIME_DIR/" + rootlessPodmanSocket + ")",
		sockets: []string{filepath.Join(env.userRuntimeDir(), rootlessPodmanSocket)}, start: "start it with `systemctl --user start podman.socket`"}
	return []place{rootless, rootful}, nil
}

// connectionPlace turns a Podman connection into the place its service listens on this host:
// a unix:// connection is its socket; a connection to a Podman machine (ssh to this host, which
// is how podman reaches every machine) is the API socket podman forwards from that machine; a
// connection to another host cannot serve occ dev.
func connectionPlace(env Env, name string, d destination, source string) place {
	u, err := url.Parse(d.URI)
	if err != nil || d.URI == "" {
		return place{kind: engine.Podman, source: source, problem: fmt.Sprintf("has URI %q, which is not a URL; recreate it with `podman system connection add`", redact(d.URI))}
	}
	switch u.Scheme {
	case "unix":
		ep, rule := ParseUnix(d.URI)
		if rule != "" {
			return place{kind: engine.Podman, source: source, problem: fmt.Sprintf("has URI %q, which %s", redact(d.URI), rule)}
		}
		return place{kind: engine.Podman, source: source, sockets: []string{ep.Socket},
			start: fmt.Sprintf("start the Podman service of connection %q, or choose another with `podman system connection default`", name)}
	case "ssh":
		if d.IsMachine || isLoopback(u.Hostname()) {
			return machinePlace(env, strings.TrimSuffix(name, "-root"), source)
		}
	}
	return place{kind: engine.Podman, source: source, problem: fmt.Sprintf("is a connection to %s, which %s; use a local Podman or a Podman machine (`podman system connection default NAME`)", redact(d.URI), localRule)}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// machinePlace is where Podman forwards machine name's API socket on this host. The place has
// moved between releases; all are listed, newest first, and the first that exists is used:
//
//   - Podman 5: <runtime dir>/podman/NAME-api.sock, the runtime dir being $TMPDIR (else /tmp) on
//     macOS and $XDG_RUNTIME_DIR (or /run for root) on Linux;
//   - Podman 4 (QEMU): $XDG_DATA_HOME/containers/podman/machine/NAME/podman.sock in early
//     releases, .../machine/qemu/podman.sock later, and a per-user link to the running machine's
//     socket at .../machine/podman.sock.
func machinePlace(env Env, name, source string) place {
	var runtimeDir string
	switch {
	case env.goos() == "darwin":
		if runtimeDir = env.getenv("TMPDIR"); runtimeDir == "" {
			runtimeDir = "/tmp"
		}
	case env.uid() == 0:
		runtimeDir = env.system("/run")
	default:
		runtimeDir = env.userRuntimeDir()
	}
	sockets := []string{filepath.Join(runtimeDir, "podman", name+"-api.sock")}
	if data, err := env.dataHome(); err == nil {
		machines := filepath.Join(data, "containers", "podman", "machine")
		sockets = append(sockets,
			filepath.Join(machines, name, "podman.sock"),
			filepath.Join(machines, "qemu", "podman.sock"),
			filepath.Join(machines, "podman.sock"))
	}
	return place{kind: engine.Podman, source: source, sockets: sockets, start: fmt.Sprintf("start the machine with `podman machine start %s`", name)}
}
