package k3d

import (
	"context"
	"fmt"
	"sync"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/state"
)

// Remover is the state.Remover of recorded k3d clusters, built from the recorded state alone:
// engine connects to the recorded engine (docker.Recorded, never DOCKER_HOST), and the recorded
// cluster access carries the kube-system UID checked before anything is deleted.
func Remover(access state.Cluster, engine func(context.Context) (*docker.Engine, error)) state.Remover {
	return &remover{access: access, engine: engine}
}

type remover struct {
	access state.Cluster
	engine func(context.Context) (*docker.Engine, error)

	mu sync.Mutex
	p  *Provider
}

func (r *remover) provider(ctx context.Context) (*Provider, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.p != nil {
		return r.p, nil
	}
	eng, err := r.engine(ctx)
	if err != nil {
		return nil, err
	}
	if r.p, err = New(Options{Engine: eng}); err != nil {
		return nil, err
	}
	return r.p, nil
}

// identity reads the record; the UID is the recorded access's when it names this cluster.
func (r *remover) identity(o state.Object) (Identity, error) {
	uid := ""
	if r.access.Provider == Name && r.access.Name == o.Name {
		uid = r.access.UID
	}
	return IdentityOf(o, uid)
}

// Remove implements state.Remover.
func (r *remover) Remove(ctx context.Context, o state.Object) (state.Removal, error) {
	id, err := r.identity(o)
	if err != nil {
		return state.Removal{}, err
	}
	p, err := r.provider(ctx)
	if err != nil {
		return state.Removal{}, err
	}
	st, f, err := p.inspect(ctx, id)
	if err != nil {
		return state.Removal{}, err
	}
	switch st.State {
	case StateMissing:
		return state.Removal{Outcome: state.AlreadyGone}, nil
	case StateNotOurs:
		return state.Removal{Outcome: state.LeftAlone, Detail: st.Reason}, nil
	}
	if err := p.deleteInspected(ctx, id, st, f); err != nil {
		return state.Removal{}, err
	}
	return state.Removal{Outcome: state.Removed}, nil
}

// Inspect implements state.Remover.
func (r *remover) Inspect(ctx context.Context, o state.Object) state.Inspection {
	id, err := r.identity(o)
	if err != nil {
		return state.Inspection{State: state.Unknown, Detail: err.Error()}
	}
	p, err := r.provider(ctx)
	if err != nil {
		return state.Inspection{State: state.Unknown, Detail: err.Error()}
	}
	st, err := p.Inspect(ctx, id)
	if err != nil {
		return state.Inspection{State: state.Unknown, Detail: err.Error()}
	}
	return inspection(st, id)
}

// inspection maps a cluster Status onto the liveness `occ dev status` reports.
func inspection(st Status, id Identity) state.Inspection {
	switch st.State {
	case StateMissing:
		return state.Inspection{State: state.Missing}
	case StateNotOurs:
		return state.Inspection{State: state.Changed, Detail: st.Reason}
	case StateIncomplete:
		return state.Inspection{State: state.Present, Detail: "incomplete: " + st.Reason}
	}
	switch {
	case id.UID != "" && !st.UIDVerified:
		return state.Inspection{State: state.Unknown, Detail: st.Reason}
	case !st.Running:
		return state.Inspection{State: state.Present, Detail: "stopped"}
	}
	noun := "containers"
	if len(st.Containers) == 1 {
		noun = "container"
	}
	return state.Inspection{State: state.Present, Detail: fmt.Sprintf("running, %d %s", len(st.Containers), noun)}
}
