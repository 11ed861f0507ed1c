// Package progress is the one progress contract of occ's command groups. The libraries behind
// `occ dev` and `occ sandbox` report named steps as Events to a Sink; the CLI renders them (one
// printer for both groups). A step begins, may report notes (an intermediate state, or bytes
// transferred) and ends with its own elapsed time and error. Steps in different lanes run at
// the same time, so several steps can be running at once: every event names its step (and
// lane), and a Sink must be safe for concurrent use.
package progress

import "time"

// Kind says where in a step an Event falls.
type Kind string

// The event kinds: a step begins, reports something while it runs, and ends (with or without
// an error).
const (
	Begin Kind = "begin"
	Note  Kind = "note"
	End   Kind = "end"
)

// Event is one progress report. No event ever carries a secret value: messages name objects
// and states only.
type Event struct {
	Kind Kind
	// Step is the step's name, an imperative phrase unique within one run.
	Step string
	// Lane names the lane of a step that runs beside steps of other lanes; it is empty for a
	// step that runs alone (including a group of lanes itself).
	Lane string
	// Message is a note's text (an intermediate state, such as a wait's last observation).
	Message string
	// Transfer, on a note, reports bytes moved so far (a download or an image pull).
	Transfer *Transfer
	// Elapsed is the time since the step began, on notes and ends.
	Elapsed time.Duration
	// Err is the step's failure, on End only.
	Err error
}

// Transfer is the amount of data a step has moved.
type Transfer struct {
	Done int64
	// Total is the expected size, or 0 when unknown.
	Total int64
}

// Sink receives events. It must not block and must be safe for concurrent use.
type Sink func(Event)

// Emit sends e to s; a nil Sink discards it.
func (s Sink) Emit(e Event) {
	if s != nil {
		s(e)
	}
}

// Reporter reports the notes of one running step.
type Reporter struct {
	sink  Sink
	step  string
	lane  string
	start time.Time
}

// Note reports an intermediate state of the step.
func (r Reporter) Note(message string) {
	r.sink.Emit(Event{Kind: Note, Step: r.step, Lane: r.lane, Message: message, Elapsed: time.Since(r.start)})
}

// Transfer reports bytes moved so far; total is 0 when unknown.
func (r Reporter) Transfer(done, total int64) {
	r.sink.Emit(Event{Kind: Note, Step: r.step, Lane: r.lane, Transfer: &Transfer{Done: done, Total: total}, Elapsed: time.Since(r.start)})
}

// Step runs fn as the named step in lane (empty for none): Begin before it, End after it with
// the elapsed time and fn's error, which Step returns unchanged.
func (s Sink) Step(name, lane string, fn func(Reporter) error) error {
	r := Reporter{sink: s, step: name, lane: lane, start: time.Now()}
	s.Emit(Event{Kind: Begin, Step: name, Lane: lane})
	err := fn(r)
	s.Emit(Event{Kind: End, Step: name, Lane: lane, Elapsed: time.Since(r.start), Err: err})
	return err
}
