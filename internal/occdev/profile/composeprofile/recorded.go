package composeprofile

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/controlplane/compose"
	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/profile"
	"github.com/openclaw/occ/internal/occdev/profile/oce"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/progress"
)

// What the Compose profile adds to the commands on a recorded environment: its reload (the
// services of the rebuilt images recreated from the recorded snapshot) and its status (the
// recorded project's services, read through the recorded engine).
var (
	_ profile.Reloader      = Profile{}
	_ profile.ReloadChecker = Profile{}
	_ profile.BuildChooser  = Profile{}
	_ profile.StatusReader  = Profile{}
)

// CheckReload refuses a reload of Compose files changed since `up` (reload repeats the
// recorded model) and finds the Compose plugin the steps run the snapshot with.
func (Profile) CheckReload(ctx context.Context, env profile.ReloadEnv) error {
	cp := env.Recorded().ControlPlane
	if cp == nil || cp.Compose == nil {
		return nil
	}
	changed, err := ChangedSources(env.State().Path())
	if err != nil {
		return err
	}
	if len(changed) > 0 {
		return env.Refuse("its Compose files changed since occ dev up (" + strings.Join(changed, ", ") + "), and reload repeats the recorded Compose model")
	}
	_, err = findPlugin(ctx)
	return err
}

// findPlugin finds the Compose plugin: the docker CLI's plugin directories, DOCKER_CONFIG's
// first, as `up`'s preflight and reload's check and recreation look for it.
func findPlugin(ctx context.Context) (compose.Plugin, error) {
	return compose.FindPlugin(ctx, compose.FindPluginOptions{DockerConfig: os.Getenv("DOCKER_CONFIG")})
}

// recordedStack is the recorded project on the engine eng.
func recordedStack(p *state.ComposeProject, eng *docker.Engine) compose.Stack {
	return compose.Stack{Project: p.Project, Engine: eng.Verbs()}
}

