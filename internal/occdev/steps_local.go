package occdev

import (
	"context"
	"errors"
	"fmt"

	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/progress"
)

func describePreflight(p *Plan) Description {
	return note("nothing created; checks that the kubeconfig, its context and the cluster answer, before anything is downloaded")
}

// preflight makes the provider's cheap live checks before anything slow or anything that
// leaves a trace: an unreachable cluster fails here, not after a download.
func preflight(ctx context.Context, r *run, rep progress.Reporter) error {
	return r.plan.provider.Preflight(ctx, r.clusterRequest(rep))
}

func describeState(p *Plan) Description {
	return creates("directory " + p.StateDir + " (0700, locked), its marker and state.json (0600), before anything else")
}

// claimState creates the private state directory, takes its lock, and writes the marker and
// state.json before anything outside the directory is changed.
func claimState(_ context.Context, r *run, _ progress.Reporter) error {
	if r.state != nil {
		return nil // already claimed and locked by this run
	}
	d, err := state.Create(r.plan.StateDir, state.State{
		Profile: string(r.plan.ControlPlane),
		Cluster: state.Cluster{Provider: r.plan.ClusterProvider},
	})
	if err != nil {
		if errors.Is(err, state.ErrInUse) || errors.Is(err, state.ErrExists) {
			return err
		}
		return fmt.Errorf("claim state directory %s: %w", r.plan.StateDir, err)
	}
	r.state = d
	return nil
}
