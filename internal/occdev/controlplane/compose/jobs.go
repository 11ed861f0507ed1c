package compose

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/engine"
)

// logLines is how many of a failed job's last log lines an error shows.
const logLines = 20

// recheck is how often the job wait looks again when no engine event arrives: events are the
// signal, the timer is the safety net for a dropped event stream.
const recheck = 2 * time.Second

// JobError is a one-shot service that ended unsuccessfully.
type JobError struct {
	Service string
	// ExitCode is the container's exit code (-1 when the engine reports it dead without one).
	ExitCode int
	// Logs are its last log lines, scrubbed.
	Logs string
}

func (e *JobError) Error() string {
	msg := fmt.Sprintf("%s exited with %d", e.Service, e.ExitCode)
	if e.Logs != "" {
		msg += "; its last log lines:" + e.Logs
	} else {
		msg += " and wrote no log lines"
	}
	return msg
}

// WaitCompleted waits until each service's single container has exited with code 0. A non-zero
// exit (or a dead container) fails at once with the service's last log lines; more than one
// container for a service fails too; no container yet means wait. The wait follows the engine's
// container events, re-checking every couple of seconds in case the stream drops. The
// context's deadline bounds it; its expiry is reported as "development readiness: <ctx err>".
func (s Stack) WaitCompleted(ctx context.Context, services ...string) error {
	evCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	msgs, errs := s.Engine.Events(evCtx, map[string]string{LabelProject: s.Project})
	ticker := time.NewTicker(recheck)
	defer ticker.Stop()
	pending := append([]string(nil), services...)
	last := ""
	for {
		var still []string
		for _, svc := range pending {
			done, state, err := s.jobState(ctx, svc)
			if err != nil {
				return err
			}
			if !done {
				still = append(still, svc)
				last = state
			}
		}
		if pending = still; len(pending) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return &controlplane.ReadinessTimeoutError{Cause: ctx.Err(), Last: last}
		case <-msgs:
		case <-errs:
			// The stream ended (engine restart, proxy timeout): fall back to the timer.
			msgs, errs = nil, nil
		case <-ticker.C:
		}
	}
}

// jobState reports whether service's container exited 0; a failure is returned as *JobError.
func (s Stack) jobState(ctx context.Context, service string) (bool, string, error) {
	id, err := s.oneContainer(ctx, service)
	if err != nil {
		return false, "", err
	}
	if id == "" {
		return false, service + " has no container yet", nil
	}
	c, err := s.Engine.Inspect(ctx, engine.Containers, id)
	if err != nil {
		return false, "", fmt.Errorf("inspect %s container: %w", service, err)
	}
	switch {
	case c.State == "":
		return false, service + " has no state yet", nil
	case c.State == stateExited && c.ExitCode == 0:
		return true, "", nil
	case c.State == stateExited || c.State == stateDead:
		code := c.ExitCode
		if c.State == stateDead && code == 0 {
			code = -1
		}
		return false, "", &JobError{Service: service, ExitCode: code, Logs: s.lastLogs(ctx, id)}
	}
	return false, fmt.Sprintf("%s is %s", service, c.State), nil
}

// Diagnose explains a failed `compose up`: for each service whose container exited non-zero it
// returns a *JobError with the log tail, joined. It returns nil when none did (the failure was
// elsewhere, and the plugin's stderr says where).
func (s Stack) Diagnose(ctx context.Context, services ...string) error {
	var errs []error
	for _, svc := range services {
		if _, _, err := s.jobState(ctx, svc); err != nil {
			var je *JobError
			if errors.As(err, &je) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// lastLogs returns the container's last log lines (stdout and stderr interleaved as the engine
// stored them), scrubbed and indented, or "" when it cannot read them.
func (s Stack) lastLogs(ctx context.Context, id string) string {
	var buf bytes.Buffer
	w := &limitBuffer{buf: &buf, left: 64 << 10}
	if err := s.Engine.Logs(ctx, id, engine.LogsRequest{Tail: logLines}, w, w); err != nil && buf.Len() == 0 {
		return ""
	}
	return tail("", buf.Bytes(), s.Redact)
}

// limitBuffer keeps at most left bytes and silently drops the rest.
type limitBuffer struct {
	buf  *bytes.Buffer
	left int
}

func (l *limitBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if n > l.left {
		p = p[:l.left]
	}
	l.buf.Write(p)
	l.left -= len(p)
	return n, nil
}

// ServiceState is what `dev status` shows per service.
type ServiceState struct {
	Service string `json:"service"`
	// State is "running", "exited", "missing" or another engine state ("created", "restarting").
	State string `json:"state"`
	// ExitCode is set for exited containers.
	ExitCode int `json:"exitCode,omitempty"`
	// Health is the healthcheck status when the service has one ("healthy", "starting").
	Health string `json:"health,omitempty"`
	// Containers counts the service's containers; more than one is reported, not hidden.
	Containers int `json:"containers"`
}

// String renders the state as `dev status` prints it: "running (healthy)", "exited with code 1",
// "missing".
func (s ServiceState) String() string {
	switch s.State {
	case "missing":
		return "missing"
	case stateExited:
		return fmt.Sprintf("exited with code %d", s.ExitCode)
	}
	out := s.State
	if s.Health != "" {
		out += " (" + s.Health + ")"
	}
	if s.Containers > 1 {
		out += fmt.Sprintf(", %d containers", s.Containers)
	}
	return out
}

// Status returns the state of each service, in the order given (all of the project's services,
// sorted, when none are given).
func (s Stack) Status(ctx context.Context, services ...string) ([]ServiceState, error) {
	list, err := s.Engine.List(ctx, engine.Containers, map[string]string{LabelProject: s.Project})
	if err != nil {
		return nil, fmt.Errorf("list containers of Compose project %s: %w", s.Project, err)
	}
	by := map[string][]engine.Object{}
	for _, c := range list {
		if c.Labels[LabelOneoff] == "True" {
			continue
		}
		by[c.Labels[LabelService]] = append(by[c.Labels[LabelService]], c)
	}
	if len(services) == 0 {
		for svc := range by {
			services = append(services, svc)
		}
		sort.Strings(services)
	}
	out := make([]ServiceState, 0, len(services))
	for _, svc := range services {
		cs := by[svc]
		if len(cs) == 0 {
			out = append(out, ServiceState{Service: svc, State: "missing"})
			continue
		}
		st := ServiceState{Service: svc, State: cs[0].State, Containers: len(cs)}
		info, err := s.Engine.Inspect(ctx, engine.Containers, cs[0].ID)
		if err != nil {
			return nil, fmt.Errorf("inspect %s container: %w", svc, err)
		}
		if info.State != "" {
			st.State = info.State
			if info.State == stateExited {
				st.ExitCode = info.ExitCode
			}
			st.Health = info.Health
		}
		out = append(out, st)
	}
	return out, nil
}
