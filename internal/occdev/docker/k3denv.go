package docker

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/openclaw/occ/internal/occdev/engine/locate"
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
		{Name: locate.EnvDockerHost, Value: ep.String()},
		{Name: EnvSock, Value: ep.Socket},
		{Name: locate.EnvDockerContext, Unset: true},
		{Name: "DOCKER_TLS_VERIFY", Unset: true},
		{Name: "DOCKER_CERT_PATH", Unset: true},
		{Name: "DOCKER_TLS", Unset: true},
	}
	return append(vars, extra...)
}

// PinK3dEnvironment applies vars (from K3dEnvironment) to this process and returns the function
// that puts back what each variable was before (set to its old value, or removed), whatever the
// pin changed.
//
// It is the only place occ changes its own environment, and it exists because k3d offers no other
// way in: its Docker runtime builds a docker CLI client from the environment on every call and
// takes no client of ours. The caller holds k3d calls to one at a time, pins before each and
// restores after it (the k3d provider does all three), so every call sees the engine it was meant
// for and nothing else in the process (a Compose plugin's environment, a later engine lookup)
// sees k3d's settings. A restore error is not returned: a variable that could be set a moment ago
// can be set again, and the pin of the next call sets all of them anyway.
func PinK3dEnvironment(vars []EnvVar) (restore func(), err error) { return processEnv.pin(vars) }

// processEnv applies environment settings; it is a value so tests can watch what it sets.
var processEnv = &envPin{set: os.Setenv, unset: os.Unsetenv, lookup: os.LookupEnv}

type envPin struct {
	mu     sync.Mutex
	set    func(name, value string) error
	unset  func(name string) error
	lookup func(name string) (string, bool)
}

func (p *envPin) pin(vars []EnvVar) (func(), error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	vars = normalise(vars)
	before := make([]EnvVar, 0, len(vars))
	for _, v := range vars {
		old, ok := p.lookup(v.Name)
		before = append(before, EnvVar{Name: v.Name, Value: old, Unset: !ok})
	}
	restore := func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		_ = p.apply(before)
	}
	if err := p.apply(vars); err != nil {
		_ = p.apply(before)
		return func() {}, fmt.Errorf("point k3d at the container engine: %w", err)
	}
	return restore, nil
}

func (p *envPin) apply(vars []EnvVar) error {
	for _, v := range vars {
		var err error
		if v.Unset {
			err = p.unset(v.Name)
		} else {
			err = p.set(v.Name, v.Value)
		}
		if err != nil {
			return fmt.Errorf("set %s: %w", v, err)
		}
	}
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
