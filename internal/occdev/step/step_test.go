package step

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/openclaw/occ/internal/progress"
)

// env stands for what a flow's steps run on; these tests need none of it.
type env struct{}

type (
	testStep = Step[struct{}, *env]
	testLane = Lane[struct{}, *env]
)

// events records progress events from several goroutines.
type events struct {
	mu  sync.Mutex
	all []progress.Event
}

func (e *events) sink(ev progress.Event) { e.mu.Lock(); e.all = append(e.all, ev); e.mu.Unlock() }

func (e *events) end(step string) (progress.Event, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ev := range e.all {
		if ev.Kind == progress.End && ev.Step == step {
			return ev, true
		}
	}
	return progress.Event{}, false
}

// blockUntilCancelled is a lane step that runs until its context is cancelled, as a download
// or a cluster start does, and says when it has really stopped.
func blockUntilCancelled(started chan<- struct{}, stopped *bool, mu *sync.Mutex) func(context.Context, *env, progress.Reporter) error {
	return func(ctx context.Context, _ *env, _ progress.Reporter) error {
		close(started)
		<-ctx.Done()
		mu.Lock()
		*stopped = true
		mu.Unlock()
		return ctx.Err()
	}
}

// A step of one lane fails while the other lane is still working (a cluster that refuses the
// connection during the archive download, or a download that fails while the cluster starts):
// for a failure in each lane in turn, the other lane is cancelled, the group returns only
// after it stopped, the remaining steps of the cancelled lane never start, and the error is
// the failure itself, not the cancellation it caused.
func TestGroupFailureInEachLaneCancelsTheOthers(t *testing.T) {
	for _, failing := range []string{"artifacts", "cluster"} {
		t.Run("failure in "+failing, func(t *testing.T) {
			var mu sync.Mutex
			stopped, laterRan := false, false
			started := make(chan struct{})
			boom := errors.New("boom")
			fail := func(context.Context, *env, progress.Reporter) error {
				<-started // the other lane is busy when this one fails
				return boom
			}
			later := func(context.Context, *env, progress.Reporter) error { laterRan = true; return nil }
			lanes := map[string]testLane{
				"failing": InLane(failing, testStep{Name: "Fail in " + failing, Run: fail}),
				"busy": InLane("other",
					testStep{Name: "Work until cancelled", Run: blockUntilCancelled(started, &stopped, &mu)},
					testStep{Name: "Run after the work", Run: later}),
			}
			group := []testLane{lanes["failing"], lanes["busy"]}
			if failing == "cluster" {
				group = []testLane{lanes["busy"], lanes["failing"]}
			}
			ev := &events{}
			x := &Runner[struct{}, *env]{Sink: ev.sink}
			err := x.Run(context.Background(), nil, []testStep{Concurrently("Both lanes", group...), {Name: "After the group", Run: later}}, "")
			if !errors.Is(err, boom) || errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "Fail in "+failing) {
				t.Fatalf("group error %v; want only the lane's own failure, naming its step", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if !stopped {
				t.Fatal("the group returned before the cancelled lane stopped")
			}
			if laterRan {
				t.Fatal("a step after the failure ran")
			}
			busy, ok := ev.end("Work until cancelled")
			if !ok || !errors.Is(busy.Err, context.Canceled) || busy.Lane != "other" {
				t.Errorf("the cancelled step's end event: %+v (reported %v)", busy, ok)
			}
			failed, _ := ev.end("Fail in " + failing)
			if !errors.Is(failed.Err, boom) || failed.Lane != failing {
				t.Errorf("the failed step's end event: %+v", failed)
			}
			if g, _ := ev.end("Both lanes"); g.Lane != "" || g.Err == nil {
				t.Errorf("the group's end event: %+v", g)
			}
		})
	}
}

// Two lanes fail on their own at about the same time: both failures are reported.
func TestGroupReportsIndependentFailures(t *testing.T) {
	var both sync.WaitGroup
	both.Add(2)
	failWith := func(err error) func(context.Context, *env, progress.Reporter) error {
		return func(context.Context, *env, progress.Reporter) error {
			both.Done()
			both.Wait() // each fails only once the other has failed too
			return err
		}
	}
	a, b := errors.New("archive checksum mismatch"), errors.New("cluster refused")
	x := &Runner[struct{}, *env]{}
	err := x.Run(context.Background(), nil, []testStep{Concurrently("Both",
		InLane("artifacts", testStep{Name: "A", Run: failWith(a)}),
		InLane("cluster", testStep{Name: "B", Run: failWith(b)}),
	)}, "")
	if !errors.Is(err, a) || !errors.Is(err, b) {
		t.Fatalf("error %v; want both lanes' failures", err)
	}
}

// Ctrl-C while both lanes run: both stop, the result is the cancellation, and every lane step
// finished (with its elapsed time) before the group did.
func TestGroupStopsOnParentCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var stoppedA, stoppedB bool
	startedA, startedB := make(chan struct{}), make(chan struct{})
	go func() { <-startedA; <-startedB; cancel() }()
	ev := &events{}
	x := &Runner[struct{}, *env]{Sink: ev.sink}
	err := x.Run(ctx, nil, []testStep{Concurrently("Both",
		InLane("artifacts", testStep{Name: "A", Run: blockUntilCancelled(startedA, &stoppedA, &mu)}),
		InLane("cluster", testStep{Name: "B", Run: blockUntilCancelled(startedB, &stoppedB, &mu)}),
	)}, "")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v; want the cancellation", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !stoppedA || !stoppedB {
		t.Fatalf("lanes still running after the group returned: A stopped %v, B stopped %v", stoppedA, stoppedB)
	}
	var order []string
	for _, e := range ev.all {
		if e.Kind == progress.End {
			order = append(order, e.Step)
		}
	}
	if len(order) != 3 || order[2] != "Both" || !slices.Contains(order, "A") || !slices.Contains(order, "B") {
		t.Fatalf("end events %q; want both lane steps, then the group", order)
	}
}

