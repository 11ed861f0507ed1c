package recorded

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/openclaw/occ/internal/occdev/state"
)

// rollbackTimeout bounds the cleanup after a failed run. It runs on a fresh context, so a Ctrl-C
// that ended the run does not also end the cleanup of what it made (a second one does).
const rollbackTimeout = 2 * time.Minute

// Rollback is the cleanup of a failed `up`: what it recorded in Dir, and what its control plane
// keeps outside the records.
type Rollback struct {
	Dir *state.Dir
	Log io.Writer
	// Kept is the record of a cluster whose creation failed by itself, nil when there is none:
	// a half-made cluster is never assumed gone (its provider's own cleanup ran under the
	// conditions that made it fail), so its record and Dir are kept for `down`, which checks the
	// cluster again. Provider names its provider in the message.
	Kept     *state.Object
	Provider string
	// Outside removes what lies outside the records (a user's --key-output file), whatever
	// the records' removal did; nil when there is nothing.
	Outside func() error
	// OCC is how the user runs occ, for the printed `down` command.
	OCC string
}

// Run removes what the failed run recorded, on its own bounded context under parent, so the
// Ctrl-C that stopped the run does not stop it half-way (a second one, which cancels parent,
// does: the state then stays for `down`), and folds the outcome into cause. Call it only once
// every step has stopped, so nothing is still being created while it removes.
func (rb Rollback) Run(parent context.Context, cause error) error {
	ctx, cancel := context.WithTimeout(parent, rollbackTimeout)
	defer cancel()
	d, dir := rb.Dir, rb.Dir.Path()
	keep := func(state.Object) bool { return false }
	if k := rb.Kept; k != nil {
		keep = func(o state.Object) bool { return o.Type == k.Type && o.Name == k.Name }
	}
	env := Connect(d.State())
	res, cerr := Remove(ctx, d, env, rb.Log, keep)
	env.Close()
	if rb.Outside != nil {
		if oerr := rb.Outside(); oerr != nil {
			cerr = errors.Join(cerr, oerr)
		}
	}
	if cerr == nil && rb.Kept != nil {
		_ = d.Close()
		return fmt.Errorf("%w\nrolled back everything but the %s cluster: its creation failed, and a half-made cluster is never assumed gone; %s is kept with its record\ncheck and finish the cleanup with: %s", cause, rb.Provider, dir, DownCommand(rb.OCC, dir))
	}
	if cerr == nil {
		cerr = d.Remove()
	}
	if cerr != nil && parent.Err() != nil {
		_ = d.Close()
		return fmt.Errorf("%w\nrollback stopped by a second interrupt; %s keeps the record of what is left\nfinish the cleanup with: %s", cause, dir, DownCommand(rb.OCC, dir))
	}
	if cerr != nil {
		_ = d.Close()
		return fmt.Errorf("%w\nrollback incomplete; preserving %s for occ dev down: %v\nfinish the cleanup with: %s", cause, dir, cerr, DownCommand(rb.OCC, dir))
	}
	removed := "everything this run created was removed"
	if len(res.LeftAlone) > 0 {
		// Something recorded is someone else's now (a name taken over, an image a container
		// runs): the rollback did not touch it and says so (the log says why).
		removed = "everything this run created was removed but " + strings.Join(res.LeftAlone, ", ") + ", left as it is (no longer only this run's)"
	}
	if d.State().Adopted {
		return fmt.Errorf("%w\nrolled back: %s, and %s, which existed before up, was emptied and stays", cause, removed, dir)
	}
	return fmt.Errorf("%w\nrolled back: %s, and %s was deleted", cause, removed, dir)
}

// RemoveAll is `down`'s removal: on the engine d records only (SameEngine), everything d records
// and then d itself. When anything is left, d is kept and the error says how to retry; the result
// is nil when the engine is not the recorded one and nothing was tried.
func RemoveAll(ctx context.Context, d *state.Dir, e *Env, log io.Writer, occ string) (*Result, error) {
	if err := e.SameEngine(ctx, d.Path()); err != nil {
		return nil, err
	}
	res, err := Remove(ctx, d, e, log, func(state.Object) bool { return false })
	if err == nil {
		err = d.Remove()
	}
	if err != nil {
		return &res, fmt.Errorf("cleanup incomplete; preserving %s for recovery: %w\nretry with: %s", d.Path(), err, DownCommand(occ, d.Path()))
	}
	return &res, nil
}
