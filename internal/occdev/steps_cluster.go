package occdev

import (
	"context"
	"fmt"

	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/progress"
)

func describeCluster(p *Plan) Description {
	d := p.provider.Describe(clusterRequest(p, nil, nil, progress.Reporter{}))
	if d.Creates == nil {
		d.Creates = []string{}
	}
	return Description{Creates: d.Creates, Note: d.Note}
}

// connectCluster lets the provider make the cluster available, then records how to reach it
// and which cluster it is (the kube-system uid), before anything is created inside it.
func connectCluster(ctx context.Context, r *run, rep progress.Reporter) error {
	access, err := r.plan.provider.Ensure(ctx, r.clusterRequest(rep))
	if err != nil {
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
	return nil
}
