package occdev_test

import (
	"context"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/occdev"
	kcp "github.com/openclaw/occ/internal/occdev/controlplane/kubernetes"
	"github.com/openclaw/occ/internal/occdev/reload"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/testbed/oceapi"
)

// An engineer's inner loop on the default profile: edit the controller's source, run `occ dev
// reload`, and have the recreated controller and worker ready; the build cache is warm (`up`
// built the same checkout), and only the development image changes. The wall time from the call
// to its return (the API and the worker ready) is the metric s-reload/op, with each step's.
func BenchmarkComposeReload(b *testing.B) {
	bed := newComposeBed(b)
	r := bed.run(b)
	ctx := context.Background()
	if _, err := occdev.Up(ctx, r.opts); err != nil {
		b.Fatalf("up: %v", err)
	}
	b.Cleanup(func() {
		if _, err := occdev.Down(context.Background(), occdev.DownOptions{StateDir: r.opts.StateDir}); err != nil {
			b.Errorf("down: %v", err)
		}
	})
	benchmarkReload(b, r.opts.StateDir, filepath.Join(r.checkout, serverScript))
}

// The same loop on the Kubernetes-only profile: the controller is rebuilt, imported and
// verified in the node, and the control plane's Deployments roll out onto it.
func BenchmarkKubernetesReload(b *testing.B) {
	startBuild()
	bed := newKubeBed(b)
	r := bed.run(b, oceapi.Options{Key: canaryKey, Password: canaryPassword})
	r.opts.Seams().AfterStep = func(step string) error {
		if step == "Install the OCE chart" {
			st, err := state.Read(r.opts.StateDir)
			if err != nil {
				return err
			}
			kube, _, _ := kubeClientOf(b, st.Cluster)
			r.startWorker(b, kube, kcp.DefaultNamespace)
		}
		return nil
	}
	ctx := context.Background()
	if _, err := occdev.Up(ctx, r.opts); err != nil {
		b.Fatalf("up: %v", err)
	}
	b.Cleanup(func() {
		if _, err := occdev.Down(context.Background(), occdev.DownOptions{StateDir: r.opts.StateDir}); err != nil {
			b.Errorf("down: %v", err)
		}
	})
	benchmarkReload(b, r.opts.StateDir, filepath.Join(bed.checkout, serverScript))
}

func benchmarkReload(b *testing.B, dir, script string) {
	ctx := context.Background()
	steps := map[string]time.Duration{}
	var total time.Duration
	var last *stepTimes
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		editSource(b, script, "benchmark edit")
		times := newStepTimes()
		b.StartTimer()
		start := time.Now()
		res, err := occdev.Reload(ctx, occdev.ReloadOptions{Options: reload.Options{StateDir: dir, Progress: times.sink}})
		total += time.Since(start)
		b.StopTimer()
		if err != nil {
			b.Fatalf("reload: %v", err)
		}
		if len(res.Rolled) == 0 {
			b.Fatalf("the edit rolled nothing: %+v", res)
		}
		times.mu.Lock()
		for _, l := range times.lines {
			steps[l.Step] += l.Took
		}
		times.mu.Unlock()
		last = times
	}
	n := float64(b.N)
	b.ReportMetric(total.Seconds()/n, "s-reload/op")
	names := make([]string, 0, len(steps))
	for name := range steps {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		b.ReportMetric(steps[name].Seconds()/n, "s-"+metricName(name)+"/op")
	}
	if last != nil {
		b.Logf("the last reload's steps (step, lane, start, took):\n%s", last.table())
	}
}
