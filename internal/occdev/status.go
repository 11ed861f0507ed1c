package occdev

import (
	"context"

	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/observe"
	"github.com/openclaw/occ/internal/occdev/profile"
	"github.com/openclaw/occ/internal/occdev/profile/oce"
	"github.com/openclaw/occ/internal/occdev/recorded"
	"github.com/openclaw/occ/internal/occdev/state"
)

// StatusOptions are the settings of `occ dev status`.
type StatusOptions struct {
	// StateDir and Environment select the environment as they do for up.
	StateDir    string
	Environment string

	deps deps
}

// GetStatus is `occ dev status`: observe.GetStatus, with the parts of the registered cluster
// providers and control-plane profiles.
func GetStatus(ctx context.Context, opts StatusOptions) (*observe.Status, error) {
	return observe.GetStatus(ctx, opts.StateDir, opts.Environment, statusParts(opts.deps))
}

// statusParts are the status sections the registered parts supply: the record a cluster
// provider keeps of the cluster it created, and the control plane as its profile reads it.
func statusParts(d deps) observe.Parts {
	return observe.Parts{
		ClusterRecordType: clusterRecordType,
		ControlPlane: func(ctx context.Context, st state.State, rec *recorded.Env) *profile.Status {
			if hook := statusHookOf(st.Profile, d); hook != nil {
				return hook(ctx, rec)
			}
			if st.ControlPlane != nil {
				// A profile without a status of its own, or one this occ does not know: the
				// recorded OCE control plane alone.
				return oce.Status(ctx, st.ControlPlane)
			}
			return nil
		},
	}
}

// clusterRecordType is the type of the record the recorded cluster's provider keeps of the
// cluster it created; empty for a provider that keeps none (or a name this occ does not know).
func clusterRecordType(provider string) state.Type {
	cp, ok := providers()[provider]
	if !ok {
		return ""
	}
	p := cp.Open()
	defer p.Close()
	if k, ok := p.(cluster.Keeper); ok {
		return k.RecordType()
	}
	return ""
}
