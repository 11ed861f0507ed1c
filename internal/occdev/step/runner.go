package step

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/openclaw/occ/internal/progress"
)

// Runner runs steps, reporting each to the progress sink.
type Runner[P, R any] struct {
	Sink progress.Sink
	// AfterStep, a test seam, is called after each successful step (a group too) and may fail
	// the run there, so tests can prove that a failure after any step is rolled back
	// completely. It is called from the lanes' goroutines.
	AfterStep func(name string) error
	// Sequential, a benchmark seam, runs the lanes of a group one after another.
	Sequential bool
}

// Run runs steps in order, in lane (empty outside a group), and stops at the first failure.
// The error of a step is wrapped with the step's name; a group's error is its lanes' errors,
// which name their own steps.
func (x *Runner[P, R]) Run(ctx context.Context, r R, steps []Step[P, R], lane string) error {
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return stepError(ctx, s.Name, err)
		}
		err := x.Sink.Step(s.Name, lane, func(rep progress.Reporter) error {
			if s.Lanes != nil {
				if err := x.group(ctx, r, s.Lanes); err != nil {
					return err
				}
			} else if err := s.Run(ctx, r, rep); err != nil {
				return stepError(ctx, s.Name, err)
			}
			if x.AfterStep != nil {
				if err := x.AfterStep(s.Name); err != nil {
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

// stepError names the step an error ended; a step that ended because its context was cancelled
// (Ctrl-C, or a failed sibling lane) says only that it was interrupted.
func stepError(ctx context.Context, name string, err error) error {
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		// Which call the cancellation cut short (an HTTP request to the engine's socket, a
		// watch) says nothing to the user who pressed Ctrl-C.
		return fmt.Errorf("%s: interrupted (%w)", name, context.Canceled)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// group runs the lanes concurrently. The first lane to fail cancels the others, and group
// returns only once every lane has stopped, so nothing is still creating objects when the
// rollback starts. The result names the failure that stopped the group, with any other lane's
// own failure; the cancellations it caused are consequences, not causes, and are left out.
func (x *Runner[P, R]) group(ctx context.Context, r R, lanes []Lane[P, R]) error {
	if x.Sequential {
		for _, l := range lanes {
			if err := x.Run(ctx, r, l.Steps, l.Name); err != nil {
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
			err := x.Run(gctx, r, l.Steps, l.Name)
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

// Readiness is a one-time signal from a step of one lane to the steps of its sibling lanes that
// need what it produced (the cluster exists and its connection is set). Its zero value is ready
// to use.
type Readiness struct {
	init sync.Once
	ch   chan struct{}
	done sync.Once
}

func (x *Readiness) c() chan struct{} {
	x.init.Do(func() { x.ch = make(chan struct{}) })
	return x.ch
}

// Set marks it done; later calls do nothing.
func (x *Readiness) Set() {
	ch := x.c()
	x.done.Do(func() { close(ch) })
}

// IsSet says, without waiting, whether it is set.
func (x *Readiness) IsSet() bool {
	select {
	case <-x.c():
		return true
	default:
		return false
	}
}

// Wait returns once it is set, or with ctx's error when ctx ends first (a sibling lane failed).
func (x *Readiness) Wait(ctx context.Context) error {
	select {
	case <-x.c():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
