package observe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/openclaw/occ/internal/occdev/controlplane/compose"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/podlogs"
	"github.com/openclaw/occ/internal/occdev/recorded"
	"github.com/openclaw/occ/internal/occdev/state"
)

// LogsOptions are the settings of `occ dev logs`.
type LogsOptions struct {
	// StateDir is the state directory of the environment (--state-dir,
	// OCC_DEVELOPMENT_STATE_DIRECTORY).
	StateDir string
	// Environment names the environment (--name, OCC_DEVELOPMENT_ENVIRONMENT); empty is the
	// default one.
	Environment string
	// Services are the services to read, by the names `occ dev status` lists; none means all.
	Services []string
	// Follow keeps reading until ctx ends (Ctrl-C), and reads every container that starts
	// meanwhile — a restarted container, a recreated Compose service, a Pod that replaces
	// another — from its first line (a restarted Compose container from its restart), so no
	// line is shown twice and none of a new run is missed.
	Follow bool
	// Since is the --since value: a duration (10m, 1h30m) or an RFC 3339 time; empty for all.
	Since string
	// Tail is how many of each container's last lines to show first; -1 shows all.
	Tail int
	// Timestamps puts each line's RFC 3339 time (the engine's or the kubelet's) in front of it.
	Timestamps bool
	// Out receives the lines. Without Services, or with more than one, each line is prefixed
	// with its service (and, for a Pod of several containers, the container): "controller | …".
	Out io.Writer
	// Notes receives what keeps a log from being read (a container that has not started); nil
	// drops them.
	Notes io.Writer
}

// since is a parsed --since: a duration back from now, or an instant.
type since struct {
	ago time.Duration
	at  time.Time
}

// instant is the time since stands for, anchored at now.
func (s since) instant(now time.Time) time.Time {
	if s.ago > 0 {
		return now.Add(-s.ago)
	}
	return s.at
}

// parseSince reads a --since value the way kubectl and compose accept it.
func parseSince(v string) (since, error) {
	if v == "" {
		return since{}, nil
	}
	if d, err := time.ParseDuration(v); err == nil {
		if d <= 0 {
			return since{}, &option.Error{Option: "--since", Value: v, Rule: "is not a positive duration", Fix: "give how far back to start, such as 10m or 1h30m, or an RFC 3339 time such as 2026-01-02T15:04:05Z"}
		}
		return since{ago: d}, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return since{at: t}, nil
	}
	return since{}, &option.Error{Option: "--since", Value: v, Rule: "is neither a duration nor an RFC 3339 time", Fix: "give a duration such as 10m or 1h30m, or a time such as 2026-01-02T15:04:05Z or 2026-01-02T15:04:05+02:00"}
}

// ErrNoEnvironment is returned by Logs, Diagnose and the root's Reload when no state directory
// exists.
var ErrNoEnvironment = errors.New("no development environment")

// Logs writes the logs of the recorded environment's services: the Compose services through the
// recorded Docker engine, every other service (the Gateway, the Agent Sandbox controller, the
// in-cluster control plane) through the recorded cluster's pods/log. Only the record is used:
// the engine endpoint, kubeconfig and context it names, never the environment's. It adds
// nothing to the services' own output but the prefix.
func Logs(ctx context.Context, o LogsOptions) error {
	sn, err := parseSince(o.Since)
	if err != nil {
		return err
	}
	if o.Tail < -1 {
		return &option.Error{Option: "--tail", Value: strconv.Itoa(o.Tail), Rule: "is below -1", Fix: "give the number of last lines to show of each container, or -1 for all of them"}
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	loc, err := state.Locate(o.StateDir, o.Environment)
	if err != nil {
		return err
	}
	dir := loc.Dir
	st, err := loc.Read()
	if errors.Is(err, state.ErrNotExist) {
		return fmt.Errorf("%w at %s: nothing is up; start one with occ dev up (or name the state directory of another with --state-dir or %s)", ErrNoEnvironment, dir, state.EnvDirectory)
	}
	if err != nil {
		return err
	}
	rec := recorded.Connect(st)
	defer rec.Close()
	if err := rec.SameEngine(ctx, dir); err != nil {
		return err
	}
	all, listErr := Services(ctx, st, rec)
	chosen, err := ChooseServices(all, o.Services, dir, listErr)
	if err != nil {
		return err
	}
	if listErr != nil && len(o.Services) == 0 && o.Notes != nil {
		fmt.Fprintf(o.Notes, "not every service is known, so not every one is shown: %v\n", listErr)
	}

	r := newLogReader(o, rec, sn, chosen)
	if err := r.readAll(ctx, chosen); err != nil {
		return err
	}
	if !o.Follow && ctx.Err() != nil {
		return ctx.Err()
	}
	return r.sink.err
}

// logReader reads the chosen services of one Logs call into its sink.
type logReader struct {
	o        LogsOptions
	rec      *recorded.Env
	sink     *lineSink
	since    since
	now      time.Time
	prefixed bool
}

// newLogReader reads into o.Out: prefixed, padded to the longest of the chosen services' names,
// unless exactly one service was named.
func newLogReader(o LogsOptions, rec *recorded.Env, sn since, chosen []Service) *logReader {
	sink := &lineSink{w: o.Out}
	prefixed := len(o.Services) != 1
	if prefixed {
		for _, s := range chosen {
			sink.width = max(sink.width, len(s.Name))
		}
	}
	return &logReader{o: o, rec: rec, sink: sink, since: sn, now: time.Now(), prefixed: prefixed}
}

// readAll reads the chosen services side by side: each workload on its own, the Compose services
// together in one pass. It returns once every read has ended, with their errors joined.
func (r *logReader) readAll(ctx context.Context, chosen []Service) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	run := func(f func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	var composeServices []string
	project := ""
	for _, s := range chosen {
		if s.Workload == nil {
			composeServices, project = append(composeServices, s.Name), s.Project
			continue
		}
		run(func() error { return r.workload(ctx, s.Name, *s.Workload) })
	}
	if len(composeServices) > 0 {
		run(func() error { return r.compose(ctx, project, composeServices) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// label is a stream's prefix: the service when several are shown, and the container when its
// Pod has more than one.
func (r *logReader) label(svc, container string, multi bool) string {
	switch {
	case r.prefixed && multi:
		return svc + "/" + container
	case r.prefixed:
		return svc
	case multi:
		return container
	}
	return ""
}

func (r *logReader) note(msg string) {
	if r.o.Notes != nil {
		r.sink.note(r.o.Notes, msg)
	}
}

// workload reads one workload's Pods through the recorded cluster.
func (r *logReader) workload(ctx context.Context, name string, w podlogs.Workload) error {
	conn, err := r.rec.Kube(ctx)
	if err != nil {
		return fmt.Errorf("logs of %s: %w", name, err)
	}
	po := podlogs.Options{
		Follow: r.o.Follow, Tail: r.o.Tail, Timestamps: r.o.Timestamps, Note: r.note,
		Output: func(_, container string, multi bool) io.WriteCloser {
			return r.sink.output(r.label(name, container, multi))
		},
	}
	if r.since.ago > 0 {
		po.SinceSeconds = int64(math.Ceil(r.since.ago.Seconds()))
	} else {
		po.SinceTime = r.since.at
	}
	if err := podlogs.Stream(ctx, conn.Kube, w, po); err != nil {
		return fmt.Errorf("logs of %s: %w", name, err)
	}
	return nil
}

// compose reads the Compose services' containers through the recorded engine, in one pass (one
// event subscription when following).
func (r *logReader) compose(ctx context.Context, project string, services []string) error {
	eng, err := r.rec.Engine(ctx)
	if err != nil {
		return fmt.Errorf("logs of the Compose services: %w", err)
	}
	return compose.Stack{Project: project, Engine: eng.Verbs()}.Logs(ctx, compose.LogOptions{
		Services: services, Follow: r.o.Follow, Since: r.since.instant(r.now), Tail: r.o.Tail, Timestamps: r.o.Timestamps,
		Output: func(svc string) io.WriteCloser { return r.sink.output(r.label(svc, "", false)) },
	})
}

// ChooseServices picks the named services, or all of them when none is named. An unknown name
// is refused with the names there are.
func ChooseServices(all []Service, names []string, dir string, listErr error) ([]Service, error) {
	if len(names) == 0 {
		if len(all) == 0 && listErr != nil {
			return nil, listErr
		}
		return all, nil
	}
	by := map[string]Service{}
	var known []string
	for _, s := range all {
		by[s.Name] = s
		known = append(known, s.Name)
	}
	var out []Service
	seen := map[string]bool{}
	for _, n := range names {
		s, ok := by[n]
		if !ok {
			fix := "name one of: " + strings.Join(known, ", ")
			if len(known) == 0 {
				fix = "the environment has no services yet (occ dev status shows what it has)"
			}
			if listErr != nil {
				fix += " (the list may be incomplete: " + listErr.Error() + ")"
			}
			return nil, &option.Error{Option: "SERVICE", Value: n, Rule: "is not a service of the environment recorded in " + dir, Fix: fix}
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, s)
		}
	}
	return out, nil
}

// ServiceNames lists the services of the environment recorded in stateDir (else that of the
// environment named environment), for completion: the
// names `occ dev status` shows and `occ dev logs` takes. It never fails; what cannot be read is
// left out.
func ServiceNames(ctx context.Context, stateDir, environment string) []string {
	loc, err := state.Locate(stateDir, environment)
	if err != nil {
		return nil
	}
	st, err := loc.Read()
	if err != nil {
		return nil
	}
	rec := recorded.Connect(st)
	defer rec.Close()
	all, _ := Services(ctx, st, rec)
	var out []string
	for _, s := range all {
		out = append(out, s.Name)
	}
	return out
}

// lineSink writes whole lines of many streams to one writer, each line at once and with its
// stream's prefix, as `docker compose logs` interleaves its containers.
type lineSink struct {
	mu    sync.Mutex
	w     io.Writer
	width int
	err   error
}

// maxLine is where a line without a newline is cut, so a stream that never ends one cannot grow
// the buffer without bound.
const maxLine = 1 << 20

// output is a new stream whose lines carry label ("" for none). A label longer than the ones
// before widens the padding of every later line, so the columns line up again.
func (s *lineSink) output(label string) io.WriteCloser {
	s.mu.Lock()
	s.width = max(s.width, len(label))
	s.mu.Unlock()
	return &lineWriter{s: s, label: label}
}

func (s *lineSink) write(label string, line []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	prefix := ""
	if label != "" {
		prefix = fmt.Sprintf("%-*s | ", s.width, label)
	}
	_, err := io.WriteString(s.w, prefix+string(line))
	if err != nil {
		s.err = fmt.Errorf("write the logs: %w", err)
	}
	return s.err
}

func (s *lineSink) note(w io.Writer, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fmt.Fprintln(w, msg)
}

// lineWriter is one stream of a lineSink: it holds a partial line until its newline arrives.
type lineWriter struct {
	s     *lineSink
	label string
	buf   []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 && len(l.buf) < maxLine {
			return len(p), nil
		}
		end := i + 1
		if i < 0 {
			end = maxLine
		}
		line := l.buf[:end]
		if i < 0 {
			line = append(line[:end:end], '\n')
		}
		if err := l.s.write(l.label, line); err != nil {
			return 0, err
		}
		l.buf = l.buf[end:]
	}
}

// Close writes a last line that had no newline.
func (l *lineWriter) Close() error {
	if len(l.buf) == 0 {
		return nil
	}
	line := append(l.buf, '\n')
	l.buf = nil
	return l.s.write(l.label, line)
}
