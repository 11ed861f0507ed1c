package occdev

import (
	"context"
	"slices"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/profile"
	"github.com/openclaw/occ/internal/occdev/recorded"
	"github.com/openclaw/occ/internal/occdev/state"
)

// statusOf is the status hook of a profile package, nil when the profile has none.
func statusOf(x profile.Profile) func(ctx context.Context, rec *recorded.Env) *profile.Status {
	sr, ok := x.(profile.StatusReader)
	if !ok {
		return nil
	}
	return func(ctx context.Context, rec *recorded.Env) *profile.Status {
		return sr.Status(ctx, recordedEnv{rec})
	}
}

// statusHookOf is the status hook of the control plane the state records by name; nil (a
// profile without one, or a name no registered profile has) reports the recorded OCE control
// plane alone.
func statusHookOf(name string, d deps) func(ctx context.Context, rec *recorded.Env) *profile.Status {
	return statusOf(controlPlanes(UpOptions{deps: d})[ControlPlane(name)])
}

// knownControlPlanes are the registered control planes' names, sorted.
func knownControlPlanes(table map[ControlPlane]profile.Profile) []string {
	var names []string
	for n := range table {
		names = append(names, string(n))
	}
	slices.Sort(names)
	return names
}

// recordedEnv is a recorded environment as a profile's status reads it (profile.Recorded).
type recordedEnv struct{ rec *recorded.Env }

var _ profile.Recorded = recordedEnv{}

func (e recordedEnv) State() state.State                                 { return e.rec.State() }
func (e recordedEnv) Engine(ctx context.Context) (*docker.Engine, error) { return e.rec.Engine(ctx) }
func (e recordedEnv) Conn(ctx context.Context) (*kubeobj.Conn, error)    { return e.rec.Kube(ctx) }
