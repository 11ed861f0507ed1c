package occdev

import (
	"context"
	"fmt"
	"time"
)

// Step is one named stage of `occ dev up`, in the manner of kind's create actions: reading the
// list returned by upSteps tells the whole flow. Every step is idempotent: run again on the
// same state it converges instead of failing or duplicating, so a retried `up` is safe.
type Step struct {
	// Name is the progress line, an imperative phrase ("Install the OpenShell Gateway chart").
	Name string
	// Describe lists what the step would create or touch, for --dry-run. It must not perform
	// any I/O: a dry run touches nothing.
	Describe func(p *Plan) []string
	// Run performs the step. Everything it creates on a cluster is recorded in the state
	// before or as it is created, so a rollback or `down` can always remove it.
	Run func(ctx context.Context, sc *StepContext) error
}

// Progress receives one event when a step starts and one when it ends; the CLI renders them as
// status lines. Implementations must not block.
type Progress interface {
	StepStarted(index, total int, name string)
	StepFinished(index, total int, name string, elapsed time.Duration, err error)
}

// nopProgress is used when the caller does not watch progress.
type nopProgress struct{}

func (nopProgress) StepStarted(int, int, string)                        {}
func (nopProgress) StepFinished(int, int, string, time.Duration, error) {}

// runSteps runs steps in order and stops at the first failure. afterStep, a test seam, is
// called after each successful step and may fail the run there, so tests can prove that a
// failure after any step is rolled back completely.
func runSteps(ctx context.Context, sc *StepContext, steps []Step, progress Progress, afterStep func(index int, name string) error) error {
	for i, s := range steps {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		progress.StepStarted(i, len(steps), s.Name)
		start := time.Now()
		err := s.Run(ctx, sc)
		if err == nil && afterStep != nil {
			err = afterStep(i, s.Name)
		}
		progress.StepFinished(i, len(steps), s.Name, time.Since(start), err)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
	}
	return nil
}
