package images_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/testbed/dockerbed"
)

// Import time against image size: one image of incompressible data per size, pulled by digest
// first (not timed), then imported into a k3d cluster's node through the provider's importer and
// verified there (timed). The first import of each size is reported as first-import-s; the
// timed loop imports an image the node already holds as verified, which is what a repeated `occ
// dev up` against a kept cluster costs: nothing moves, the node is only read.
func BenchmarkImport(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	bed := startBed(b, ctx)
	c := bed.cluster(b, ctx)
	for _, mib := range []int64{16, 64, 256} {
		b.Run(fmt.Sprintf("%dMiB", mib), func(b *testing.B) {
			size := mib << 20
			_, l, rec := bed.sizedLocal(b, ctx, size)
			importAndVerify := func() {
				imported, err := images.Import(ctx, images.ImportOptions{Engine: bed.engine.Verbs(), Importer: bed.provider.Importer(c.Name), Images: []images.Local{l}, Recorder: rec})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := images.VerifyInNode(ctx, images.VerifyOptions{Engine: bed.engine.Verbs(), Node: c.NodeContainer, Images: imported}); err != nil {
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

// transferImporter imports as ctr does by default on containerd 2 (through containerd's transfer
// service), the way the k3d importer did before it passed --local: the contrast of
// BenchmarkImportLocalAgainstTransfer.
type transferImporter struct {
	images.Importer
	eng engine.Engine
}

func (t transferImporter) ImportImages(ctx context.Context, refs []string, pass images.Pass) error {
	stream, err := t.eng.Save(ctx, refs, pass.Save)
	if err != nil {
		return err
	}
	defer stream.Close()
	cmd := []string{"ctr", "image", "import"}
	if pass.Platform != "" {
		cmd = append(cmd, "--platform", pass.Platform)
	}
	res, err := t.eng.Exec(ctx, t.NodeContainer(), engine.ExecInput{Stdin: stream, Env: []string{"CONTAINERD_NAMESPACE=k8s.io"}},
		append(cmd, "-")...)
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("ctr image import exited with %d: %s", res.ExitCode, res.Stderr)
	}
	return err
}

// The k3d importer's import (ctr --local: ctr writes and unpacks the content itself) against
// ctr's default on containerd 2 (the transfer service), of the same 256 MiB image into the same
// node, side by side: each iteration imports and verifies the image both ways, in alternating
// order, removing it from the node (content and snapshots, synchronously) after each, so every
// import moves and unpacks the whole image. Metrics: local-s and transfer-s (means of import and
// verification) and local-ratio. Run with -benchtime=4x or more.
func BenchmarkImportLocalAgainstTransfer(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	bed := startBed(b, ctx)
	c := bed.cluster(b, ctx)
	pin, l, rec := bed.sizedLocal(b, ctx, 256<<20+109)
	local := bed.provider.Importer(c.Name)
	ways := []images.Importer{local, transferImporter{Importer: local, eng: bed.engine.Verbs()}}
	once := func(importer images.Importer) time.Duration {
		start := time.Now()
		imported, err := images.Import(ctx, images.ImportOptions{Engine: bed.engine.Verbs(), Importer: importer, Images: []images.Local{l}, Recorder: rec})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := images.VerifyInNode(ctx, images.VerifyOptions{Engine: bed.engine.Verbs(), Node: c.NodeContainer, Images: imported}); err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		ctr(b, ctx, bed.engine, c.NodeContainer, "images", "rm", "--sync", pin.DigestReference())
		return took
	}
	sideBySide(b, [2]string{"local", "transfer"}, func(way int) time.Duration { return once(ways[way]) })
}

// sideBySide times two ways of the same work b.N times each, in alternating order so that load
// on the shared machine falls on both, and reports the means (<name>-s) and the first's ratio to
// the second (<first>-ratio).
func sideBySide(b *testing.B, names [2]string, run func(way int) time.Duration) {
	var sums [2]time.Duration
	b.ResetTimer()
	for i := range b.N {
		for k := range 2 {
			way := (i + k) % 2
			d := run(way)
			b.Logf("iteration %d: %s %s", i, names[way], d.Round(10*time.Millisecond))
			sums[way] += d
		}
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(sums[0].Seconds()/n, names[0]+"-s")
	b.ReportMetric(sums[1].Seconds()/n, names[1]+"-s")
	b.ReportMetric(float64(sums[0])/float64(sums[1]), names[0]+"-ratio")
}

// sizedLocal serves an image of size bytes of incompressible data (dockerbed.SizedImage) from the
// bed's registry and makes it present in the engine by its pin, as up's pull does: the pin, the
// local image and the recorder of its pull.
func (bed *bed) sizedLocal(b *testing.B, ctx context.Context, size int64) (pins.Image, images.Local, *memRecorder) {
	b.Helper()
	spec, err := dockerbed.SizedImage(size)
	if err != nil {
		b.Fatal(err)
	}
	pin, _ := bed.provide(b, ctx, spec)
	rec := newRecorder(b)
	l, err := images.Present(ctx, images.PresentOptions{Engine: bed.engine.Verbs(), Image: pin, Recorder: rec})
	if err != nil {
		b.Fatal(err)
	}
	return pin, l, rec
}

// The import of the largest OpenShell stand-in (a 300 MiB Sandbox image, served as the real one
// is: an OCI index of linux/amd64 + linux/arm64 with attestation manifests) on each Docker image
// store, against the store's own pipe — the engine's save of one platform piped into ctr import
// in the node, with nothing checked — into the same node, side by side, alternating, the image
// removed from the node (content and snapshots, synchronously) after each. occ's side is Import
// and VerifyInNode: staging, the save, the import, and the proof in the node. Metrics per store:
// occ-s, pipe-s and occ-ratio. Run with -benchtime=1x or more.
func BenchmarkImportAgainstSavePipe(b *testing.B) {
	for _, f := range dockerbed.Flavours() {
		if f.Podman {
			continue
		}
		b.Run(f.Name, func(b *testing.B) {
			f.Use(b)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
			defer cancel()
			bed := startBed(b, ctx)
			c := bed.cluster(b, ctx)
			spec, err := dockerbed.SizedImage(300<<20 + 103)
			if err != nil {
				b.Fatal(err)
			}
			spec.Served = dockerbed.OCIIndexWithAttestations
			pin, _ := bed.provide(b, ctx, spec)
			rec := newRecorder(b)
			l, err := images.Present(ctx, images.PresentOptions{Engine: bed.engine.Verbs(), Image: pin, Recorder: rec})
			if err != nil {
				b.Fatal(err)
			}
			occ := func() {
				imported, err := images.Import(ctx, images.ImportOptions{Engine: bed.engine.Verbs(), Importer: bed.provider.Importer(c.Name), Images: []images.Local{l}, Recorder: rec})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := images.VerifyInNode(ctx, images.VerifyOptions{Engine: bed.engine.Verbs(), Node: c.NodeContainer, Images: imported}); err != nil {
					b.Fatal(err)
				}
				ctr(b, ctx, bed.engine, c.NodeContainer, "images", "rm", "--sync", pin.DigestReference())
			}
			pipe := func() {
				name := "occ.local/pipe/sized:" + c.Name
				if err := bed.engine.API.ImageTag(ctx, l.ID, name); err != nil {
					b.Fatal(err)
				}
				defer bed.Engine.Forget(name)
				stream, err := bed.engine.Verbs().Save(ctx, []string{name}, l.ManifestPlatform)
				if err != nil {
					b.Fatal(err)
				}
				defer stream.Close()
				res, err := bed.engine.Verbs().Exec(ctx, c.NodeContainer, engine.ExecInput{Stdin: stream, Env: []string{"CONTAINERD_NAMESPACE=k8s.io"}},
					"ctr", "image", "import", "--local", "--platform", l.Platform.String(), "-")
				if err != nil || res.ExitCode != 0 {
					b.Fatalf("the pipe's ctr import: %v %+v", err, res)
				}
				ctr(b, ctx, bed.engine, c.NodeContainer, "images", "rm", "--sync", name)
			}
			ways := []func(){occ, pipe}
			sideBySide(b, [2]string{"occ", "pipe"}, func(way int) time.Duration {
				start := time.Now()
				ways[way]()
				return time.Since(start)
			})
		})
	}
}
