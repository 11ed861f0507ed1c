package compute

import (
	"time"

	"github.com/openclaw/occ/internal/progress"
)

// EventKind says where in a step an Event falls (the shared progress contract).
type EventKind = progress.Kind

// Event kinds: a step begins, reports something while it runs, and ends (with or without an
// error).
const (
	StepBegin = progress.Begin
	StepNote  = progress.Note
	StepEnd   = progress.End
)

// Event is one progress report, in the contract every occ command group shares. Compute never
// puts a Secret value in an event: messages name objects and states only.
type Event = progress.Event

// Progress receives events; the CLI prints them with the same printer as `occ dev`, tests
// record them. It converts to and from progress.Sink.
type Progress func(Event)

// step runs fn as a named step, reporting its begin and end with the elapsed time. The
// returned note function reports intermediate states with the time since the step began.
func (p Progress) step(name string, fn func(note func(string)) error) error {
	start := time.Now()
	p.emit(Event{Kind: StepBegin, Step: name})
	note := func(msg string) { p.emit(Event{Kind: StepNote, Step: name, Message: msg, Elapsed: time.Since(start)}) }
	err := fn(note)
	p.emit(Event{Kind: StepEnd, Step: name, Elapsed: time.Since(start), Err: err})
	return err
}

func (p Progress) emit(e Event) {
	if p != nil {
		p(e)
	}
}
