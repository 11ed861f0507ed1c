package podmanbed

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/openclaw/occ/internal/testbed/dockerbed"
)

// DriveHealthchecks runs, every interval until stop is called (or the test ends), the
// healthcheck of every running container that carries the label label=value, through Podman's
// own API (GET /libpod/containers/<id>/healthcheck: Podman runs the check in the container and
// records the result as the container's health, as its timer would).
//
// Podman 4.3 schedules healthchecks with systemd transient timers and has no timer of its own.
// The bed's machine has no systemd (Podman logs "unable to get systemd connection to add
// healthchecks"), so without this a container's health stays "starting" for ever and Compose's
// `depends_on: condition: service_healthy` never proceeds. On a host with systemd, as a Fedora
// laptop's rootful or rootless Podman, the timers run the same checks.
func DriveHealthchecks(t testing.TB, e *dockerbed.Engine, label, value string, interval time.Duration) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", e.Socket)
	}}}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		f := filters.NewArgs(filters.Arg("label", label+"="+value), filters.Arg("status", "running"))
		for {
			list, err := e.API.ContainerList(ctx, container.ListOptions{Filters: f})
			if err == nil {
				for _, c := range list {
					runCheck(ctx, hc, c.ID)
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			wg.Wait()
			hc.CloseIdleConnections()
		})
	}
	t.Cleanup(stop)
	return stop
}

// runCheck runs one container's healthcheck; a container without one answers 409, which is
// fine: there is nothing to run.
func runCheck(ctx context.Context, hc *http.Client, id string) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://podman/v4.0.0/libpod/containers/"+url.PathEscape(id)+"/healthcheck", nil)
	if err != nil {
		return
	}
	resp, err := hc.Do(req)
	if err != nil {
		return
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}
