package occdev_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/pinbundle"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/state"
)

// bundleWorld is a bundle of the bed's pins and the counters that prove nothing else was asked:
// the bed's registry (every pull by the engine, k3d's included, goes there), the archive's and
// the Agent Sandbox manifest's servers, and occ's own HTTP client, whose every dial is recorded.
type bundleWorld struct {
	pinFile, bundle string
	set             *pins.Set
	downloads       atomic.Int64
	dials           *dialRecorder
}

// dialRecorder is a transport that records every connection it is asked for and makes none.
type dialRecorder struct {
	mu    sync.Mutex
	addrs []string
}

func (d *dialRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, req.URL.Host)
	d.mu.Unlock()
	return nil, &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("the test records dials and makes none")}
}

func (d *dialRecorder) recorded() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.addrs...)
}

// newBundleWorld serves the bed's archive and Agent Sandbox manifest from counting servers, writes
// pins that download them from there, and bundles those pins for platform from the bed's
// registry (online, as a CI job or a laptop before a flight does).
func (b *k3dBed) newBundleWorld(t *testing.T, platform string) *bundleWorld {
	t.Helper()
	w := &bundleWorld{dials: &dialRecorder{}}
	archive, err := os.ReadFile(b.archive)
	if err != nil {
		t.Fatal(err)
	}
	manifest := k3dAgentSandboxManifest(b.set.OpenShell.Images)
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.downloads.Add(1)
		if strings.HasSuffix(r.URL.Path, ".yaml") {
			_, _ = rw.Write(manifest)
			return
		}
		_, _ = rw.Write(archive)
	}))
	t.Cleanup(srv.Close)
	set := *b.set
	set.OpenShell.SourceArchive.URL = srv.URL + "/openshell.tar.gz"
	set.AgentSandbox.Manifest.URL = srv.URL + "/sandbox.yaml"
	w.pinFile = b.writePins(&set)
	if w.set, err = pins.Load(w.pinFile); err != nil {
		t.Fatal(err)
	}
	p, err := pinbundle.ParsePlatforms(platform)
	if err != nil {
		t.Fatal(err)
	}
	w.bundle = filepath.Join(t.TempDir(), "bundle.tar")
	c, err := pinbundle.Create(context.Background(), pinbundle.CreateOptions{Pins: w.set, Platforms: p, Out: w.bundle})
	if err != nil {
		t.Fatal(err)
	}
	// The bed serves every pinned image as a multi-platform index, as registries do: the bundle
	// keeps each index whole (its digest the pin) and the chosen platform's content.
	in, err := pinbundle.Inspect(w.bundle)
	if err != nil || len(in.Artifacts) != len(c.Artifacts) || len(c.Artifacts) != 7 {
		t.Fatalf("inspect %+v (%v), want the 7 artifacts create wrote", in, err)
	}
	for _, a := range in.Artifacts {
		if a.Kind == pinbundle.KindImage && (len(a.Platforms) != 1 || a.Platforms[0].Platform != platform || !strings.Contains(a.MediaType, "index") && !strings.Contains(a.MediaType, "list")) {
			t.Errorf("bundle artifact %s: %s %+v, want an index with %s", a.Pin, a.MediaType, a.Platforms, platform)
		}
	}
	if _, err := pinbundle.Verify(context.Background(), w.bundle, nil); err != nil {
		t.Fatal(err)
	}
	w.downloads.Store(0)
	return w
}

// options are the bed's up options taking everything from the bundle, offline, with occ's
// HTTP client recording every dial.
func (w *bundleWorld) options(t *testing.T, b *k3dBed) occdev.UpOptions {
	opts := b.options(t)
	opts.PinFile, opts.ArchiveFile = w.pinFile, ""
	opts.Bundle, opts.Offline = w.bundle, true
	opts.HTTPClient = &http.Client{Transport: w.dials}
	return opts
}

// forgetPinned removes every pinned image's digest reference from the engine, so the run must
// take each from the bundle (a laptop that never pulled them).
func (b *k3dBed) forgetPinned(t *testing.T) []string {
	t.Helper()
	refs := append(b.productRefs(), b.set.K3s.Image.DigestReference(), b.set.K3d.ToolsImage.DigestReference())
	for _, ref := range refs {
		if b.imageID(t, ref) != "" {
			b.Engine.Forget(ref)
		}
		if id := b.imageID(t, ref); id != "" {
			t.Fatalf("%s is still in the engine (%s) before the run", ref, id)
		}
	}
	return refs
}

