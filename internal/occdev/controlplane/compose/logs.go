package compose

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/pkg/stdcopy"
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
	want := map[string]bool{}
	for _, svc := range o.Services {
		want[svc] = true
	}
	evCtx, cancelEvents := context.WithCancel(ctx)
	defer cancelEvents()
	var msgs <-chan events.Message
	var evErrs <-chan error
	if o.Follow {
		msgs, evErrs = s.Engine.Events(evCtx, events.ListOptions{Filters: filters.NewArgs(
			filters.Arg("type", string(events.ContainerEventType)),
			filters.Arg("label", LabelProject+"="+s.Project),
			filters.Arg("event", string(events.ActionStart)),
			filters.Arg("event", string(events.ActionDie)),
		)})
	}
	// Events older than the listing are already reflected in it (the engine runs on this host,
	// so its clock is ours).
	listedAt := time.Now()
	list, err := s.Engine.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", LabelProject+"="+s.Project))})
	if err != nil {
		return fmt.Errorf("list containers of Compose project %s: %w", s.Project, err)
	}
	slices.SortFunc(list, func(a, b container.Summary) int {
		return cmp.Or(strings.Compare(a.Labels[LabelService], b.Labels[LabelService]), cmp.Compare(a.Created, b.Created))
	})

	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	read := func(id, service string, since time.Time, tail int, follow bool) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.readLogs(ctx, id, service, since, tail, follow, o); err != nil && ctx.Err() == nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("logs of %s: %w", service, err))
				mu.Unlock()
			}
		}()
	}
	// following holds the containers whose current run is being read with follow; diedAt when
	// each one's last run ended.
	following := map[string]bool{}
	diedAt := map[string]time.Time{}
	listed := map[string]bool{}
	for _, c := range list {
		svc := c.Labels[LabelService]
		if !want[svc] || c.Labels[LabelOneoff] == "True" {
			continue
		}
		running := c.State == container.StateRunning
		following[c.ID] = o.Follow && running
		listed[c.ID] = true
		if !running {
			// Its runs ended before the listing, which reads them whole; a later run is new.
			diedAt[c.ID] = listedAt
		}
		read(c.ID, svc, o.Since, o.Tail, o.Follow && running)
	}
	if !o.Follow {
		wg.Wait()
		return errors.Join(errs...)
	}
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return nil
		case err := <-evErrs:
			cancelEvents()
			wg.Wait()
			if ctx.Err() != nil {
				return nil
			}
			return errors.Join(append(errs, fmt.Errorf("follow the containers of Compose project %s: the engine's event stream ended: %w", s.Project, err))...)
		case ev := <-msgs:
			svc := ev.Actor.Attributes[LabelService]
			if !want[svc] || ev.Actor.Attributes[LabelOneoff] == "True" {
				continue
			}
			id := ev.Actor.ID
			at := time.Unix(0, ev.TimeNano)
			if listed[id] && at.Before(listedAt) {
				continue
			}
			switch ev.Action {
			case events.ActionDie:
				following[id] = false
				diedAt[id] = at
			case events.ActionStart:
				if following[id] {
					// Listed as running already: its stream reads this run.
					continue
				}
				following[id] = true
				// A restarted container keeps the lines of its earlier runs; read only this one.
				since := diedAt[id]
				if o.Since.After(since) {
					since = o.Since
				}
				read(id, svc, since, -1, true)
			}
		}
	}
}

// readLogs copies one container's log to the service's outputs: stdout and stderr each to an
// output of its own (so a partial line of one never joins a line of the other), or the one
// terminal stream of a container with a TTY.
func (s Stack) readLogs(ctx context.Context, id, service string, since time.Time, tail int, follow bool, o LogOptions) error {
	info, err := s.Engine.ContainerInspect(ctx, id)
	if err != nil {
		return fmt.Errorf("inspect container %s: %w", shortID(id), err)
	}
	opts := container.LogsOptions{ShowStdout: true, ShowStderr: true, Follow: follow, Timestamps: o.Timestamps, Tail: "all"}
	if tail >= 0 {
		opts.Tail = strconv.Itoa(tail)
	}
	if !since.IsZero() {
		opts.Since = since.UTC().Format(time.RFC3339Nano)
	}
	rc, err := s.Engine.ContainerLogs(ctx, id, opts)
	if err != nil {
		return fmt.Errorf("read the log of container %s: %w", shortID(id), err)
	}
	defer rc.Close()
	stdout := o.Output(service)
	defer stdout.Close()
	if info.Config != nil && info.Config.Tty {
		_, err = io.Copy(stdout, rc)
	} else {
		stderr := o.Output(service)
		defer stderr.Close()
		_, err = stdcopy.StdCopy(stdout, stderr, rc)
	}
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("read the log of container %s: %w", shortID(id), err)
	}
	return nil
}
