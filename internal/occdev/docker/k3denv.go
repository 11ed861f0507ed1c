package docker

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
)

// EnvVar is one process environment setting: Name=Value, or Name removed when Unset.
type EnvVar struct {
	Name  string
	Value string
	Unset bool
}

func (v EnvVar) String() string {
	if v.Unset {
		return v.Name + " (unset)"
	}
	return v.Name + "=" + v.Value
}

// Names of the variables k3d's Docker runtime reads.
const (
	// EnvSock is the socket path k3d bind-mounts into its tools container. Docker creates a
	// directory at a missing bind source, so it must name the real socket.
	EnvSock = "DOCKER_SOCK"
)

// K3dEnvironment is the environment through which k3d v5's Docker runtime finds the engine at
// ep. k3d builds a docker CLI client on every call, and that client reads DOCKER_HOST (which, set,
// wins over any context) and TLS settings; DOCKER_SOCK is the socket k3d mounts into its tools
// container. Context and TLS variables are removed so a shell's remote settings cannot leak into
// a unix-socket connection. extra (k3d's own image and fix settings) is appended.
func K3dEnvironment(ep Endpoint, extra ...EnvVar) []EnvVar {
	vars := []EnvVar{
		{Name: EnvHost, Value: ep.String()},
		{Name: EnvSock, Value: ep.Socket},
		{Name: EnvContext, Unset: true},
		{Name: "DOCKER_TLS_VERIFY", Unset: true},
		{Name: "DOCKER_CERT_PATH", Unset: true},
		{Name: "DOCKER_TLS", Unset: true},
	}
	return append(vars, extra...)
}

// PinK3dEnvironment applies vars (from K3dEnvironment) to this process, for the rest of its life.
//
// It is the only place occ changes its own environment, and it exists because k3d offers no other
// way in: its runtime reads the engine address from the environment on every call, and it caches
// some settings (its "fixes") process-wide on first use, so the values cannot be swapped back and
// forth either. One occ process therefore drives one Docker engine: pinning the same values again
// re-asserts them (something else in the process may have changed a variable since), different
// values are refused. Call it before every k3d library call.
func PinK3dEnvironment(vars []EnvVar) error { return processEnv.pin(vars) }

// processEnv guards the process environment k3d reads. It is process-wide state because the
// environment it stands for is.
var processEnv = &envPin{set: os.Setenv, unset: os.Unsetenv}

type envPin struct {
	mu     sync.Mutex
	pinned []EnvVar
	set    func(name, value string) error
	unset  func(name string) error
}

func (p *envPin) pin(vars []EnvVar) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	want := normalise(vars)
	if p.pinned != nil && !slices.Equal(p.pinned, want) {
		return fmt.Errorf("point k3d at %s: this process already pointed it at %s, and k3d keeps that setting for the life of the process; run one occ command per Docker engine", describe(want), describe(p.pinned))
	}
	for _, v := range want {
		var err error
		if v.Unset {
			err = p.unset(v.Name)
		} else {
			err = p.set(v.Name, v.Value)
		}
		if err != nil {
			return fmt.Errorf("point k3d at the Docker engine: set %s: %w", v, err)
		}
	}
	p.pinned = want
	return nil
}

// normalise keeps the last setting of each name, sorted by name, so equal intents compare equal.
func normalise(vars []EnvVar) []EnvVar {
	last := map[string]EnvVar{}
	for _, v := range vars {
		last[v.Name] = v
	}
	out := make([]EnvVar, 0, len(last))
	for _, v := range last {
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b EnvVar) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func describe(vars []EnvVar) string {
	parts := make([]string, 0, len(vars))
	for _, v := range vars {
		if !v.Unset {
			parts = append(parts, v.String())
		}
	}
	return strings.Join(parts, " ")
}
