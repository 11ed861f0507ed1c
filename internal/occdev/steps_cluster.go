package occdev

import (
	"context"
	"fmt"

	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/progress"
)

// withProvider opens the plan's provider for a call that needs no run (the dry run's
// description and checks, which perform no I/O) and closes it again.
func withProvider[T any](p *Plan, fn func(cluster.Provider) T) T {
	pr := p.openProvider()
	defer pr.Close()
	return fn(pr)
}

// importsImages says whether the plan's cluster runs only images occ imports into its node.
func (p *Plan) importsImages() bool {
	return withProvider(p, func(pr cluster.Provider) bool {
		_, ok := pr.(cluster.Importer)
		return ok
	})
}

func describeCluster(p *Plan) Description {
	d := withProvider(p, func(pr cluster.Provider) cluster.Description {
		return pr.Describe(clusterRequest(p, nil, nil, progress.Reporter{}))
	})
	if d.Creates == nil {
		d.Creates = []string{}
	}
	return d.Description
}

// connectCluster lets the provider make the cluster available (the k3d provider creates it,
// recorded before k3d makes anything), then records how to reach it and which cluster it is
// (the kube-system uid), before anything is created inside it. A provider that creates its
// cluster may hand over the Access as soon as the API answers (cluster.Request.Ready): the steps
// waiting for the cluster start there, while the provider finishes it within this step. A failed
// Ensure that left a record the provider says `down` must check again (cluster.KeptError) is
// remembered: the rollback keeps that record for `down`.
func connectCluster(ctx context.Context, r *run, rep progress.Reporter) error {
	req := r.clusterRequest(rep)
	req.Ready = r.useCluster
	access, err := r.provider.Ensure(ctx, req)
	if err != nil {
		if kept, ok := cluster.Kept(err); ok {
			r.keptCluster.Store(&kept)
		}
		return err
	}
	if r.cluster.IsSet() {
		return nil
	}
	return r.useCluster(ctx, access)
}

// useCluster connects to the cluster access reaches, checks it is the one the provider vouched
// for and the state recorded, records the access, and tells the lanes waiting for the cluster.
func (r *run) useCluster(ctx context.Context, access cluster.Access) error {
	st := r.state.State()
	conn, err := kubeobj.ConnectVouched(ctx, access, kubeobj.Options{Owner: st.Owner(), Recorder: r.state}, r.plan.ClusterProvider, st.Cluster.UID, r.state.Path())
	if err != nil {
		return err
	}
	if err := r.state.Update(func(s *state.State) { s.Cluster = conn.Access; s.PlatformNamespace = r.plan.Namespace }); err != nil {
		return fmt.Errorf("record the cluster in the state: %w", err)
	}
	r.conn = conn
	r.cluster.Set()
	return nil
}
