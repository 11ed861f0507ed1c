package state

import (
	"context"
	"fmt"
)

// Liveness is what a recorded object looks like now, compared with the record.
type Liveness string

// The liveness values `occ dev status` reports.
const (
	// Present: the object exists and is still the one this state created.
	Present Liveness = "present"
	// Missing: nothing of that name exists any more.
	Missing Liveness = "missing"
	// Changed: the name now belongs to an object this state did not create.
	Changed Liveness = "changed"
	// Terminating: the object is ours and its deletion has started.
	Terminating Liveness = "terminating"
	// Interrupted: the object is ours and an operation on it was cut short (a Helm release a
	// killed occ left pending); the next reload, or down, finishes it.
	Interrupted Liveness = "interrupted"
	// Unknown: occ could not look (the cluster or engine did not answer, or no remover knows
	// the type); Inspection.Detail says why. Never reported as missing.
	Unknown Liveness = "unknown"
)

// Inspection is the liveness of one recorded object with what is known about it.
type Inspection struct {
	State Liveness
	// Detail adds what is known: why an object counts as changed, a release's revision, or
	// the cause when the state is unknown.
	Detail string
}

// Outcome is what removing a recorded object did.
type Outcome string

// The outcomes of Remover.Remove. All three let `down` forget the record; an error does not.
const (
	// Removed: occ deleted the object (or started its deletion).
	Removed Outcome = "removed"
	// AlreadyGone: nothing of that name existed any more.
	AlreadyGone Outcome = "already gone"
	// LeftAlone: the name now belongs to something occ did not create, and was not touched.
	LeftAlone Outcome = "left alone"
)

// Removal is the result of removing one recorded object.
type Removal struct {
	Outcome Outcome
	// Detail says why an object was left alone.
	Detail string
}

// Remover removes and inspects the recorded objects of one Type. A Remover is built from the
// recorded state alone (the recorded cluster access, the recorded engine endpoint), never from
// the current environment, and connects lazily, on the first object it is handed.
type Remover interface {
	// Remove deletes o if, and only if, it is still the one this state created. An error means
	// the object may still exist: the record is kept so a later `down` can retry.
	Remove(ctx context.Context, o Object) (Removal, error)
	// Inspect reports o's liveness. It never fails: what it cannot find out is Unknown, with
	// the cause in Detail.
	Inspect(ctx context.Context, o Object) Inspection
}

// Removers is the registry `down`, rollback and `status` use: the Remover of each recorded
// Type. A record whose type has no Remover is refused (and kept), never skipped.
type Removers map[Type]Remover

// Remove hands o to the Remover of its type.
func (r Removers) Remove(ctx context.Context, o Object) (Removal, error) {
	rm, ok := r[o.Type]
	if !ok {
		return Removal{}, r.missing(o)
	}
	return rm.Remove(ctx, o)
}

// Inspect hands o to the Remover of its type.
func (r Removers) Inspect(ctx context.Context, o Object) Inspection {
	rm, ok := r[o.Type]
	if !ok {
		return Inspection{State: Unknown, Detail: r.missing(o).Error()}
	}
	return rm.Inspect(ctx, o)
}

func (r Removers) missing(o Object) error {
	return fmt.Errorf("%s: this occ cannot remove records of type %q; run occ dev down with the occ release that created it", o, o.Type)
}
