package images_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/testbed/dockerbed"
)

// Import time against image size: one image of incompressible data per size, pulled by digest
// first (not timed), then imported into a k3d cluster's node through the provider's importer and
// verified there (timed). The first import of each size is reported as first-import-s; the
// timed loop re-imports content the node already holds, which is what a repeated `occ dev up`
// against a kept cluster costs. Run with -benchtime=3x: each iteration moves the whole image.
func BenchmarkImport(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	bed := startBed(b, ctx)
	c := bed.cluster(b, ctx)
	for _, mib := range []int64{16, 64, 256} {
		b.Run(fmt.Sprintf("%dMiB", mib), func(b *testing.B) {
			size := mib << 20
			spec, err := dockerbed.SizedImage(size)
			if err != nil {
				b.Fatal(err)
			}
			pin, _ := bed.provide(b, ctx, spec)
			rec := newRecorder(b)
			l, err := images.Present(ctx, images.PresentOptions{API: bed.engine.API, Image: pin, Recorder: rec})
			if err != nil {
				b.Fatal(err)
			}
			importAndVerify := func() {
				imported, err := images.Import(ctx, images.ImportOptions{API: bed.engine.API, Importer: bed.provider.Importer(c.Name), Images: []images.Local{l}, Recorder: rec})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := images.VerifyInNode(ctx, images.VerifyOptions{API: bed.engine.API, Node: c.NodeContainer, Images: imported}); err != nil {
					b.Fatal(err)
				}
			}
			start := time.Now()
			importAndVerify()
			first := time.Since(start)
			b.SetBytes(size)
			b.ResetTimer()
			for range b.N {
				importAndVerify()
			}
			b.StopTimer()
			b.ReportMetric(first.Seconds(), "first-import-s")
		})
	}
}
