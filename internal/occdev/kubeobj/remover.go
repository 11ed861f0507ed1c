package kubeobj

import (
	"context"

	"github.com/openclaw/occ/internal/occdev/state"
)

// remover serves TypeObject records.
type remover struct {
	connect func(context.Context) (*Conn, error)
}

// Remover is the state.Remover of recorded Kubernetes objects. connect yields the connection to
// the recorded cluster (Recorded builds one from the record alone).
func Remover(connect func(context.Context) (*Conn, error)) state.Remover {
	return remover{connect: connect}
}

func (r remover) Remove(ctx context.Context, o state.Object) (state.Removal, error) {
	c, err := r.connect(ctx)
	if err != nil {
		return state.Removal{}, err
	}
	return c.Remove(ctx, o)
}

func (r remover) Inspect(ctx context.Context, o state.Object) state.Inspection {
	c, err := r.connect(ctx)
	if err != nil {
		return state.Inspection{State: state.Unknown, Detail: err.Error()}
	}
	return c.Inspect(ctx, o)
}
