package gateway

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"google.golang.org/grpc/codes"
)

// RetryPolicy is the backoff for transient gateway failures. The zero value means the default:
// six attempts, waiting about 100 ms, 200 ms, 400 ms, 800 ms and 1.6 s between them.
type RetryPolicy struct {
	// InitialBackoff is the wait before the first retry.
	InitialBackoff time.Duration
	// MaxBackoff caps each wait (a RetryInfo delay from the gateway may exceed it).
	MaxBackoff time.Duration
	// MaxAttempts bounds the attempts of one call, the first included.
	MaxAttempts int
}

// defaultRetry waits 100 ms, 200 ms, 400 ms, 800 ms, 1.6 s between six attempts (about 3 s
// of waiting, jittered): long enough to ride out a gateway restart or a busy admission worker
// pool, short enough that a dead gateway is reported within one reconcile.
var defaultRetry = RetryPolicy{InitialBackoff: 100 * time.Millisecond, MaxBackoff: 5 * time.Second, MaxAttempts: 6}

func (p RetryPolicy) orDefault() RetryPolicy {
	if p == (RetryPolicy{}) {
		return defaultRetry
	}
	return p
}

func (p RetryPolicy) validate() error {
	if p == (RetryPolicy{}) {
		return nil
	}
	if p.InitialBackoff <= 0 || p.MaxBackoff < p.InitialBackoff || p.MaxAttempts < 1 {
		return &ConfigError{Key: "retry", Value: fmt.Sprintf("%+v", p),
			Rule: "needs InitialBackoff > 0, MaxBackoff >= InitialBackoff and MaxAttempts >= 1; use the zero value for the defaults"}
	}
	return nil
}

// backoff returns the wait before retry number n (1-based): exponential with full jitter in
// the upper half, so concurrent callers do not retry in lockstep, and never shorter than the
// delay the gateway asked for.
func (p RetryPolicy) backoff(n int, requested time.Duration) time.Duration {
	d := p.InitialBackoff
	for i := 1; i < n && d < p.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, p.MaxBackoff)
	d = d/2 + rand.N(d/2+1)
	return max(d, requested)
}

// idempotentMethods are the methods whose repeat cannot do more than the first call did: the
// reads, and DeleteSandbox, whose repeat after a success finds NOT_FOUND, which counts as
// done. GetSandboxProviderStatus without a receipt id records an OBSERVE receipt; a repeat
// records one more observation and changes nothing a caller acts on.
var idempotentMethods = map[string]bool{
	"Health": true, "GetWorkspace": true, "GetSandbox": true, "GetService": true,
	"GetProvider": true, "ListProviders": true, "GetProviderProfile": true,
	"GetSandboxLogs": true, "GetSandboxProviderStatus": true, "GetProviderRefreshStatus": true,
	"DeleteSandbox": true,
}

// repeatable reports whether req may be sent again after an attempt whose outcome is unknown
// (a dropped connection, a lost response, an expired deadline): an idempotent method, or a
// mutation carrying a request_id, whose repeat the gateway answers with the first attempt's
// outcome instead of running it again. A mutation without a request_id is sent once.
func repeatable(method string, req any) bool {
	if idempotentMethods[method] {
		return true
	}
	r, ok := req.(interface{ GetRequestId() string })
	return ok && r.GetRequestId() != ""
}

// retryable reports whether another attempt of the same request (same request_id) is worth
// making. callerCtx decides whether a DEADLINE_EXCEEDED came from the per-call deadline (retry)
// or from the caller (stop).
func retryable(callerCtx context.Context, e *Error) bool {
	if callerCtx.Err() != nil {
		return false
	}
	switch e.Code {
	case codes.Unavailable:
		// A closed or reset connection is UNAVAILABLE too: grpc-go reports the transport's
		// failure ("error reading from server: EOF") under this code.
		return true
	case codes.Canceled:
		// The caller is still waiting, so the gateway cancelled the stream (an HTTP/2
		// RST_STREAM with CANCEL, as a server dropping its in-flight requests sends).
		return true
	case codes.ResourceExhausted:
		// The admission limit is not relieved by waiting seconds; only reconciliation on the
		// gateway frees admissions, so it is reported at once.
		return e.Reason != ReasonSandboxAdmissionLimit
	case codes.DeadlineExceeded:
		return true
	}
	return false
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
