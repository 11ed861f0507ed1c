package occdev

import (
	"context"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/profile"
	"github.com/openclaw/occ/internal/occdev/profile/oce"
	"github.com/openclaw/occ/internal/occdev/recorded"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/occdev/step"
)

// reloadHook is what a control plane gives `occ dev reload`, beside what every reload does (the
// generic checks, the rebuild, the import and verification, the record). Only steps is required.
type reloadHook struct {
	// check makes the control plane's own checks of the recorded environment after the generic
	// ones, before anything is built (the Compose files unchanged, the Compose plugin found).
	check func(ctx context.Context, r *run) error
	// builds limits the recorded builds to those of the chosen services (names as `occ dev
	// status` lists them); nil repeats every build, since each of the control plane's
	// workloads may run any of its images.
	builds func(all []oce.RecordedBuild, services []string) ([]oce.RecordedBuild, error)
	// steps roll the control plane onto the rebuilt images, after their import and
	// verification and before the record.
	steps func(st state.State) []Step
}

// chooseRecordedBuilds are the builds of the chosen services, through the hook.
func (h *reloadHook) chooseRecordedBuilds(all []oce.RecordedBuild, services []string) ([]oce.RecordedBuild, error) {
	if h.builds == nil || len(services) == 0 {
		return all, nil
	}
	return h.builds(all, services)
}

// reloaderOf is the reload hook of a profile package, nil when the profile has no reload.
func reloaderOf(x profile.Profile) *reloadHook {
	rl, ok := x.(profile.Reloader)
	if !ok {
		return nil
	}
	h := &reloadHook{steps: func(st state.State) []Step {
		return step.Adapt(rl.ReloadSteps(st), (*Plan).view, func(_ context.Context, r *run) (profile.ReloadEnv, error) { return reloadEnv{r}, nil })
	}}
	if c, ok := x.(profile.ReloadChecker); ok {
		h.check = func(ctx context.Context, r *run) error { return c.CheckReload(ctx, reloadEnv{r}) }
	}
	if c, ok := x.(profile.BuildChooser); ok {
		h.builds = func(all []oce.RecordedBuild, services []string) ([]oce.RecordedBuild, error) {
			chosen, err := c.ChooseBuilds(asBuilds(all), services)
			if err != nil {
				return nil, err
			}
			var out []oce.RecordedBuild
			for _, b := range all {
				if slices.ContainsFunc(chosen, func(c profile.Build) bool { return c.Role == b.Role }) {
					out = append(out, b)
				}
			}
			return out, nil
		}
	}
	return h
}

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

// reloadHookOf is the reload hook of the control plane the state records by name. A control
// plane without one is refused before anything is checked or built, naming it and the control
// planes reload can roll; so is a name no registered profile has (a state another occ wrote).
func reloadHookOf(dir, occ, name string, d deps) (*reloadHook, error) {
	table := controlPlanes(UpOptions{deps: d})
	x, ok := table[ControlPlane(name)]
	if !ok {
		return nil, reloadRefusal(dir, occ, "its control plane "+quoteName(name)+" is not one this occ knows ("+strings.Join(knownControlPlanes(table), ", ")+")")
	}
	if h := reloaderOf(x); h != nil {
		return h, nil
	}
	var can []string
	for _, n := range knownControlPlanes(table) {
		if reloaderOf(table[ControlPlane(n)]) != nil {
			can = append(can, n)
		}
	}
	return nil, reloadRefusal(dir, occ, "its control plane "+quoteName(name)+" has no reload: occ dev reload rolls only a control plane whose profile gives reload steps ("+strings.Join(can, ", ")+")")
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

func quoteName(name string) string { return `"` + name + `"` }

// reloadEnv is the reload as a profile's reload steps see it (profile.ReloadEnv).
type reloadEnv struct{ r *run }

var _ profile.ReloadEnv = reloadEnv{}

func (e reloadEnv) Recorded() state.State                      { return e.r.reload.st }
func (e reloadEnv) State() *state.Dir                          { return e.r.state }
func (e reloadEnv) Conn() *kubeobj.Conn                        { return e.r.conn }
func (e reloadEnv) StartupTimeout() time.Duration              { return e.r.plan.StartupTimeout }
func (e reloadEnv) Chosen() []string                           { return e.r.reload.chosen }
func (e reloadEnv) Log() io.Writer                             { return e.r.log }
func (e reloadEnv) Rolled() []string                           { return e.r.reload.rolled }
func (e reloadEnv) RewriteInstallation() ([]byte, bool, error) { return rewriteInstallation(e.r) }
func (e reloadEnv) Engine() *docker.Engine                     { return e.r.engine }
func (e reloadEnv) Refuse(why string) error {
	return reloadRefusal(e.r.state.Path(), e.r.reload.opts.OCCCommand, why)
}

func (e reloadEnv) Rebuilt() []profile.Rebuilt {
	rr := e.r.reload
	var out []profile.Rebuilt
	for _, b := range rr.builds {
		if l, ok := rr.built[b.Role]; ok {
			out = append(out, profile.Rebuilt{Role: b.Role, Image: l, Services: b.Services, Changed: rr.changed[b.Role], Imported: b.Imported})
		}
	}
	return out
}

func (e reloadEnv) Roll(names ...string) {
	rr := e.r.reload
	for _, n := range names {
		if !slices.Contains(rr.rolled, n) {
			rr.rolled = append(rr.rolled, n)
		}
	}
}

// recordedEnv is a recorded environment as a profile's status reads it (profile.Recorded).
type recordedEnv struct{ rec *recorded.Env }

var _ profile.Recorded = recordedEnv{}

func (e recordedEnv) State() state.State                                 { return e.rec.State() }
func (e recordedEnv) Engine(ctx context.Context) (*docker.Engine, error) { return e.rec.Engine(ctx) }
func (e recordedEnv) Conn(ctx context.Context) (*kubeobj.Conn, error)    { return e.rec.Kube(ctx) }
