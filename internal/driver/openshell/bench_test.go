package openshell

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/gateway/emulator"
)

// Minimum work per operation, the yardstick for the counts the benchmarks report.
//
// ensureNamespace on an already prepared Namespace: the seed's flow has to look at the
// namespace's labels (1 request), apply each of the fixture's 5 configured objects (5), ask for
// Health and read the Workspace (2 RPCs). The driver also reads each configured object before
// any write (5 more requests) so that an object owned by another Namespace is refused before the
// first mutation instead of half-way through. The reads go out together, then the applies, so
// the Kubernetes side costs two round trips, not eleven.
//
// provisionHarness of a new Codex revision in a Workspace that already holds the shared runtime
// profile: the revision's runtime provider and its Sandbox must be created (2 RPCs). The driver
// (like the reference) also reads the profile, the provider and the Sandbox first, so a repeat
// never re-sends a create (5 RPCs in all), and needs no Kubernetes request at all. The three
// reads do not depend on each other and go out together; the Sandbox names the provider, so the
// creates stay in order: the dependency chain is 3 round trips (provisionPathRoundTrips).
const (
	minEnsureKubeRequests   = 1 + 5
	minEnsureRPCs           = 2
	minProvisionRPCs        = 2
	provisionPathRoundTrips = 3
)

func benchEnv(b *testing.B, o envOptions) *env {
	o.gateway.AdmissionLimit = 1 << 30
	return newEnv(b, o)
}

// BenchmarkEnsureNamespacePrepared reports Kubernetes requests and gateway RPCs per
// ensureNamespace on a Namespace that is already prepared (the steady state of every reconcile).
func BenchmarkEnsureNamespacePrepared(b *testing.B) {
	e := benchEnv(b, envOptions{})
	d := e.driver(nil)
	if err := d.EnsureNamespace(e.ctx, e.nctx()); err != nil {
		b.Fatal(err)
	}
	e.counter.reset()
	e.gw.Journal().Reset()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := d.EnsureNamespace(e.ctx, e.nctx()); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(e.counter.reads.Load())/n, "kube-reads/op")
	b.ReportMetric(float64(e.counter.writes.Load())/n, "kube-writes/op")
	b.ReportMetric(float64(len(e.gw.Journal().Calls()))/n, "rpcs/op")
	b.ReportMetric(minEnsureKubeRequests, "min-kube/op")
	b.ReportMetric(minEnsureRPCs, "min-rpcs/op")
}

// BenchmarkProvisionHarness reports requests per provisioning of a new Codex revision.
func BenchmarkProvisionHarness(b *testing.B) {
	e := benchEnv(b, envOptions{})
	d := e.driver(nil)
	e.prepare(d)
	base := e.attach(d, e.hctx(driver.HarnessCodex))
	revs := make([]driver.HarnessContext, b.N)
	for i := range revs {
		revs[i] = withRevision(base, "rev_"+uuid.NewString())
	}
	e.counter.reset()
	e.gw.Journal().Reset()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := d.ProvisionHarness(e.ctx, revs[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(e.counter.total())/n, "kube-requests/op")
	b.ReportMetric(float64(len(e.gw.Journal().Calls()))/n, "rpcs/op")
	b.ReportMetric(float64(len(e.gw.Journal().Mutations()))/n, "mutating-rpcs/op")
	b.ReportMetric(minProvisionRPCs, "min-rpcs/op")
}

// BenchmarkProvisionHarnessLatency20ms provisions with 20 ms added to every gateway call.
// floor-ms/op is the RPC count times 20 ms (every call in sequence); path-floor-ms/op is the
// dependency chain's 3 round trips (reads together, then CreateProvider, then CreateSandbox),
// and x-path-floor how far above it the wall time is (the goal: at most 1.2).
func BenchmarkProvisionHarnessLatency20ms(b *testing.B) {
	const latency = 20 * time.Millisecond
	e := benchEnv(b, envOptions{})
	d := e.driver(nil)
	e.prepare(d)
	base := e.attach(d, e.hctx(driver.HarnessCodex))
	revs := make([]driver.HarnessContext, b.N)
	for i := range revs {
		revs[i] = withRevision(base, "rev_"+uuid.NewString())
	}
	e.gw.Inject(emulator.Fault{Kind: emulator.FaultLatency, Delay: latency, Count: -1})
	e.gw.Journal().Reset()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if _, err := d.ProvisionHarness(e.ctx, revs[i]); err != nil {
			b.Fatal(err)
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	rpcs := float64(len(e.gw.Journal().Calls())) / float64(b.N)
	b.ReportMetric(float64(elapsed.Milliseconds())/float64(b.N), "ms/op")
	b.ReportMetric(rpcs*float64(latency.Milliseconds()), "floor-ms/op")
	b.ReportMetric(minProvisionRPCs*float64(latency.Milliseconds()), "min-floor-ms/op")
	pathFloor := provisionPathRoundTrips * float64(latency.Milliseconds())
	b.ReportMetric(pathFloor, "path-floor-ms/op")
	b.ReportMetric(float64(elapsed.Microseconds())/1000/float64(b.N)/pathFloor, "x-path-floor")
}

// BenchmarkEnsureNamespaceMany prepares 50 and 200 fresh Namespaces with 16 workers sharing one
// driver, gateway and Kubernetes client, as one worker process would; the per-item cost should
// stay flat as the count grows.
func BenchmarkEnsureNamespaceMany(b *testing.B) {
	e := benchEnv(b, envOptions{})
	d := e.driver(nil)
	for _, count := range []int{50, 200} {
		b.Run(fmt.Sprintf("namespaces=%d", count), func(b *testing.B) {
			var perItem float64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				namespaces := make([]driver.Namespace, count)
				for j := range namespaces {
					namespaces[j] = e.extraNamespace()
				}
				b.StartTimer()
				start := time.Now()
				var next atomic.Int64
				var wg sync.WaitGroup
				errs := make(chan error, count)
				for w := 0; w < 16; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for {
							j := int(next.Add(1)) - 1
							if j >= count {
								return
							}
							nctx := e.nctx()
							nctx.Namespace = namespaces[j]
							if err := d.EnsureNamespace(e.ctx, nctx); err != nil {
								errs <- err
								return
							}
						}
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					b.Fatal(err)
				}
				perItem += float64(time.Since(start).Microseconds()) / 1000 / float64(count)
			}
			b.ReportMetric(perItem/float64(b.N), "ms/namespace")
		})
	}
}
