package occdev

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/openclaw/occ/internal/occdev/helmrelease"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/state"
)

// recorded holds the connections to what a state records, each made from the record alone (the
// recorded cluster access and owner; later the recorded engine endpoint), never from the
// environment `down` runs in. They are made lazily, on the first record that needs one, and
// shared by every record and by status.
type recorded struct {
	st   state.State
	kube func(context.Context) (*kubeobj.Conn, error)
}

func connectRecorded(st state.State) *recorded {
	return &recorded{st: st, kube: kubeobj.Recorded(st.Cluster, st.Owner())}
}

// removers is the registry `down`, rollback and `status` use: one Remover per recorded type.
// Registering a new type is one line here plus its Remover in the layer that creates it, for
// example
//
//	state.TypeK3dCluster: k3d.Remover(r.st.Cluster, r.docker),
func (r *recorded) removers() state.Removers {
	return state.Removers{
		state.TypeKubernetes:  kubeobj.Remover(r.kube),
		state.TypeHelmRelease: helmrelease.Remover(r.kube),
	}
}

// cleanup removes the recorded objects in reverse creation order through the registry and
// forgets each once it is gone, so a partial cleanup leaves a record of exactly what remains.
// Failures are collected (each distinct cause once: an unreachable cluster fails every object
// the same way) and cleanup continues with the next object. It returns what it forgot.
func cleanup(ctx context.Context, d *state.Dir, log io.Writer) (*DownResult, error) {
	st := d.State()
	res := &DownResult{StateDirectory: d.Path(), Removed: []string{}, LeftAlone: []string{}}
	reg := connectRecorded(st).removers()
	var errs []error
	seen := map[string]bool{}
	for i := len(st.Objects) - 1; i >= 0; i-- {
		o := st.Objects[i]
		rm, err := reg.Remove(ctx, o)
		if err != nil {
			if !seen[err.Error()] {
				seen[err.Error()] = true
				errs = append(errs, err)
			}
			continue
		}
		switch rm.Outcome {
		case state.LeftAlone:
			fmt.Fprintf(log, "left %s alone: %s\n", o, rm.Detail)
			res.LeftAlone = append(res.LeftAlone, o.String())
		case state.AlreadyGone:
			fmt.Fprintf(log, "%s was already gone\n", o)
			res.Removed = append(res.Removed, o.String())
		default:
			fmt.Fprintf(log, "removed %s\n", o)
			res.Removed = append(res.Removed, o.String())
		}
		if err := d.Forget(o); err != nil {
			errs = append(errs, err)
		}
	}
	return res, errors.Join(errs...)
}
