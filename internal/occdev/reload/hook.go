package reload

import (
	"context"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/profile"
	"github.com/openclaw/occ/internal/occdev/profile/oce"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/occdev/step"
)

// hook is what a control plane gives `occ dev reload`, beside what every reload does (the
// generic checks, the rebuild, the import and verification, the record). Only steps is required.
type hook struct {
	// check makes the control plane's own checks of the recorded environment after the generic
	// ones, before anything is built (the Compose files unchanged, the Compose plugin found).
	check func(ctx context.Context, r *run) error
	// builds limits the recorded builds to those of the chosen services (names as `occ dev
	// status` lists them); nil repeats every build, since each of the control plane's
	// workloads may run any of its images.
	builds func(all []oce.RecordedBuild, services []string) ([]oce.RecordedBuild, error)
	// steps roll the control plane onto the rebuilt images, after their import and
	// verification and before the record.
	steps func(st state.State) []runStep
}

// chooseRecordedBuilds are the builds of the chosen services, through the hook.
func (h *hook) chooseRecordedBuilds(all []oce.RecordedBuild, services []string) ([]oce.RecordedBuild, error) {
	if h.builds == nil || len(services) == 0 {
		return all, nil
	}
	return h.builds(all, services)
}

// reloaderOf is the reload hook of a profile package, nil when the profile has no reload.
func reloaderOf(x profile.Profile) *hook {
	rl, ok := x.(profile.Reloader)
	if !ok {
		return nil
	}
	h := &hook{steps: func(st state.State) []runStep {
		return step.Adapt(rl.ReloadSteps(st), func(struct{}) profile.View { return profile.View{} },
			func(_ context.Context, r *run) (profile.ReloadEnv, error) { return env{r}, nil })
	}}
	if c, ok := x.(profile.ReloadChecker); ok {
		h.check = func(ctx context.Context, r *run) error { return c.CheckReload(ctx, env{r}) }
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

// hookOf is the reload hook of the control plane the state records by name, among the
// registered profiles. A control plane without one is refused before anything is checked or
// built, naming it and the control planes reload can roll; so is a name no registered profile
// has (a state another occ wrote).
func hookOf(dir, occ, name string, profiles map[string]profile.Profile) (*hook, error) {
	known := slices.Sorted(maps.Keys(profiles))
	x, ok := profiles[name]
	if !ok {
		return nil, reloadRefusal(dir, occ, "its control plane "+quoteName(name)+" is not one this occ knows ("+strings.Join(known, ", ")+")")
	}
	if h := reloaderOf(x); h != nil {
		return h, nil
	}
	var can []string
	for _, n := range known {
		if reloaderOf(profiles[n]) != nil {
			can = append(can, n)
		}
	}
	return nil, reloadRefusal(dir, occ, "its control plane "+quoteName(name)+" has no reload: occ dev reload rolls only a control plane whose profile gives reload steps ("+strings.Join(can, ", ")+")")
}

func quoteName(name string) string { return `"` + name + `"` }

// env is the reload as a profile's reload steps see it (profile.ReloadEnv).
type env struct{ r *run }

var _ profile.ReloadEnv = env{}

func (e env) Recorded() state.State                      { return e.r.st }
func (e env) State() *state.Dir                          { return e.r.dir }
func (e env) Conn() *kubeobj.Conn                        { return e.r.conn }
func (e env) StartupTimeout() time.Duration              { return e.r.opts.StartupTimeout }
func (e env) Chosen() []string                           { return e.r.chosen }
func (e env) Log() io.Writer                             { return e.r.log }
func (e env) Rolled() []string                           { return e.r.rolled }
func (e env) RewriteInstallation() ([]byte, bool, error) { return rewriteInstallation(e.r) }
func (e env) Engine() *docker.Engine                     { return e.r.engine }
func (e env) Refuse(why string) error {
	return reloadRefusal(e.r.dir.Path(), e.r.opts.OCCCommand, why)
}

func (e env) Rebuilt() []profile.Rebuilt {
	r := e.r
	var out []profile.Rebuilt
	for _, b := range r.builds {
		if l, ok := r.built[b.Role]; ok {
			out = append(out, profile.Rebuilt{Role: b.Role, Image: l, Services: b.Services, Changed: r.changed[b.Role], Imported: b.Imported})
		}
	}
	return out
}

func (e env) Roll(names ...string) {
	r := e.r
	for _, n := range names {
		if !slices.Contains(r.rolled, n) {
			r.rolled = append(r.rolled, n)
		}
	}
}
