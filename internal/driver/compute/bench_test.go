package compute

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/openclaw/occ/internal/testbed"
)

type apiCounter struct {
	n    atomic.Int64
	next http.RoundTripper
}

func (c *apiCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

var benchRun atomic.Int64

// BenchmarkPrepareNamespacesComputeOnly measures Compute's own share of namespace preparation
// (physical namespace plus the four baseline objects) for 50 and 200 new Namespaces at
// concurrency 16, with a driver that does nothing; the session package's benchmark adds the
// OpenShell driver and gateway. Reported per item: wall time and apiserver requests.
func BenchmarkPrepareNamespacesComputeOnly(b *testing.B) {
	for _, n := range []int{50, 200} {
		b.Run(fmt.Sprintf("namespaces=%d/concurrency=16", n), func(b *testing.B) {
			cfg := testbed.Config(b)
			counter := &apiCounter{}
			cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter })
			kc, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				b.Fatal(err)
			}
			comp := &Compute{Kube: kc, Driver: &recordingDriver{}}
			run := benchRun.Add(1)
			counter.n.Store(0)
			b.ResetTimer()
			var elapsed time.Duration
			for iter := range b.N {
				start := time.Now()
				sem := make(chan struct{}, 16)
				var wg sync.WaitGroup
				var failed atomic.Value
				for i := range n {
					wg.Add(1)
					sem <- struct{}{}
					go func() {
						defer wg.Done()
						defer func() { <-sem }()
						if _, err := comp.PrepareNamespace(context.Background(), fmt.Sprintf("ns_cbench_%d_%d_%d", run, iter, i)); err != nil {
							failed.Store(err)
						}
					}()
				}
				wg.Wait()
				elapsed += time.Since(start)
				if err, _ := failed.Load().(error); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			items := float64(b.N * n)
			b.ReportMetric(float64(elapsed.Microseconds())/items/1000, "ms/item")
			b.ReportMetric(float64(counter.n.Load())/items, "apireq/item")
		})
	}
}