// ChooseBuilds are the builds whose images the chosen services run. A one-shot job (migrate,
// bootstrap) is refused: `up` runs it once and reload never runs it again, so naming it would
// rebuild an image nothing restarts.
func (Profile) ChooseBuilds(all []profile.Build, services []string) ([]profile.Build, error) {
	for _, s := range services {
		if slices.Contains(compose.JobServices, s) {
			return nil, fmt.Errorf("%s is a one-shot job occ dev up runs once, and reload never runs it again (naming it would only rebuild an image nothing restarts): to rerun it, run occ dev down and occ dev up; reload the long-running services by name (%s), or all of them by naming none",
				s, strings.Join(compose.APIServices, ", "))
		}
	}
	var out []profile.Build
	for _, b := range all {
		if slices.ContainsFunc(b.Services, func(s string) bool { return slices.Contains(services, s) }) {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		return nil, profile.NoBuildOf(services, all)
	}
	return out, nil
}

// ReloadSteps roll the Compose control plane onto the rebuilt images: the Installation names the
// rebuilt Agent runtime, the long-running services whose containers do not run their rebuilt
// image are recreated from the recorded snapshot (and the API services when the Installation
// changed), the recreated API services are admitted to the private route (when `up` set one
// up), and the API and the worker are waited for as `up` waits for them.
func (Profile) ReloadSteps(st state.State) []profile.ReloadStep {
	steps := []profile.ReloadStep{
		{Name: "Point the Installation at the rebuilt Agent runtime", Run: func(_ context.Context, env profile.ReloadEnv, _ progress.Reporter) error {
			_, _, err := env.RewriteInstallation()
			return err
		}},
		{Name: "Recreate the services of the rebuilt images", Run: recreateServices},
	}
	if hasRoute(st) {
		steps = append(steps, profile.ReloadStep{Name: readmitStep, Run: readmitServices})
	}
	return append(steps, profile.ReloadStep{Name: "Wait for the API and the worker to be ready", Run: waitReloadedAPI})
}

// recreateServices recreates exactly the affected services: each long-running service of a
// rebuilt image whose container does not run it (another image, or none: a recreation that a
// kill cut short leaves the service stopped), and the controller and worker-kubernetes
// when the Agent runtime changed (they read the Installation, a read-only mount of the file
// just replaced), and with them every started service that shares their namespaces. Any other
// service not chosen is left alone. The one-shot jobs are never run again.
func recreateServices(ctx context.Context, env profile.ReloadEnv, rep progress.Reporter) error {
	p := env.Recorded().ControlPlane.Compose
	plugin, err := findPlugin(ctx)
	if err != nil {
		return err
	}
	runner := compose.Runner{Plugin: plugin, Endpoint: env.Engine().Endpoint.String(), Snapshot: compose.RecordedSnapshot(*p)}
	stack := recordedStack(p, env.Engine())
	started := StartedServices(p)
	rebuilt := env.Rebuilt()
	var candidates []string
	for _, b := range rebuilt {
		candidates = append(candidates, b.Services...)
	}
	running, err := stack.ServiceImages(ctx, candidates...)
	if err != nil {
		return err
	}
	chosen := env.Chosen()
	var affected []string
	add := func(svc string) {
		if slices.Contains(affected, svc) || slices.Contains(compose.JobServices, svc) || !slices.Contains(started, svc) {
			return
		}
		if chosen != nil && !slices.Contains(chosen, svc) {
			return
		}
		affected = append(affected, svc)
	}
	for _, b := range rebuilt {
		for _, svc := range b.Services {
			if running[svc] != b.Image.ID {
				add(svc)
			}
		}
		if b.Role == oce.RoleRuntime && b.Changed {
			for _, svc := range compose.APIServices {
				add(svc)
			}
		}
	}
	// Recreated in the order `up` starts them, with the services that share their namespaces
	// (chosen or not: left alone, those would run cut off from them).
	slices.SortStableFunc(affected, func(a, b string) int { return slices.Index(started, a) - slices.Index(started, b) })
	if len(affected) > 0 {
		project, err := compose.LoadSnapshot(ctx, compose.RecordedSnapshot(*p))
		if err != nil {
			return err
		}
		affected = compose.Sharers(project, started, affected)
	}
	if len(affected) == 0 {
		rep.Note("every service runs its rebuilt image")
		return nil
	}
	rep.Note("recreating " + strings.Join(affected, ", "))
	if err := compose.Recreate(ctx, runner, stack, affected); err != nil {
		return err
	}
	env.Roll(affected...)
	return nil
}

// waitReloadedAPI waits for the API's session endpoint and the worker's readiness together, as
// `up` does; also when nothing was recreated now, since a reload interrupted after recreating
// them left them starting.
func waitReloadedAPI(ctx context.Context, env profile.ReloadEnv, _ progress.Reporter) error {
	stack := recordedStack(env.Recorded().ControlPlane.Compose, env.Engine())
	wctx, cancel := context.WithTimeout(ctx, env.StartupTimeout())
	defer cancel()
	if err := controlplane.WaitReady(wctx, controlplane.ReadinessOptions{
		APIURL: env.Recorded().ControlPlane.APIURL, Checks: []controlplane.ReadinessCheck{stack.ReadinessCheck()},
	}); err != nil {
		if rolled := env.Rolled(); len(rolled) > 0 {
			return fmt.Errorf("the recreated %s: %w", strings.Join(rolled, ", "), err)
		}
		return err
	}
	return nil
}

// Status is the Compose control plane: the recorded OCE control plane, its Compose project and
// the state of each service `up` started, read through the recorded engine.
func (Profile) Status(ctx context.Context, rec profile.Recorded) *profile.Status {
	cp := rec.State().ControlPlane
	if cp == nil {
		return nil
	}
	out := oce.Status(ctx, cp)
	if cp.Compose == nil {
		return out
	}
	out.ComposeProject = cp.Compose.Project
	if eng, err := rec.Engine(ctx); err != nil {
		out.ServicesProblem = err.Error()
	} else if states, err := recordedStack(cp.Compose, eng).Status(ctx, StartedServices(cp.Compose)...); err != nil {
		out.ServicesProblem = err.Error()
	} else {
		for _, s := range states {
			out.Services = append(out.Services, profile.ServiceStatus{Service: s.Service, State: s.String()})
		}
	}
	return out
}

// StartedServices are the services the recorded project's `up` started (a record written
// before the list was kept names the profile's own).
func StartedServices(p *state.ComposeProject) []string {
	if len(p.Started) > 0 {
		return p.Started
	}
	return compose.RequiredServices
}
