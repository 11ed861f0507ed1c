package occdev

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/cluster/k3d"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/progress"
)

// newK3dProvider is the k3d provider of the plan: the API port (0: a free one, chosen at
// creation), the kubelet's disk threshold, k3d's timeout (the startup timeout, as the
// reference passes it to k3d), the sandbox RuntimeClass exempt from PodSecurity admission, and
// what the profile adds (a network to join, ports to publish).
func newK3dProvider(p *Plan) cluster.Provider {
	p.k3dLog = &lazyLog{path: filepath.Join(p.StateDir, k3dLogFile)}
	s := k3d.Settings{
		APIPort:                         p.APIPort,
		PodSecurityExemptRuntimeClasses: []string{RuntimeClassName},
		DiskThresholdPercent:            p.DiskThresholdPercent,
		Timeout:                         p.StartupTimeout,
		DNSResolver:                     p.DNSResolver,
		Log:                             p.k3dLog,
	}
	if p.profile.k3d != nil {
		p.profile.k3d(&s)
	}
	p.k3d = &k3d.ClusterProvider{Settings: s}
	return p.k3d
}

func describeCluster(p *Plan) Description {
	d := p.provider.Describe(clusterRequest(p, nil, nil, progress.Reporter{}))
	if d.Creates == nil {
		d.Creates = []string{}
	}
	return Description{Creates: d.Creates, Note: d.Note}
}

// k3dRecord is the record the k3d provider makes of the plan's cluster (its name is what
// identifies the record).
func k3dRecord(p *Plan) state.Object {
	return state.Object{Type: k3d.TypeCluster, Name: p.ClusterName}
}

// connectCluster lets the provider make the cluster available (the k3d provider creates it,
// recorded before k3d makes anything), then records how to reach it and which cluster it is
// (the kube-system uid), before anything is created inside it. A k3d creation that failed by
// itself, rather than being cancelled, is remembered: the rollback keeps its record for `down`.
func connectCluster(ctx context.Context, r *run, rep progress.Reporter) error {
	access, err := r.plan.provider.Ensure(ctx, r.clusterRequest(rep))
	if err != nil {
		if r.plan.k3d != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) && r.state.State().Has(k3dRecord(r.plan)) {
			r.clusterFailed.Store(true)
		}
		return err
	}
	owner := r.state.State().Owner()
	conn, err := kubeobj.Connect(access, kubeobj.Options{Owner: owner, Recorder: r.state})
	if err != nil {
		return err
	}
	uid, err := conn.UID(ctx)
	if err != nil {
		return err
	}
	if access.UID != "" && access.UID != uid {
		return fmt.Errorf("the %s provider reports cluster kube-system uid %s, but context %q reaches uid %s: refusing to install into a cluster it did not vouch for", r.plan.ClusterProvider, access.UID, access.Context, uid)
	}
	if rec := r.state.State().Cluster; rec.UID != "" && rec.UID != uid {
		return fmt.Errorf("this state records cluster kube-system uid %s, but context %q reaches uid %s: run occ dev down --state-dir %s first", rec.UID, access.Context, uid, r.state.Path())
	}
	access.UID = uid
	conn.Access = access
	if err := r.state.Update(func(s *state.State) { s.Cluster = access; s.PlatformNamespace = r.plan.Namespace }); err != nil {
		return fmt.Errorf("record the cluster in the state: %w", err)
	}
	r.conn = conn
	r.cluster.set()
	return nil
}