// otherPlatform is a platform the bed's engine does not run.
func otherPlatform() string {
	if runtime.GOARCH == "arm64" {
		return "linux/amd64"
	}
	return "linux/arm64"
}

// A developer bundles the pins before a flight and runs `occ dev up --bundle --offline` on the
// plane: every pinned image is loaded from the bundle (none was in the engine), the archive and
// manifest come from it, and nothing reaches a registry or a download server — the bed's registry
// counts no request, the download server none, occ's HTTP client dials nothing. The images are
// verified in the node as pulled ones are, status shows every image matching and the bundle, and
// down removes every loaded image. Bundles that cannot serve the run (made for another platform,
// cut short) are refused before anything is created, naming what they lack.
func testUpFromABundleOffline(t *testing.T, b *k3dBed) {
	w := b.newBundleWorld(t, pinbundle.DefaultPlatform())

	// The refusals come before the engine is asked for anything but its store and platform:
	// one engine shows them.
	if b.kind == state.EngineDocker {
		testBundleRefusals(t, b, w)
	}
	t.Run("the Kubernetes-only profile", func(t *testing.T) { upFromBundle(t, b, w, occdev.ControlPlaneKubernetes) })
	if b.kind == state.EngineDocker {
		// The Compose profile differs in the Gateway's Service and namespace, not in how the
		// artifacts arrive: one engine shows it.
		t.Run("the Compose profile", func(t *testing.T) { upFromBundle(t, b, w, occdev.ControlPlaneCompose) })
	}
}

// testBundleRefusals: bundles that cannot serve the run (made for another platform, cut short,
// altered) are refused before anything exists, naming what is wrong.
func testBundleRefusals(t *testing.T, b *k3dBed, w *bundleWorld) {
	t.Run("a bundle for another platform is refused before anything exists", func(t *testing.T) {
		other := b.newBundleWorld(t, otherPlatform())
		opts := other.options(t, b)
		upFails(t, b, opts, "bundle "+other.bundle+" lacks sha256:", "manifest of", "occ dev bundle create")
	})
	t.Run("a truncated bundle is refused before anything exists", func(t *testing.T) {
		data, err := os.ReadFile(w.bundle)
		if err != nil {
			t.Fatal(err)
		}
		cut := filepath.Join(t.TempDir(), "cut.tar")
		if err := os.WriteFile(cut, data[:len(data)*2/3], 0o600); err != nil {
			t.Fatal(err)
		}
		opts := w.options(t, b)
		opts.Bundle = cut
		upFails(t, b, opts, "bundle "+cut+" is not intact")
	})

	t.Run("a tampered bundle is refused before anything exists", func(t *testing.T) {
		data, err := os.ReadFile(w.bundle)
		if err != nil {
			t.Fatal(err)
		}
		// The bundle's bytes are mostly layers: one flipped in the middle alters a blob.
		data[len(data)/2] ^= 0x01
		tampered := filepath.Join(t.TempDir(), "tampered.tar")
		if err := os.WriteFile(tampered, data, 0o600); err != nil {
			t.Fatal(err)
		}
		opts := w.options(t, b)
		opts.Bundle = tampered
		upFails(t, b, opts, "bundle "+tampered+" is not intact", "sha256:")
	})
}

