package emulator

import (
	"sync"
	"time"

	"google.golang.org/grpc/codes"
)

// FaultKind selects what an injected fault does to a call.
type FaultKind int

const (
	// FaultNone is the zero value: no fault.
	FaultNone FaultKind = iota
	// FaultLatency delays the call by Delay before it is handled. A client deadline that
	// expires during the delay ends the call with DEADLINE_EXCEEDED and nothing executed.
	FaultLatency
	// FaultDropResponse executes the call and commits its effect, then loses the response: the
	// client sees UNAVAILABLE (or, with Code DeadlineExceeded, waits out its own deadline)
	// although the change exists. This is the lost-response case retries must converge on.
	FaultDropResponse
	// FaultUnavailable refuses the call with UNAVAILABLE (reason GATEWAY_NOT_READY and
	// RetryInfo) before anything executes.
	FaultUnavailable
	// FaultResourceExhausted refuses the call with RESOURCE_EXHAUSTED before anything executes.
	// The default message is the v0.0.x rate limit's, not the admission limit's.
	FaultResourceExhausted
	// FaultDropConnection closes the connection the call arrived on without answering, as the
	// pinned Gateway does to in-flight requests when a spurious provider-environment change
	// hits it about 10 s after it starts (OpenShell v0.1.2 to v0.1.3-pre.3). Every other call
	// in flight on that connection is dropped with it; the client sees the connection close,
	// not a gRPC status. With AfterCommit the call executes first, so its change exists.
	FaultDropConnection
)

func (k FaultKind) String() string {
	switch k {
	case FaultLatency:
		return "latency"
	case FaultDropResponse:
		return "drop-response"
	case FaultUnavailable:
		return "unavailable"
	case FaultResourceExhausted:
		return "resource-exhausted"
	case FaultDropConnection:
		return "drop-connection"
	}
	return ""
}

// Fault is one injected misbehaviour. Faults for a method apply in the order injected, each to
// Count calls or to the calls of its Window.
type Fault struct {
	// Method is the short method name ("CreateSandbox"); empty matches every method.
	Method string
	Kind   FaultKind
	// Count is how many calls the fault affects (0 means 1; negative means every call until
	// the server closes). It is ignored when Window is set.
	Count int
	// Window, when positive, makes the fault affect every matching call that arrives within
	// Window of the emulator's start, measured on Options.Clock, and none after: a Gateway that
	// misbehaves for its first seconds.
	Window time.Duration
	// AfterCommit makes FaultDropConnection execute the call and commit its effect before the
	// connection is closed, so the client cannot tell whether its change was made.
	AfterCommit bool
	// OutcomeUnrecorded, with AfterCommit, stops the Gateway between making the change and
	// recording its success: the request_id stays an unresolved admission, so the same
	// request_id sent again is refused with REQUEST_OUTCOME_UNCERTAIN although the change exists.
	OutcomeUnrecorded bool
	// Delay is the added latency for FaultLatency.
	Delay time.Duration
	// Code overrides the status a FaultDropResponse returns: codes.Unavailable (default) or
	// codes.DeadlineExceeded (hold the response until the client's deadline passes).
	Code codes.Code
	// Message overrides the status message of FaultUnavailable and FaultResourceExhausted.
	Message string
}

type faultQueue struct {
	mu     sync.Mutex
	faults []*queuedFault
}

// queuedFault is a Fault with its window resolved to the emulator clock's end time.
type queuedFault struct {
	Fault
	until time.Time
}

// add queues f; started is the emulator's start on its clock, where a Window begins.
func (q *faultQueue) add(f Fault, started time.Time) {
	qf := &queuedFault{Fault: f}
	switch {
	case f.Window > 0:
		qf.until = started.Add(f.Window)
		qf.Count = -1
	case f.Count == 0:
		qf.Count = 1
	}
	q.mu.Lock()
	q.faults = append(q.faults, qf)
	q.mu.Unlock()
}

// take consumes one use of the first fault matching method that is still in effect at now.
// A fault whose window has passed is dropped from the queue.
func (q *faultQueue) take(method string, now time.Time) *Fault {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i := 0; i < len(q.faults); i++ {
		f := q.faults[i]
		if !f.until.IsZero() && !now.Before(f.until) {
			q.faults = append(q.faults[:i], q.faults[i+1:]...)
			i--
			continue
		}
		if f.Method != "" && f.Method != method {
			continue
		}
		out := f.Fault
		if f.Count > 0 {
			f.Count--
			if f.Count == 0 {
				q.faults = append(q.faults[:i], q.faults[i+1:]...)
			}
		}
		return &out
	}
	return nil
}
