package controlplane

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The API comes up in stages: first unreachable behind a 503 (database not ready), then 2xx;
// the worker's probe passes only later. Ready means both in the same iteration, and the probe
// carries no cookie and no key.
func TestWaitReadyNeedsSessionAndChecks(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != SessionPath || r.Header.Get("Cookie") != "" || r.Header.Get(ServiceKeyHeader) != "" {
			t.Errorf("unexpected probe %s %v", r.URL.Path, r.Header)
		}
		if calls.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte(`{"data":null,"meta":{"requestId":"r"}}`))
	}))
	defer srv.Close()
	var checks atomic.Int32
	worker := ReadinessCheck{Name: "worker readiness", Check: func(context.Context) error {
		if checks.Add(1) < 2 {
			return errors.New("not yet")
		}
		return nil
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := WaitReady(ctx, ReadinessOptions{APIURL: srv.URL, Checks: []ReadinessCheck{worker}, Interval: 10 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if calls.Load() < 4 || checks.Load() != 2 {
		t.Fatalf("session probes %d, worker checks %d; the worker check runs only after a 2xx, until both pass together", calls.Load(), checks.Load())
	}
}

// An API that never answers 2xx (a redirect counts as not ready: it is not followed) ends at
// the deadline with the reference's message and the last thing seen.
func TestWaitReadyTimesOut(t *testing.T) {
	srv := httptest.NewServer(http.RedirectHandler("http://example.invalid/login", http.StatusFound))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err := WaitReady(ctx, ReadinessOptions{APIURL: srv.URL, Interval: 20 * time.Millisecond})
	var te *ReadinessTimeoutError
	if !errors.As(err, &te) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
	if !strings.HasPrefix(err.Error(), "development readiness: context deadline exceeded") || !strings.Contains(err.Error(), "answered HTTP 302") {
		t.Fatalf("message %q", err)
	}
}
