package occdev

import (
	"context"
	"fmt"
	"github.com/openclaw/occ/internal/occdev/profile/composeprofile"
	"os"
	"slices"
	"strings"

	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/controlplane/compose"
	"github.com/openclaw/occ/internal/occdev/profile/oce"
	"github.com/openclaw/occ/internal/progress"
)

// composeReload is how `occ dev reload` rolls the Compose control plane: it checks that the
// recorded Compose model still holds, rebuilds the images of the chosen services, and recreates
// the services of the rebuilt images from the recorded snapshot.
func composeReload() *reloadHook {
	return &reloadHook{check: checkComposeReloadable, builds: composeServiceBuilds, steps: composeReloadSteps}
}

// composeReloadSteps roll the Compose control plane onto the rebuilt images: the Installation
// names the rebuilt Agent runtime, the long-running services whose containers do not run their
// rebuilt image are recreated from the recorded snapshot (and the API services when the
// Installation changed), and the API and the worker are waited for as `up` waits for them.
func composeReloadSteps() []Step {
	return []Step{
		{Name: "Point the Installation at the rebuilt Agent runtime", Run: func(_ context.Context, r *run, _ progress.Reporter) error {
			_, _, err := rewriteInstallation(r)
			return err
		}},
		{Name: "Recreate the services of the rebuilt images", Run: recreateServices},
		{Name: "Wait for the API and the worker to be ready", Run: waitReloadedAPI},
	}
}

// checkComposeReloadable refuses a reload of Compose files changed since `up` (reload repeats
// the recorded model), finds the Compose plugin, and readies the runner of the recorded
// snapshot and the stack of the recorded project on the recorded engine.
func checkComposeReloadable(ctx context.Context, r *run) error {
	rr := r.reload
	cp := rr.st.ControlPlane
	if cp.Compose == nil {
		return nil
	}
	dir := r.state.Path()
	changed, err := composeprofile.ChangedSources(dir)
	if err != nil {
		return err
	}
	if len(changed) > 0 {
		return reloadRefusal(dir, rr.opts.OCCCommand, "its Compose files changed since occ dev up ("+strings.Join(changed, ", ")+"), and reload repeats the recorded Compose model")
	}
	plugin, err := compose.FindPlugin(ctx, compose.FindPluginOptions{DockerConfig: os.Getenv("DOCKER_CONFIG")})
	if err != nil {
		return err
	}
	rr.runner = compose.Runner{Plugin: plugin, Endpoint: r.engine.Endpoint.String(),
		Snapshot: compose.Snapshot{Path: cp.Compose.Snapshot, Project: cp.Compose.Project, Checkout: cp.Compose.Checkout}}
	rr.stack = compose.Stack{Project: cp.Compose.Project, Engine: r.engine.API}
	return nil
}

// composeServiceBuilds are the builds whose images the chosen Compose services run; a choice
// that runs none is refused naming the services built from the checkout.
func composeServiceBuilds(all []oce.RecordedBuild, services []string) ([]oce.RecordedBuild, error) {
	var out []oce.RecordedBuild
	for _, b := range all {
		if slices.ContainsFunc(b.Services, func(s string) bool { return slices.Contains(services, s) }) {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		return nil, noBuildOf(services, all)
	}
	return out, nil
}

// recreateServices recreates exactly the affected services: each long-running service of a
// rebuilt image whose container runs another image, and the controller and worker-kubernetes
// when the Agent runtime changed (they read the Installation, a read-only mount of the file
// just replaced). A service not chosen is left alone. The one-shot jobs are never run again.
func recreateServices(ctx context.Context, r *run, rep progress.Reporter) error {
	rr := r.reload
	started := startedServices(rr.st.ControlPlane.Compose)
	var candidates []string
	for _, b := range rr.builds {
		candidates = append(candidates, b.Services...)
	}
	running, err := rr.stack.ServiceImages(ctx, candidates...)
	if err != nil {
		return err
	}
	var affected []string
	add := func(svc string) {
		if slices.Contains(affected, svc) || slices.Contains(compose.JobServices, svc) || !slices.Contains(started, svc) {
			return
		}
		if rr.chosen != nil && !slices.Contains(rr.chosen, svc) {
			return
		}
		affected = append(affected, svc)
	}
	for _, b := range rr.builds {
		l, ok := rr.built[b.Role]
		if !ok {
			continue
		}
		for _, svc := range b.Services {
			if running[svc] != l.ID {
				add(svc)
			}
		}
	}
	if rr.changed[roleRuntime] {
		for _, svc := range compose.APIServices {
			add(svc)
		}
	}
	// Recreated in the order `up` starts them.
	slices.SortStableFunc(affected, func(a, b string) int { return slices.Index(started, a) - slices.Index(started, b) })
	if len(affected) == 0 {
		rep.Note("every service runs its rebuilt image")
		return nil
	}
	rep.Note("recreating " + strings.Join(affected, ", "))
	if err := compose.Recreate(ctx, rr.runner, affected); err != nil {
		return err
	}
	rr.rolled = affected
	return nil
}

// waitReloadedAPI waits for the API's session endpoint and the worker's readiness together, as
// `up` does; also when nothing was recreated now, since a reload interrupted after recreating
// them left them starting.
func waitReloadedAPI(ctx context.Context, r *run, _ progress.Reporter) error {
	rr := r.reload
	wctx, cancel := context.WithTimeout(ctx, r.plan.StartupTimeout)
	defer cancel()
	if err := controlplane.WaitReady(wctx, controlplane.ReadinessOptions{
		APIURL: rr.st.ControlPlane.APIURL, Checks: []controlplane.ReadinessCheck{rr.stack.ReadinessCheck()},
	}); err != nil {
		if len(rr.rolled) > 0 {
			return fmt.Errorf("the recreated %s: %w", strings.Join(rr.rolled, ", "), err)
		}
		return err
	}
	return nil
}
