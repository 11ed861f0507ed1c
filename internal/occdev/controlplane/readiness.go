package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/openclaw/occ/internal/occdev/step"
)

// Readiness defaults, OCE's own: each probe is bounded by 3 s and the poll
// repeats every second until the caller's deadline.
const (
	ReadinessRequestTimeout = 3 * time.Second
	ReadinessInterval       = time.Second
	// SessionPath is the anonymous endpoint whose 2xx means the HTTP server, the auth stack and
	// its database path work.
	SessionPath = "/api/auth/session"
)

// SessionWait is the dry run's wait of WaitReady's session probe against the OCC origin apiURL.
func SessionWait(apiURL string) step.Wait {
	return step.Wait{Kind: "endpoint", Name: "GET " + apiURL + SessionPath, Ready: "it answers 2xx"}
}

// ReadinessCheck is one more condition that must hold in the same poll iteration as the
// session probe (for Compose, the worker's readiness exec).
type ReadinessCheck struct {
	// Name says what is checked, for the timeout message ("worker-kubernetes readiness").
	Name  string
	Check func(ctx context.Context) error
}

// ReadinessOptions are the inputs of WaitReady.
type ReadinessOptions struct {
	// APIURL is the OCC origin.
	APIURL string
	// Checks must all pass in the same iteration as the session probe.
	Checks []ReadinessCheck
	// Client is the probe's HTTP client; nil means NewAPIClient(ReadinessRequestTimeout).
	Client *http.Client
	// Interval between iterations; 0 means ReadinessInterval.
	Interval time.Duration
}

// ReadinessTimeoutError is returned when the context ends before the API is ready. Its text
// starts with the reference's "development readiness: <ctx err>" and adds what was last seen.
type ReadinessTimeoutError struct {
	Cause error
	// Last is the last reason the stack was not ready ("" when no probe completed).
	Last string
}

func (e *ReadinessTimeoutError) Error() string {
	msg := "development readiness: " + e.Cause.Error()
	if e.Last != "" {
		msg += "; last check: " + e.Last
	}
	return msg
}

func (e *ReadinessTimeoutError) Unwrap() error { return e.Cause }

// WaitReady polls until GET /api/auth/session answers 2xx and every extra check passes in the
// same iteration, or ctx ends. The session probe sends no cookie and no key and never follows a
// redirect. Network errors and non-2xx answers mean "not yet".
func WaitReady(ctx context.Context, opts ReadinessOptions) error {
	origin, err := ParseAPIURL(opts.APIURL)
	if err != nil {
		return fmt.Errorf("development readiness: %w", err)
	}
	client := opts.Client
	if client == nil {
		client = NewAPIClient(ReadinessRequestTimeout)
	}
	interval := opts.Interval
	if interval <= 0 {
		interval = ReadinessInterval
	}
	probe := func() error {
		if err := CheckSession(ctx, client, origin.String()); err != nil {
			return err
		}
		for _, c := range opts.Checks {
			if err := c.Check(ctx); err != nil {
				return fmt.Errorf("%s: %w", c.Name, err)
			}
		}
		return nil
	}
	return poll(ctx, interval, probe)
}

// poll runs probe until it succeeds or ctx ends; the timeout error carries the last failure.
func poll(ctx context.Context, interval time.Duration, probe func() error) error {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	last := ""
	for {
		err := probe()
		if err == nil {
			return nil
		}
		var fatal *fatalError
		if errors.As(err, &fatal) {
			return fatal.err
		}
		if ctx.Err() == nil {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return &ReadinessTimeoutError{Cause: ctx.Err(), Last: last}
		case <-ticker.C:
		}
	}
}

// fatalError stops a poll at once: the condition can never become true.
type fatalError struct{ err error }

func (f *fatalError) Error() string { return f.err.Error() }

// CheckSession probes GET <apiURL>/api/auth/session once: nil on a 2xx, else why not.
func CheckSession(ctx context.Context, client *http.Client, apiURL string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, apiURL+SessionPath, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", SessionPath, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBytes))
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		return fmt.Errorf("GET %s answered HTTP %d", SessionPath, resp.StatusCode)
	}
	return nil
}
