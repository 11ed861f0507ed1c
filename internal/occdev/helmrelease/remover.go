package helmrelease

import (
	"context"
	"fmt"
	"time"

	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/state"
)

// uninstallTimeout bounds one uninstall during `down` or rollback.
const uninstallTimeout = time.Minute

// remover serves TypeRelease records.
type remover struct {
	connect func(context.Context) (*kubeobj.Conn, error)
}

// Remover is the state.Remover of recorded Helm releases. connect yields the connection to the
// recorded cluster (kubeobj.Recorded): it proves the recorded context still reaches the
// recorded cluster before Helm touches anything, and carries the access and owner.
func Remover(connect func(context.Context) (*kubeobj.Conn, error)) state.Remover {
	return remover{connect: connect}
}

// inspect reads the release and decides whether it is still this state's.
func (r remover) inspect(ctx context.Context, o state.Object) (state.Inspection, Release, error) {
	c, err := r.connect(ctx)
	if err != nil {
		return state.Inspection{}, Release{}, err
	}
	rel := Release{Access: c.Access, Namespace: o.Namespace, Name: o.Name}
	live, err := Status(rel)
	switch {
	case err != nil:
		return state.Inspection{}, rel, err
	case live == nil:
		return state.Inspection{State: state.Missing}, rel, nil
	case live.Labels[kubeobj.LabelDevState] != c.Owner():
		return state.Inspection{State: state.Changed, Detail: "the release does not carry this state's label"}, rel, nil
	}
	in := state.Inspection{State: state.Present}
	if live.Info != nil {
		in.Detail = fmt.Sprintf("revision %d, %s", live.Version, live.Info.Status)
		if live.Info.Status.IsPending() {
			in.State = state.Interrupted
			in.Detail += ": the occ that ran it stopped before it ended; the next reload or down finishes it"
		}
	}
	return in, rel, nil
}

func (r remover) Inspect(ctx context.Context, o state.Object) state.Inspection {
	in, _, err := r.inspect(ctx, o)
	if err != nil {
		return state.Inspection{State: state.Unknown, Detail: err.Error()}
	}
	return in
}

// Remove uninstalls a recorded release if it is still the one this state installed (it carries
// the state's ownership label); a missing release counts as gone.
func (r remover) Remove(ctx context.Context, o state.Object) (state.Removal, error) {
	in, rel, err := r.inspect(ctx, o)
	if err != nil {
		return state.Removal{}, err
	}
	switch in.State {
	case state.Missing:
		return state.Removal{Outcome: state.AlreadyGone}, nil
	case state.Changed:
		return state.Removal{Outcome: state.LeftAlone, Detail: "not the release occ installed (" + in.Detail + ")"}, nil
	}
	if err := Uninstall(rel, uninstallTimeout); err != nil {
		return state.Removal{}, err
	}
	return state.Removal{Outcome: state.Removed}, nil
}
