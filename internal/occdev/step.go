package occdev

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/openclaw/occ/internal/progress"
)

// Step is one named stage of `occ dev up`, in the manner of kind's create actions: reading the
// list returned by upSteps tells the whole flow. Every step is idempotent: run again on the
// same state it converges instead of failing or duplicating, so a retried `up` is safe.
//
// A step either does its own work (Run) or is a group of lanes (Lanes) that run side by side;
// the steps of one lane run in order. Lanes must be independent: no step of one lane may read
// what a step of another lane produces, and each lane writes only its own fields of run. The
// one exception is a readiness: a step may wait on one that a step of a sibling lane sets, and
// then read what that step wrote before setting it. The lane that sets it comes first in its
// group, so the sequential seam runs it before the lanes that wait.
type Step struct {
	// Name is the progress line, an imperative phrase ("Install the OpenShell Gateway chart"),
	// unique within the flow.
	Name string
	// Describe says what the step would create or do, for --dry-run. It must not perform any
	// I/O: a dry run touches nothing.
	Describe func(p *Plan) Description
	// Run performs the step; rep reports intermediate states (a download's bytes) on the
	// step's own progress line. Everything it creates is recorded in the state before or as it
	// is created, so a rollback or `down` can always remove it.
	Run func(ctx context.Context, r *run, rep progress.Reporter) error
	// Lanes, when set, make the step a group: the lanes run concurrently, and the group ends
	// when all of them have. A failure in one lane cancels the others and waits for them.
	Lanes []Lane
}

// Lane is a sequence of steps that runs beside the other lanes of its group.
type Lane struct {
	// Name identifies the lane on every progress line of its steps ("artifacts", "cluster").
	Name  string
	Steps []Step
}

// Description is what a step would do, for --dry-run: what it creates, and a note for what it
// checks or uses without creating anything.
type Description struct {
	Creates []string `json:"creates"`
	Note    string   `json:"note,omitempty"`
}

// creates and note build Descriptions tersely in step lists.
func creates(items ...string) Description { return Description{Creates: items} }
func note(text string) Description        { return Description{Creates: []string{}, Note: text} }

// concurrently makes a group step of lanes.
func concurrently(name string, lanes ...Lane) Step { return Step{Name: name, Lanes: lanes} }

// lane makes a lane of steps.
func lane(name string, steps ...Step) Lane { return Lane{Name: name, Steps: steps} }

// runner runs steps, reporting each to the progress sink.
type runner struct {
	sink progress.Sink
	// afterStep, a test seam, is called after each successful step (a group too) and may fail
	// the run there, so tests can prove that a failure after any step is rolled back
	// completely. It is called from the lanes' goroutines.
	afterStep func(name string) error
	// sequential, a benchmark seam, runs the lanes of a group one after another.
	sequential bool
}

// run runs steps in order, in lane (empty outside a group), and stops at the first failure.
// The error of a step is wrapped with the step's name; a group's error is its lanes' errors,
// which name their own steps.
func (x *runner) run(ctx context.Context, r *run, steps []Step, lane string) error {
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		err := x.sink.Step(s.Name, lane, func(rep progress.Reporter) error {
			if s.Lanes != nil {
				if err := x.group(ctx, r, s.Lanes); err != nil {
					return err
				}
			} else if err := s.Run(ctx, r, rep); err != nil {
				return fmt.Errorf("%s: %w", s.Name, err)
			}
			if x.afterStep != nil {
				if err := x.afterStep(s.Name); err != nil {
					return fmt.Errorf("%s: %w", s.Name, err)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// group runs the lanes concurrently. The first lane to fail cancels the others, and group
// returns only once every lane has stopped, so nothing is still creating objects when the
// rollback starts. The result names the failure that stopped the group, with any other lane's
// own failure; the cancellations it caused are consequences, not causes, and are left out.
func (x *runner) group(ctx context.Context, r *run, lanes []Lane) error {
	if x.sequential {
		for _, l := range lanes {
			if err := x.run(ctx, r, l.Steps, l.Name); err != nil {
				return err
			}
		}
		return nil
	}
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	errs := make([]error, len(lanes))
	for i, l := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := x.run(gctx, r, l.Steps, l.Name)
			if err == nil {
				return
			}
			errs[i] = err
			mu.Lock()
			if first == nil {
				first = err
				cancel()
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if first == nil {
		return nil
	}
	failed := []error{first}
	for _, err := range errs {
		if err != nil && err != first && !errors.Is(err, context.Canceled) {
			failed = append(failed, err)
		}
	}
	return errors.Join(failed...)
}

// readiness is a one-time signal from a step of one lane to the steps of its sibling lanes that
// need what it produced (run.cluster: the cluster exists and run.conn is set). Its zero value is
// ready to use.
type readiness struct {
	init sync.Once
	ch   chan struct{}
	done sync.Once
}

func (x *readiness) c() chan struct{} {
	x.init.Do(func() { x.ch = make(chan struct{}) })
	return x.ch
}

// set marks it done; later calls do nothing.
func (x *readiness) set() {
	ch := x.c()
	x.done.Do(func() { close(ch) })
}

// wait returns once it is set, or with ctx's error when ctx ends first (a sibling lane failed).
func (x *readiness) wait(ctx context.Context) error {
	select {
	case <-x.c():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
