package occdev

import (
	"context"

	"github.com/openclaw/occ/internal/occdev/step"
	"github.com/openclaw/occ/internal/progress"
)

// Step is one named stage of `occ dev up` (package step): it describes itself from the Plan for
// --dry-run and runs on the run of one `up`. Reading the list returned by upSteps tells the whole
// flow.
type Step = step.Step[*Plan, *run]

// Lane is a sequence of steps that runs beside the other lanes of its group.
type Lane = step.Lane[*Plan, *run]

// Description is what a step would do, for --dry-run.
type Description = step.Description

// runner runs the flow's steps, reporting each to the progress sink.
type runner = step.Runner[*Plan, *run]

// readiness is a one-time signal from a step of one lane to the steps of its sibling lanes.
type readiness = step.Readiness

// note describes a step that creates nothing, tersely in step lists.
func note(text string) Description { return step.Note(text) }

// concurrently makes a group step of lanes.
func concurrently(name string, lanes ...Lane) Step { return step.Concurrently(name, lanes...) }

// lane makes a lane of steps.
func lane(name string, steps ...Step) Lane { return step.InLane(name, steps...) }

// clusterMade is the readiness of the cluster the provider's lane makes.
func clusterMade(r *run) *readiness { return &r.cluster }

// waiting is s run once each readiness of ready is set: what s needs is made by sibling lanes.
// A sibling's failure cancels the wait.
func waiting(s Step, ready ...func(*run) *readiness) Step {
	do := s.Run
	s.Run = func(ctx context.Context, r *run, rep progress.Reporter) error {
		for _, x := range ready {
			if err := x(r).Wait(ctx); err != nil {
				return err
			}
		}
		return do(ctx, r, rep)
	}
	return s
}

// setting is s, which sets the readiness ready once it succeeded.
func setting(s Step, ready func(*run) *readiness) Step {
	do := s.Run
	s.Run = func(ctx context.Context, r *run, rep progress.Reporter) error {
		if err := do(ctx, r, rep); err != nil {
			return err
		}
		ready(r).Set()
		return nil
	}
	return s
}