// upFromBundle runs up --bundle --offline in profile on an engine lacking every pinned image,
// then status and down, and checks that nothing was asked of the network.
func upFromBundle(t *testing.T, b *k3dBed, w *bundleWorld, profile occdev.ControlPlane) {
	ctx := context.Background()
	refs := b.forgetPinned(t)
	// Podman resolves a digest reference to any image that holds that manifest, whatever its
	// names: the bed's own node and tools images, pushed from Podman, hold theirs, so occ finds
	// them there (and leaves them to down). What occ's API does not find is loaded.
	var absent []string
	for _, ref := range refs {
		if _, err := b.engine.API.ImageInspect(ctx, ref); err != nil {
			absent = append(absent, ref)
		}
	}
	before := b.Registry.Requests()
	opts := w.options(t, b)
	opts.ControlPlane = profile
	downAtEnd(t, opts.StateDir)
	sum, err := occdev.Up(ctx, opts)
	if err != nil {
		t.Fatalf("up --bundle --offline: %v\nlog:\n%s", err, opts.Log)
	}
	if n := b.Registry.Requests() - before; n != 0 {
		t.Errorf("the registry was sent %d requests during up --bundle --offline, want 0", n)
	}
	if n := w.downloads.Load(); n != 0 {
		t.Errorf("the download server was asked %d times, want 0", n)
	}
	if d := w.dials.recorded(); len(d) != 0 {
		t.Errorf("occ's HTTP client dialled %v, want nothing", d)
	}
	if len(sum.Images) != 3 {
		t.Errorf("summary images %v", sum.Images)
	}
	for _, ref := range refs {
		if _, err := b.engine.API.ImageInspect(ctx, ref); err != nil {
			t.Errorf("%s is not in the engine under its pinned digest after the load: %v", ref, err)
		}
	}
	st, err := state.Read(opts.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	wantPins, _ := w.set.Digest()
	if s := st.Selections; s == nil || s.Bundle != w.bundle || s.BundlePins != wantPins || !s.Offline {
		t.Errorf("recorded selections %+v, want the bundle, its pins %s and offline", st.Selections, wantPins)
	}
	loaded := 0
	for _, o := range st.Objects {
		if o.Type == images.TypePulledImage {
			loaded++
			if o.Engine != b.kind {
				t.Errorf("%s reads back on engine %q, want the recorded engine %s", o, o.Engine, b.kind)
			}
		}
	}
	if loaded != len(absent) || (b.kind == state.EngineDocker && loaded != 5) {
		t.Errorf("%d loaded images recorded, want one for each of %v (on Docker all five: node, tools and the three OpenShell images)", loaded, absent)
	}
	status, err := occdev.GetStatus(ctx, occdev.StatusOptions{StateDir: opts.StateDir})
	if err != nil {
		t.Fatal(err)
	}
	if status.Selections == nil || status.Selections.Bundle != w.bundle {
		t.Errorf("status selections %+v", status.Selections)
	}
	if len(status.Images) != 3 {
		t.Errorf("status images %+v", status.Images)
	}
	for _, img := range status.Images {
		if img.State != "digest matches" {
			t.Errorf("status: %s %s (%s)", img.Reference, img.State, img.Detail)
		}
	}
	if _, err := occdev.Down(ctx, occdev.DownOptions{StateDir: opts.StateDir}); err != nil {
		t.Fatal(err)
	}
	if left := b.leftovers(t, opts.K3d().ClusterName, nil); len(left) > 0 {
		t.Errorf("left after down: %v", left)
	}
	for _, ref := range absent {
		if id := b.imageID(t, ref); id != "" {
			t.Errorf("%s (%s) is still in the engine after down: it was loaded by up", ref, id)
		}
	}
	if n := b.Registry.Requests() - before; n != 0 {
		t.Errorf("the registry was sent %d requests by up and down, want 0", n)
	}
}

// testBundleRefusedOnTheClassicStore: the classic store names a loaded image by its config
// alone, so a bundle cannot give it the pinned digest the cluster is created from; up refuses
// before anything exists, saying how to switch the containerd store on.
func testBundleRefusedOnTheClassicStore(t *testing.T, b *k3dBed) {
	w := b.newBundleWorld(t, pinbundle.DefaultPlatform())
	upFails(t, b, w.options(t, b), "--bundle ("+occdev.EnvBundle+")", "classic store", "containerd-snapshotter")
}

// `occ dev up --bundle --offline` on every engine users run: Docker 29 on its containerd image
// store and Podman load the bundle's images under their pinned digests; the classic store cannot
// and is refused before anything exists.
func TestUpFromABundleOffline(t *testing.T) {
	t.Run("Docker on the containerd store", func(t *testing.T) { testUpFromABundleOffline(t, newK3dBed(t, nil)) })
	t.Run("Podman", func(t *testing.T) { testUpFromABundleOffline(t, newK3dBedOn(t, nil, state.EnginePodman)) })
	t.Run("Docker on the classic store refuses it", func(t *testing.T) {
		onClassicDocker(t)
		testBundleRefusedOnTheClassicStore(t, newK3dBed(t, nil))
	})
}
