package occdev_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/state"
)

// `occ dev up` on the k3d bed, step by step, with the lanes side by side (as shipped) and one
// after another (the Sequential seam), to measure what the overlap saves. Each iteration is a
// whole up (a new cluster) and down, from an engine that lacks the OpenShell images; the node and
// tools images are present, as after a first run. The per-step table comes from the progress
// events (mean over the iterations); wall-up-s is the whole up. Run with -benchtime=3x.
// The same up on the Podman bed (as shipped, overlapped) gives the per-step figures on each
// engine side by side in one run.
func BenchmarkUpK3d(b *testing.B) {
	b.Run("docker", func(b *testing.B) { benchmarkUpK3d(b, state.EngineDocker) })
	b.Run("podman", func(b *testing.B) { benchmarkUpK3d(b, state.EnginePodman) })
}

func benchmarkUpK3d(b *testing.B, kind engine.Kind) {
	bed := newK3dBedOn(b, nil, kind)
	// The node and tools images are pulled once, as a user's first run would.
	warm := bed.options(b)
	if _, err := occdev.Up(context.Background(), warm); err != nil {
		b.Fatalf("warm-up: %v", err)
	}
	if _, err := occdev.Down(context.Background(), occdev.DownOptions{StateDir: warm.StateDir}); err != nil {
		b.Fatal(err)
	}
	// The bed's archive is a local file and its images come from a registry in this process, so
	// the artifacts lane takes milliseconds. A laptop downloads the archive from GitHub: the
	// "download" variants serve it after a fixed latency (a stand-in for the network, not a
	// synchronisation), to show what the overlap buys when the artifacts lane has real work.
	slow := bed.slowArchive(b, 3*time.Second)
	for _, mode := range []struct {
		name       string
		sequential bool
		pinFile    string
	}{
		{"local-archive/overlap", false, ""}, {"local-archive/sequential", true, ""},
		{"download-3s/overlap", false, slow}, {"download-3s/sequential", true, slow},
	} {
		if kind == state.EnginePodman && (mode.sequential || mode.pinFile != "") {
			continue // the overlap's saving is the Docker runs' question; Podman's is the per-step figure
		}
		b.Run(mode.name, func(b *testing.B) {
			sums := map[string]time.Duration{}
			lanes := map[string]string{}
			var order []string
			var up, down time.Duration
			n := 0
			for b.Loop() {
				b.StopTimer()
				bed.forgetProducts(b)
				opts := bed.options(b)
				opts.Seams().Sequential = mode.sequential
				if mode.pinFile != "" {
					opts.PinFile, opts.ArchiveFile = mode.pinFile, ""
				}
				times := newStepTimes()
				opts.Progress = times.sink
				b.StartTimer()
				start := time.Now()
				if _, err := occdev.Up(context.Background(), opts); err != nil {
					b.Fatalf("up: %v", err)
				}
				up += time.Since(start)
				b.StopTimer()
				start = time.Now()
				if _, err := occdev.Down(context.Background(), occdev.DownOptions{StateDir: opts.StateDir}); err != nil {
					b.Fatalf("down: %v", err)
				}
				down += time.Since(start)
				for _, l := range times.lines {
					// The cluster's step carries the run's cluster name.
					name := l.Step
					if strings.HasPrefix(name, "Create k3d cluster ") {
						name = "Create k3d cluster <name>"
					}
					if _, ok := sums[name]; !ok {
						order = append(order, name)
					}
					sums[name] += l.Took
					lanes[name] = l.Lane
				}
				n++
				b.StartTimer()
			}
			b.StopTimer()
			b.ReportMetric(up.Seconds()/float64(n), "wall-up-s")
			b.ReportMetric(down.Seconds()/float64(n), "wall-down-s")
			var t strings.Builder
			for _, name := range order {
				lane := lanes[name]
				if lane == "" {
					lane = "-"
				}
				fmt.Fprintf(&t, "%-62s %-10s %8s\n", name, lane, (sums[name] / time.Duration(n)).Round(10*time.Millisecond))
			}
			// Printed rather than logged: a benchmark's log is cut after a few lines.
			fmt.Printf("%s/%s: mean per step over %d run(s) (step, lane, took):\n%s", kind, mode.name, n, t.String())
		})
	}
}

// slowArchive serves the bed's archive over HTTP after latency, and returns a pin file that
// downloads it from there (into each run's empty cache).
func (b *k3dBed) slowArchive(t testing.TB, latency time.Duration) string {
	data, err := os.ReadFile(b.archive)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(latency):
		case <-r.Context().Done():
			return
		}
		_, _ = w.Write(data)
	}))
	t.Cleanup(srv.Close)
	set := *b.set
	set.OpenShell.SourceArchive.URL = srv.URL + "/openshell.tar.gz"
	return b.writePins(&set)
}
