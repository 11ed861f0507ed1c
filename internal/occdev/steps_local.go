package occdev

import (
	"context"
	"fmt"

	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/progress"
)

func describePreflight(p *Plan) Description {
	checks := withProvider(p, func(pr cluster.Provider) string {
		return pr.Describe(clusterRequest(p, nil, nil, progress.Reporter{})).Preflight
	})
	if !p.Engine.IsZero() {
		return note("nothing created; checks that the " + engineName(p) + " engine at " + p.Engine.String() + " (from " + p.EngineSource + ") answers, that " + checks + ", before anything is downloaded")
	}
	return note("nothing created; checks that " + checks + ", before anything is downloaded")
}

// preflight makes the cheap live checks before anything slow or anything that leaves a trace:
// a missing or stopped Docker engine, or an unreachable cluster, fails here, not after a
// download. The engine is the plan's (located while planning for a provider that runs its
// cluster in containers), not the provider's: the image steps use it too.
func preflight(ctx context.Context, r *run, rep progress.Reporter) error {
	// The provider's local rules first (the dry run reports the same), so a request it would
	// refuse half-way is refused before anything is contacted.
	if err := r.provider.Check(r.clusterRequest(rep)); err != nil {
		return err
	}
	if !r.plan.Engine.IsZero() && r.engine == nil {
		var err error
		if r.engine, err = docker.ConnectAs(ctx, r.plan.Engine, r.plan.EngineSource, engineKind(r.plan)); err != nil {
			if nf := r.plan.engineNotFound; nf != nil {
				// Nothing answered anywhere while planning, and Docker's place still does not:
				// every place looked at is named, with what each said.
				return nf
			}
			return err
		}
		rep.Note(fmt.Sprintf("%s %s (API %s) at %s", engineName(r.plan), r.engine.Identity.Version, r.engine.Identity.APIVersion, r.plan.Engine))
		// Every pinned image is checked against the engine's platform after its pull; the
		// engine is asked once here rather than once per image.
		if r.enginePlatform, err = images.EnginePlatform(ctx, r.engine.Verbs(), r.engine.Name()); err != nil {
			return err
		}
		r.offlineEngine()
	}
	if err := openBundle(ctx, r, rep); err != nil {
		return err
	}
	if err := r.provider.Preflight(ctx, r.clusterRequest(rep)); err != nil {
		return err
	}
	return r.plan.profile.Preflight(ctx, r, rep)
}

func describeState(p *Plan) Description {
	records := "written before anything else"
	if !p.Engine.IsZero() {
		records = "recording the " + engineName(p) + " engine " + p.Engine.String() + ", written before anything else"
	}
	return state.DescribeClaim(p.StateDir, records)
}

// claimState creates the private state directory, takes its lock, and writes the marker and
// state.json before anything outside the directory is changed.
func claimState(ctx context.Context, r *run, _ progress.Reporter) error {
	if r.state != nil {
		return nil // already claimed and locked by this run
	}
	initial := state.State{
		Environment: r.plan.Environment,
		Profile:     string(r.plan.ControlPlane),
		// The name of a cluster occ creates is known now: a run killed before it connects
		// still leaves down what it needs to find the staging tags named after the cluster.
		Cluster:    state.Cluster{Provider: r.plan.ClusterProvider, Name: r.plan.ClusterName},
		Selections: r.plan.selections(),
	}
	if r.bundle != nil {
		initial.Selections.BundlePins = r.bundle.Contents.Pins.Digest
	}
	// The engine is recorded with the marker, before any image or container exists: `down` and
	// `status` reach exactly this engine, whatever DOCKER_HOST says when they run.
	if r.engine != nil {
		id, err := docker.IDOf(ctx, r.engine)
		if err != nil {
			return err
		}
		initial.Engine = &state.Engine{Kind: engineKind(r.plan), Endpoint: r.engine.Endpoint.String(), ID: id}
	}
	d, err := state.Claim(r.plan.StateDir, initial)
	if err != nil {
		return err
	}
	r.state = d
	return nil
}

// engineKind is the plan's engine kind as the state records it: what the engine said it is, and
// Docker when it was not identified while planning (the preflight then connected to Docker's
// place).
func engineKind(p *Plan) engine.Kind { return p.EngineKind.OrDocker() }

// engineName is the plan's engine kind as people write it.
func engineName(p *Plan) string { return engineKind(p).Name() }
