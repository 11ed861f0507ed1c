package occdev_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/pinbundle"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/testbed/dockerbed"
)

// BenchmarkUpFromBundle measures, side by side in one run on the default engine (Docker 29 on
// its containerd store), `occ dev up` of the same pins three ways:
//
//	warm-registry   every image pulled by digest from the bed's registry with its layers already
//	                in the engine (a pull is a manifest round trip);
//	limited-25MBps  the three OpenShell images (the anchor benchmark's sizes, limitedSizes, each
//	                a one-platform index) downloaded over a 25 MB/s link every run;
//	bundle          `up --bundle --offline` from a bundle of those pins, every pinned image
//	                absent from the engine and loaded from the file.
//
// It reports each one's up in seconds, the bundle's over the others, and the bundle's size over
// the sum of the pinned images' compressed sizes (their layers, configs and manifests for one
// platform, as a registry serves them). Run it with:
//
//	go test -run '^$' -bench BenchmarkUpFromBundle -benchtime 1x ./internal/occdev/
func BenchmarkUpFromBundle(b *testing.B) {
	bed := newK3dBed(b, nil)
	ctx := context.Background()
	reg := startLimitedRegistry(b, limitedRate)
	set := *bed.set
	var imgs []pins.Image
	for _, size := range limitedSizes {
		spec, err := dockerbed.SizedImage(size)
		if err != nil {
			b.Fatal(err)
		}
		imgs = append(imgs, reg.push(b, spec, true))
	}
	set.OpenShell.Images = pins.Images{Gateway: imgs[0], Sandbox: imgs[1], Supervisor: imgs[2]}
	manifest := k3dAgentSandboxManifest(set.OpenShell.Images)
	set.AgentSandbox.Manifest = serveManifest(b, manifest)
	pinFile := bed.writePins(&set)
	products := []string{imgs[0].DigestReference(), imgs[1].DigestReference(), imgs[2].DigestReference()}
	cluster := []string{bed.set.K3s.Image.DigestReference(), bed.set.K3d.ToolsImage.DigestReference()}

	loaded, err := pins.Load(pinFile)
	if err != nil {
		b.Fatal(err)
	}
	loaded.OpenShell.SourceArchive.URL = serveFile(b, bed.archive)
	pinFile = bed.writePins(loaded)
	if loaded, err = pins.Load(pinFile); err != nil {
		b.Fatal(err)
	}
	bundle := filepath.Join(b.TempDir(), "bundle.tar")
	start := time.Now()
	c, err := pinbundle.Create(ctx, pinbundle.CreateOptions{Pins: loaded, Platforms: []v1.Platform{{OS: "linux", Architecture: runtime.GOARCH}}, Out: bundle})
	if err != nil {
		b.Fatal(err)
	}
	created := time.Since(start)
	var imageBytes int64
	for _, a := range c.Artifacts {
		if a.Kind == pinbundle.KindImage {
			imageBytes += a.Size
		}
	}
	fi, err := os.Stat(bundle)
	if err != nil {
		b.Fatal(err)
	}

	up := func(name string, opts occdev.UpOptions, prepare func()) time.Duration {
		prepare()
		opts.PinFile, opts.ArchiveFile = pinFile, ""
		start := time.Now()
		if _, err := occdev.Up(ctx, opts); err != nil {
			b.Fatalf("%s: up: %v", name, err)
		}
		took := time.Since(start)
		if _, err := occdev.Down(ctx, occdev.DownOptions{StateDir: opts.StateDir}); err != nil {
			b.Fatalf("%s: down: %v", name, err)
		}
		return took
	}
	// The hold tags (holdLayers) go with the images: left behind, they would keep the layers in
	// the engine, and every later limited run (this benchmark's, the anchor's) would not cross
	// the link.
	held := append(slices.Clone(products), holdTags(len(products))...)
	b.Cleanup(func() { removeImages(b, bed, held) })
	var warm, limited, fromBundle time.Duration
	for b.Loop() {
		b.StopTimer()
		// A first run pulls the OpenShell images over the link; the next finds their layers
		// in the engine (holdLayers).
		served := reg.servedSoFar()
		limited += up("limited", bed.options(b), func() { removeImages(b, bed, held) })
		reg.mustDownload(b, "occ dev up (limited)", served)
		warm += up("warm", bed.options(b), func() { holdLayers(b, bed, products) })
		opts := bed.options(b)
		opts.Bundle, opts.Offline = bundle, true
		fromBundle += up("bundle", opts, func() {
			removeImages(b, bed, held)
			bed.Engine.Forget(cluster...)
		})
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(warm.Seconds()/n, "warm-up-s")
	b.ReportMetric(limited.Seconds()/n, "limited-up-s")
	b.ReportMetric(fromBundle.Seconds()/n, "bundle-up-s")
	b.ReportMetric(fromBundle.Seconds()/warm.Seconds(), "bundle/warm")
	b.ReportMetric(fromBundle.Seconds()/limited.Seconds(), "bundle/limited")
	b.ReportMetric(float64(fi.Size())/float64(imageBytes), "bundle-size/images")
	fmt.Printf("up: warm registry %.2f s, limited 25 MB/s %.2f s, --bundle --offline %.2f s (%.2f× warm, %.2f× limited)\n",
		warm.Seconds()/n, limited.Seconds()/n, fromBundle.Seconds()/n, fromBundle.Seconds()/warm.Seconds(), fromBundle.Seconds()/limited.Seconds())
	fmt.Printf("bundle: %d bytes for %d bytes of pinned images (%.3f×), created in %.2f s from the limited registry\n",
		fi.Size(), imageBytes, float64(fi.Size())/float64(imageBytes), created.Seconds())
}

// serveFile serves the file at path over HTTP for the benchmark and returns its URL.
func serveFile(b *testing.B, path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(data) }))
	b.Cleanup(srv.Close)
	return srv.URL + "/" + filepath.Base(path)
}

// holdLayers pulls refs (untimed) and keeps their content in the engine under a tag of the
// benchmark's own, then removes the digest references: the next pull of each is a manifest
// round trip, as from a registry whose images the engine has pulled before. (On the containerd
// store, content no image names is collected, so the tag is what keeps it.)
func holdLayers(b *testing.B, bed *k3dBed, refs []string) {
	ctx := context.Background()
	tags := holdTags(len(refs))
	for i, ref := range refs {
		if _, err := bed.Engine.Pull(ctx, ref); err != nil {
			b.Fatal(err)
		}
		if err := bed.engine.API.ImageTag(ctx, ref, tags[i]); err != nil {
			b.Fatal(err)
		}
	}
	bed.Engine.Forget(refs...)
}

// holdTags are the n tags holdLayers keeps layers under.
func holdTags(n int) []string {
	tags := make([]string, n)
	for i := range tags {
		tags[i] = fmt.Sprintf("occ-bench/hold:%d", i)
	}
	return tags
}
