package occdev

import (
	"github.com/openclaw/occ/internal/occdev/step"
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

// creates and note build Descriptions tersely in step lists.
func creates(items ...string) Description { return step.Creates(items...) }
func note(text string) Description        { return step.Note(text) }

// concurrently makes a group step of lanes.
func concurrently(name string, lanes ...Lane) Step { return step.Concurrently(name, lanes...) }

// lane makes a lane of steps.
func lane(name string, steps ...Step) Lane { return step.InLane(name, steps...) }
