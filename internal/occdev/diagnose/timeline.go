package diagnose

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/openclaw/occ/internal/progress"
)

// Timeline records the steps of a run from its progress events: when each began, how long it
// took and how it ended. Record wraps the run's own sink, so the display sees every event as
// before.
type Timeline struct {
	mu    sync.Mutex
	start time.Time
	steps []timedStep
}

type timedStep struct {
	name, lane string
	began      time.Duration
	elapsed    time.Duration
	ended      bool
	err        string
}

// NewTimeline starts a timeline at now.
func NewTimeline(now time.Time) *Timeline { return &Timeline{start: now} }

// Record is next with every Begin and End also recorded.
func (t *Timeline) Record(next progress.Sink) progress.Sink {
	return func(e progress.Event) {
		t.observe(e)
		next.Emit(e)
	}
}

func (t *Timeline) observe(e progress.Event) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch e.Kind {
	case progress.Begin:
		t.steps = append(t.steps, timedStep{name: e.Step, lane: e.Lane, began: time.Since(t.start)})
	case progress.End:
		for i := len(t.steps) - 1; i >= 0; i-- {
			s := &t.steps[i]
			if s.name == e.Step && s.lane == e.Lane && !s.ended {
				s.ended, s.elapsed = true, e.Elapsed
				if e.Err != nil {
					s.err = e.Err.Error()
				}
				break
			}
		}
	}
}

// Text is the timeline as a table: the offset from the start, the duration, the outcome, the
// lane and the step, in the order the steps began; a step still running at the time has no
// duration.
func (t *Timeline) Text() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	var s strings.Builder
	fmt.Fprintf(&s, "Started %s.\n%-10s %-10s %-8s %-12s %s\n", t.start.UTC().Format(time.RFC3339), "START", "DURATION", "RESULT", "LANE", "STEP")
	for _, st := range t.steps {
		dur, result := "-", "running"
		if st.ended {
			dur, result = seconds(st.elapsed), "ok"
			if st.err != "" {
				result = "failed"
			}
		}
		lane := st.lane
		if lane == "" {
			lane = "-"
		}
		fmt.Fprintf(&s, "%-10s %-10s %-8s %-12s %s\n", "+"+seconds(st.began), dur, result, lane, st.name)
		if st.err != "" {
			fmt.Fprintf(&s, "%32s%s\n", "", strings.ReplaceAll(st.err, "\n", "\n"+strings.Repeat(" ", 32)))
		}
	}
	return []byte(s.String())
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }
