package compose

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/openclaw/occ/internal/occdev/engine"
)

// LogOptions are the inputs of Stack.Logs, read as `docker compose logs` reads its flags.
type LogOptions struct {
	// Services are the services whose containers are read.
	Services []string
	// Follow keeps reading until ctx ends, and picks up every container of those services that
	// starts meanwhile (a restarted or recreated one).
	Follow bool
	// Since drops lines older than this instant (zero: keep all).
	Since time.Time
	// Tail is how many of each container's last lines to show first; negative means all.
	Tail int
	// Timestamps puts the engine's RFC 3339 timestamp in front of each line.
	Timestamps bool
	// Output returns where one stream (stdout or stderr) of a container of service goes; Stack
	// closes it when the stream ends.
	Output func(service string) io.WriteCloser
}

// Logs writes the logs of the services' containers (stopped ones too; one-off `compose run`
// containers excluded), each container read concurrently, as `docker compose logs` does.
//
// With Follow, a container that starts while Logs runs is read from then on: a new container
// (a recreated service) from its first line, a restarted one from the moment its previous run
// ended, so no line is shown twice. Logs subscribes to the project's container events before it
// lists the containers, so none can start unseen in between. It returns when ctx ends (nil:
// that is how a follow stops) or, without Follow, when every container's log is read.
func (s Stack) Logs(ctx context.Context, o LogOptions) error {
	evCtx, cancelEvents := context.WithCancel(ctx)
	defer cancelEvents()
	var msgs <-chan engine.Event
	var evErrs <-chan error
	if o.Follow {
		msgs, evErrs = s.containerRuns(evCtx)
	}
	// Events older than the listing are already reflected in it (the engine runs on this host,
	// so its clock is ours).
	listedAt := time.Now()
	list, err := s.Engine.List(ctx, engine.Containers, map[string]string{LabelProject: s.Project})
	if err != nil {
		return fmt.Errorf("list containers of Compose project %s: %w", s.Project, err)
	}
	slices.SortFunc(list, func(a, b engine.Object) int {
		return cmp.Or(strings.Compare(a.Labels[LabelService], b.Labels[LabelService]), a.Created.Compare(b.Created))
	})

	r := newLogReaders(ctx, s, o, listedAt)
	r.readListed(list)
	if !o.Follow {
		r.wg.Wait()
		return errors.Join(r.errs...)
	}
	for {
		select {
		case <-ctx.Done():
			r.wg.Wait()
			return nil
		case err := <-evErrs:
			cancelEvents()
			r.wg.Wait()
			if ctx.Err() != nil {
				return nil
			}
			return errors.Join(append(r.errs, fmt.Errorf("follow the containers of Compose project %s: the engine's event stream ended: %w", s.Project, err))...)
		case ev := <-msgs:
			r.event(ev)
		}
	}
}

// containerRuns subscribes to the starts and deaths of the project's containers.
func (s Stack) containerRuns(ctx context.Context) (<-chan engine.Event, <-chan error) {
	return s.Engine.Events(ctx, map[string]string{LabelProject: s.Project}, engine.EventStart, engine.EventDie)
}

// logReaders are the concurrent reads of one Logs call: which container runs are read, and
// what went wrong reading them.
type logReaders struct {
	ctx  context.Context
	s    Stack
	o    LogOptions
	want map[string]bool
	// listedAt is when the containers were listed.
	listedAt time.Time

	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error

	// following holds the containers whose current run is being read with follow; diedAt when
	// each one's last run ended; listed those the listing held.
	following map[string]bool
	diedAt    map[string]time.Time
	listed    map[string]bool
}

// newLogReaders reads the logs of o's services, listed at listedAt.
func newLogReaders(ctx context.Context, s Stack, o LogOptions, listedAt time.Time) *logReaders {
	want := map[string]bool{}
	for _, svc := range o.Services {
		want[svc] = true
	}
	return &logReaders{ctx: ctx, s: s, o: o, want: want, listedAt: listedAt,
		following: map[string]bool{}, diedAt: map[string]time.Time{}, listed: map[string]bool{}}
}

// wanted says whether a container with these labels is read: one of the services asked for,
// and not a one-off container.
func (r *logReaders) wanted(labels map[string]string) bool {
	return r.want[labels[LabelService]] && labels[LabelOneoff] != "True"
}

// read starts reading one container's log, keeping its error unless ctx ended.
func (r *logReaders) read(id, service string, since time.Time, tail int, follow bool) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if err := r.s.readLogs(r.ctx, id, service, since, tail, follow, r.o); err != nil && r.ctx.Err() == nil {
			r.mu.Lock()
			r.errs = append(r.errs, fmt.Errorf("logs of %s: %w", service, err))
			r.mu.Unlock()
		}
	}()
}

// readListed starts reading every wanted container of the listing, following the running ones
// when Follow is set.
func (r *logReaders) readListed(list []engine.Object) {
	for _, c := range list {
		if !r.wanted(c.Labels) {
			continue
		}
		svc := c.Labels[LabelService]
		running := c.State == stateRunning
		r.following[c.ID] = r.o.Follow && running
		r.listed[c.ID] = true
		if !running {
			// Its runs ended before the listing, which reads them whole; a later run is new.
			r.diedAt[c.ID] = r.listedAt
		}
		r.read(c.ID, svc, r.o.Since, r.o.Tail, r.o.Follow && running)
	}
}

// event follows a wanted container's run that starts after the listing, and notes when one
// ends, so that its next run is read from then.
func (r *logReaders) event(ev engine.Event) {
	if !r.wanted(ev.Labels) {
		return
	}
	svc := ev.Labels[LabelService]
	id := ev.Container
	at := ev.Time
	if r.listed[id] && at.Before(r.listedAt) {
		return
	}
	switch ev.Action {
	case engine.EventDie:
		r.following[id] = false
		r.diedAt[id] = at
	case engine.EventStart:
		if r.following[id] {
			// Listed as running already: its stream reads this run.
			return
		}
		r.following[id] = true
		// A restarted container keeps the lines of its earlier runs; read only this one.
		since := r.diedAt[id]
		if r.o.Since.After(since) {
			since = r.o.Since
		}
		r.read(id, svc, since, -1, true)
	}
}

// readLogs copies one container's log to the service's outputs: stdout and stderr each to an
// output of its own (so a partial line of one never joins a line of the other), or the one
// terminal stream of a container with a TTY.
func (s Stack) readLogs(ctx context.Context, id, service string, since time.Time, tail int, follow bool, o LogOptions) error {
	info, err := s.Engine.Inspect(ctx, engine.Containers, id)
	if err != nil {
		return fmt.Errorf("inspect container %s: %w", shortID(id), err)
	}
	stdout := o.Output(service)
	defer stdout.Close()
	stderr := io.Writer(stdout)
	if !info.TTY {
		out := o.Output(service)
		defer out.Close()
		stderr = out
	}
	err = s.Engine.Logs(ctx, id, engine.LogsRequest{Follow: follow, Timestamps: o.Timestamps, Tail: tail, Since: since, TTY: info.TTY}, stdout, stderr)
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("read the log of container %s: %w", shortID(id), err)
	}
	return nil
}