// The test seam fires after every step, in lanes too, and after the group, with each name.
func TestAfterStepSeesLaneStepsAndGroups(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	ok := func(context.Context, *env, progress.Reporter) error { return nil }
	x := &Runner[struct{}, *env]{AfterStep: func(name string) error { mu.Lock(); seen = append(seen, name); mu.Unlock(); return nil }}
	err := x.Run(context.Background(), nil, []testStep{
		{Name: "First", Run: ok},
		Concurrently("Group", InLane("a", testStep{Name: "A1", Run: ok}, testStep{Name: "A2", Run: ok}), InLane("b", testStep{Name: "B1", Run: ok})),
		{Name: "Last", Run: ok},
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(seen)
	if strings.Join(seen, ",") != "A1,A2,B1,First,Group,Last" {
		t.Fatalf("after-step calls %q", seen)
	}
}

// A step cut short by Ctrl-C says it was interrupted, and only that: the HTTP request or watch
// the cancellation cut is noise. A failure that merely wraps a cancellation while the run goes
// on (a timeout of the step's own) keeps its words.
func TestInterruptedStepSaysSo(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	x := &Runner[struct{}, *env]{Sink: (&events{}).sink}
	err := x.Run(ctx, nil, []testStep{{Name: "Pull the image", Run: func(ctx context.Context, _ *env, _ progress.Reporter) error {
		cancel()
		return fmt.Errorf(`inspect image x: Get "http://%%2Fsock/v1.51/images/x/json": %w`, ctx.Err())
	}}}, "")
	if err == nil || err.Error() != "Pull the image: interrupted (context canceled)" {
		t.Fatalf("an interrupted step says %v", err)
	}
	err = x.Run(context.Background(), nil, []testStep{{Name: "Wait", Run: func(context.Context, *env, progress.Reporter) error {
		return errors.New("wait for x: the watch closed")
	}}}, "")
	if err == nil || err.Error() != "Wait: wait for x: the watch closed" {
		t.Fatalf("a step's own failure says %v", err)
	}
}
