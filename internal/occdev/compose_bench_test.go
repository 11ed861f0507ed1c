package occdev_test

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/occdev"
)

// An engineer's `occ dev up` of the default profile (Kubernetes Compute, OpenShell, the Compose
// control plane) from an OCE checkout, and the `occ dev down` after it, on the Docker + k3d bed:
// the wall time of each step (and of the whole up and down) as benchmark metrics, seconds per
// run, named after the steps. The images' layers and the BuildKit cache are warm after the first
// run, as on a laptop that ran `up` before.
func BenchmarkComposeUp(b *testing.B) {
	bed := newComposeBed(b)
	ctx := context.Background()
	steps := map[string]time.Duration{}
	var up, down time.Duration
	var last *stepTimes
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		bed.forgetProducts(b)
		r := bed.run(b)
		times := newStepTimes()
		r.opts.Progress = times.sink
		b.StartTimer()
		start := time.Now()
		_, err := occdev.Up(ctx, r.opts)
		up += time.Since(start)
		if err != nil {
			b.Fatalf("up: %v", err)
		}
		start = time.Now()
		if _, err := occdev.Down(ctx, occdev.DownOptions{StateDir: r.opts.StateDir}); err != nil {
			b.Fatalf("down: %v", err)
		}
		down += time.Since(start)
		b.StopTimer()
		times.mu.Lock()
		for _, l := range times.lines {
			steps[l.Step] += l.Took
		}
		times.mu.Unlock()
		last = times
	}
	n := float64(b.N)
	b.ReportMetric(up.Seconds()/n, "s-up/op")
	b.ReportMetric(down.Seconds()/n, "s-down/op")
	names := make([]string, 0, len(steps))
	for name := range steps {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		b.ReportMetric(steps[name].Seconds()/n, "s-"+metricName(name)+"/op")
	}
	if last != nil {
		b.Logf("the last run's steps (step, lane, start, took):\n%s", last.table())
	}
}

// metricName turns a step name into a benchmark unit: lower case, words joined by '-', the
// cluster's random name dropped.
func metricName(step string) string {
	var words []string
	for _, w := range strings.Fields(strings.ToLower(step)) {
		if strings.HasPrefix(w, "occ-dev-") {
			w = "cluster"
		}
		w = strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
				return r
			}
			return -1
		}, w)
		if w != "" {
			words = append(words, w)
		}
	}
	return strings.Join(words, "-")
}
