package images_test

import (
	"context"
	"crypto/rand"
	"path/filepath"
	"strings"
	"testing"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/openclaw/occ/internal/occdev/cluster/k3d"
	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/engine/locate"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/syncbuf"
	"github.com/openclaw/occ/internal/testbed/dockerbed"
)

// bed is the Docker + k3d bed with occ's engine connection and k3d provider on it.
type bed struct {
	*dockerbed.Bed
	engine   *docker.Engine
	provider *k3d.Provider
	node     pins.Image
	// store is how the bed's engine keeps images, which decides its image IDs.
	store dockerbed.ImageStore
}

// localID is the image ID the engine reports for p after pulling it.
func (b *bed) localID(p dockerbed.Pinned) string { return p.LocalID(b.store) }

// startBed starts the bed (for tests and benchmarks alike), connects to its engine the way occ
// does, makes the stand-in node and tools images present by digest, and returns a provider.
func startBed(t testing.TB, ctx context.Context) *bed {
	t.Helper()
	b := dockerbed.Start(t)
	ep, source, err := locate.DockerPlace(locate.Env{})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := docker.ConnectAs(ctx, ep, source, engine.Docker)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	node, tools := pinOf(t, b.Node.Ref, ""), pinOf(t, b.Tools.Ref, "")
	for _, img := range []pins.Image{node, tools} {
		if _, err := images.Present(ctx, images.PresentOptions{Engine: eng.Verbs(), Image: img, Recorder: newRecorder(t)}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { b.Engine.Forget(node.DigestReference(), tools.DigestReference()) })
	log := &syncbuf.Buffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("k3d log:\n%s", log.String())
		}
	})
	p, err := k3d.New(k3d.Options{Engine: eng, ToolsImage: tools.DigestReference(), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	store, err := b.Engine.ImageStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return &bed{Bed: b, engine: eng, provider: p, node: node, store: store}
}

// cluster creates a k3d cluster for the test and deletes it when the test ends.
func (b *bed) cluster(t testing.TB, ctx context.Context) *k3d.Cluster {
	t.Helper()
	port, err := k3d.FreeLoopbackPort()
	if err != nil {
		t.Fatal(err)
	}
	rec := newRecorder(t)
	req := k3d.Request{
		Name:      "occ-dev-i" + strings.ToLower(rand.Text()[:10]),
		Owner:     rec.owner(),
		NodeImage: b.node,
		StateDir:  t.TempDir(),
		Settings:  k3d.Settings{APIPort: port},
		Recorder:  rec,
	}
	c, err := b.provider.Create(ctx, req)
	if err != nil {
		t.Fatalf("create cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := b.provider.Delete(context.Background(), k3d.Identity{Name: req.Name, Owner: req.Owner, UID: c.UID}); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return c
}

// provide builds a bed image, serves it from the bed's registry, and returns its pin as occ pins
// images: registry/repository:tag@sha256:<manifest digest>, plus the config digest a verified
// import must produce.
func (b *bed) provide(t testing.TB, ctx context.Context, spec dockerbed.ImageSpec) (pins.Image, dockerbed.Pinned) {
	t.Helper()
	p, err := b.Provide(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	key, err := spec.Key()
	if err != nil {
		t.Fatal(err)
	}
	img := pinOf(t, p.Repo+":"+key+"@"+p.Digest, "")
	t.Cleanup(func() { b.Engine.Forget(img.DigestReference()) })
	return img, p
}

func pinOf(t testing.TB, ref, digest string) pins.Image {
	t.Helper()
	img, err := pins.ParseImage(ref)
	if err != nil {
		t.Fatal(err)
	}
	if digest != "" {
		img.Digest = digest
	}
	return img
}

func product(t testing.TB, role string) dockerbed.ImageSpec {
	t.Helper()
	spec, err := dockerbed.ProductImage(role)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// present inspects ref in the engine.
func present(t testing.TB, ctx context.Context, e *docker.Engine, ref string) bool {
	t.Helper()
	_, err := e.API.ImageInspect(ctx, ref)
	if err != nil && !cerrdefs.IsNotFound(err) {
		t.Fatal(err)
	}
	return err == nil
}

// memRecorder records into a real state directory (every record passes the state's rules for
// its type) and can check something at the moment of each record.
type memRecorder struct {
	dir      *state.Dir
	onRecord func(state.Object)
}

func newRecorder(t testing.TB) *memRecorder {
	t.Helper()
	d, err := state.Create(filepath.Join(t.TempDir(), "state"), state.State{Profile: "kubernetes", Cluster: state.Cluster{Provider: k3d.Name}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return &memRecorder{dir: d}
}

func (r *memRecorder) Record(o state.Object) error {
	if r.onRecord != nil {
		r.onRecord(o)
	}
	return r.dir.Record(o)
}

func (r *memRecorder) Forget(o state.Object) error { return r.dir.Forget(o) }

func (r *memRecorder) owner() string { return r.dir.State().Owner() }

func (r *memRecorder) of(typ state.Type) []state.Object {
	var out []state.Object
	for _, o := range r.dir.State().Objects {
		if o.Type == typ {
			out = append(out, o)
		}
	}
	return out
}
