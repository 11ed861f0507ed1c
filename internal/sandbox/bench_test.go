package sandbox

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/gateway/emulator"
	"github.com/openclaw/occ/internal/testbed"
)

// apiCounter counts requests to the apiserver.
type apiCounter struct {
	n    atomic.Int64
	next http.RoundTripper
}

func (c *apiCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

var benchRun atomic.Int64

// BenchmarkPrepareNamespaces runs the whole namespace-preparation path (physical namespace,
// baseline isolation, OpenShell ensureNamespace with its workspace resources, provider
// NetworkPolicy, Health and Workspace creation) for 50 and for 200 new OCC Namespaces at
// concurrency 16, against the test bed apiserver and the gateway emulator. Per-item cost that
// stays flat from 50 to 200 means nothing in the path grows with the number of Namespaces.
// Reported per item: wall time, apiserver requests and gateway RPCs.
func BenchmarkPrepareNamespaces(b *testing.B) {
	for _, n := range []int{50, 200} {
		b.Run(fmt.Sprintf("namespaces=%d/concurrency=16", n), func(b *testing.B) {
			benchPrepare(b, n, 16, false)
		})
	}
	// Re-preparing namespaces that are already prepared: what every reconcile pays.
	b.Run("namespaces=50/concurrency=16/already-prepared", func(b *testing.B) {
		benchPrepare(b, 50, 16, true)
	})
}

func benchPrepare(b *testing.B, n, concurrency int, prepared bool) {
	ctx := context.Background()
	kc := testbed.Client(b)
	ensureRuntimeClass(b, kc)
	srv := emulator.StartT(b, emulator.Options{Kube: kc})
	cfg := testbed.Config(b)
	counter := &apiCounter{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter })
	s, err := Connect(ctx, devInstallation(b), cfg, Options{Gateway: srv.Addr()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()

	run := benchRun.Add(1)
	ids := func(iter int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("ns_bench_%d_%d_%d", run, iter, i)
		}
		return out
	}
	prepareAll := func(list []string) {
		sem := make(chan struct{}, concurrency)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var first error
		for _, id := range list {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				if _, err := s.Compute.PrepareNamespace(ctx, id); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if first != nil {
			b.Fatal(first)
		}
	}

	var fixed []string
	if prepared {
		fixed = ids(-1)
		prepareAll(fixed)
	}
	// Warm the discovery cache of the object applier outside the measurement.
	srv.Journal().Reset()
	counter.n.Store(0)
	b.ResetTimer()
	var elapsed time.Duration
	for i := range b.N {
		list := fixed
		if !prepared {
			list = ids(i)
		}
		start := time.Now()
		prepareAll(list)
		elapsed += time.Since(start)
	}
	b.StopTimer()
	items := float64(b.N * n)
	b.ReportMetric(float64(elapsed.Microseconds())/items/1000, "ms/item")
	b.ReportMetric(float64(counter.n.Load())/items, "apireq/item")
	b.ReportMetric(float64(len(srv.Journal().Calls()))/items, "rpc/item")
	b.ReportMetric(float64(len(srv.Journal().Mutations()))/items, "mutrpc/item")
}
