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
	}
	return ""
}

// Fault is one injected misbehaviour. Faults for a method apply in the order injected, each to
// Count calls.
type Fault struct {
	// Method is the short method name ("CreateSandbox"); empty matches every method.
	Method string
	Kind   FaultKind
	// Count is how many calls the fault affects (0 means 1; negative means every call until
	// the server closes).
	Count int
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
	faults []*Fault
}

func (q *faultQueue) add(f Fault) {
	if f.Count == 0 {
		f.Count = 1
	}
	q.mu.Lock()
	q.faults = append(q.faults, &f)
	q.mu.Unlock()
}

// take consumes one use of the first fault matching method.
func (q *faultQueue) take(method string) *Fault {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, f := range q.faults {
		if f.Method != "" && f.Method != method {
			continue
		}
		out := *f
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
