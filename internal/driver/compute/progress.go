package compute

import "time"

// EventKind says where in a step an Event falls.
type EventKind string

// Event kinds: a step begins, reports something while it runs, and ends (with or without an
// error).
const (
	StepBegin EventKind = "begin"
	StepNote  EventKind = "note"
	StepEnd   EventKind = "end"
)

// Event is one progress report. Compute never puts a Secret value in an event: messages name
// objects and states only.
type Event struct {
	Kind    EventKind
	Step    string
	Message string
	// Elapsed is the time since the step began (for notes and ends).
	Elapsed time.Duration
	// Err is the step's failure, on StepEnd only.
	Err error
}

// Progress receives events; the CLI prints them as lines on stderr, tests record them.
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
