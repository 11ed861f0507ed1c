// Package step is the one Step type of `occ dev`: a named, idempotent stage that either does its
// own work or runs lanes of steps side by side, the runner that reports each step to a progress
// sink, and the dry-run Description of what a step would touch. Every layer builds its steps
// with it: the flow over its run, a control plane over its own state; an Adapt maps a layer's
// steps into the flow's.
package step

import (
	"context"

	"github.com/openclaw/occ/internal/progress"
)

// Step is one named stage, in the manner of kind's create actions: reading a list of steps tells
// the whole flow. Every step is idempotent: run again on the same state it converges instead of
// failing or duplicating, so a retried run is safe.
//
// P is what a dry run describes a step from (a plan, a configuration); R is what Run works on
// (the run of one `up`, a control plane).
//
// A step either does its own work (Run) or is a group of lanes (Lanes) that run side by side;
// the steps of one lane run in order. Lanes must be independent: no step of one lane may read
// what a step of another lane produces, and each lane writes only its own fields of R. The one
// exception is a Readiness: a step may wait on one that a step of a sibling lane sets, and then
// read what that step wrote before setting it. The lane that sets it comes first in its group,
// so the sequential seam runs it before the lanes that wait.
type Step[P, R any] struct {
	// Name is the progress line, an imperative phrase ("Install the OpenShell Gateway chart"),
	// unique within the flow.
	Name string
	// Describe says what the step would create or do, for --dry-run. It must not perform any
	// I/O: a dry run touches nothing.
	Describe func(p P) Description
	// Run performs the step; rep reports intermediate states (a download's bytes) on the
	// step's own progress line. Everything it creates is recorded in the state before or as it
	// is created, so a rollback or `down` can always remove it.
	Run func(ctx context.Context, r R, rep progress.Reporter) error
	// Lanes, when set, make the step a group: the lanes run concurrently, and the group ends
	// when all of them have. A failure in one lane cancels the others and waits for them.
	Lanes []Lane[P, R]
}

// Lane is a sequence of steps that runs beside the other lanes of its group.
type Lane[P, R any] struct {
	// Name identifies the lane on every progress line of its steps ("artifacts", "cluster").
	Name  string
	Steps []Step[P, R]
}

// Concurrently makes a group step of lanes.
func Concurrently[P, R any](name string, lanes ...Lane[P, R]) Step[P, R] {
	return Step[P, R]{Name: name, Lanes: lanes}
}

// InLane makes a lane of steps.
func InLane[P, R any](name string, steps ...Step[P, R]) Lane[P, R] {
	return Lane[P, R]{Name: name, Steps: steps}
}

// Adapt maps steps that describe from Q and run on S into steps of a flow that describes from P
// and runs on R: describe gives a step's Q from the flow's P, and get its S from the flow's R
// when the step runs (get may build S on first use; it must return the same S each time). Names,
// lanes and order are kept.
func Adapt[P, R, Q, S any](steps []Step[Q, S], describe func(P) Q, get func(context.Context, R) (S, error)) []Step[P, R] {
	out := make([]Step[P, R], 0, len(steps))
	for _, s := range steps {
		a := Step[P, R]{Name: s.Name}
		if s.Describe != nil {
			a.Describe = func(p P) Description { return s.Describe(describe(p)) }
		}
		if s.Run != nil {
			a.Run = func(ctx context.Context, r R, rep progress.Reporter) error {
				x, err := get(ctx, r)
				if err != nil {
					return err
				}
				return s.Run(ctx, x, rep)
			}
		}
		for _, l := range s.Lanes {
			a.Lanes = append(a.Lanes, Lane[P, R]{Name: l.Name, Steps: Adapt(l.Steps, describe, get)})
		}
		out = append(out, a)
	}
	return out
}
