package k3d_test

import (
	"context"
	"crypto/rand"
	"path/filepath"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

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

// bed is one test's Docker + k3d bed with a k3d provider on it.
type bed struct {
	*dockerbed.Bed
	engine   *docker.Engine
	provider *k3d.Provider
	node     pins.Image
}

// startBed starts the bed, connects to its engine the way occ does (located, pinned, pinged),
// makes the stand-in node and tools images present by digest, and returns a provider.
func startBed(t *testing.T, ctx context.Context) *bed {
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
	node := pin(t, b.Node.Ref)
	tools := pin(t, b.Tools.Ref)
	rec := newRecorder(t)
	for _, img := range []pins.Image{node, tools} {
		if _, err := images.Present(ctx, images.PresentOptions{Engine: eng.Verbs(), Image: img, Recorder: rec}); err != nil {
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
	return &bed{Bed: b, engine: eng, provider: p, node: node}
}

func pin(t *testing.T, ref string) pins.Image {
	t.Helper()
	img, err := pins.ParseImage(ref)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// request is a valid Request for a fresh cluster of the test, owned by rec's state.
func (b *bed) request(t *testing.T, rec *memRecorder) k3d.Request {
	t.Helper()
	port, err := k3d.FreeLoopbackPort()
	if err != nil {
		t.Fatal(err)
	}
	return k3d.Request{
		Name:      uniqueName(t),
		Owner:     rec.owner(),
		NodeImage: b.node,
		StateDir:  t.TempDir(),
		Settings:  k3d.Settings{APIPort: port, PodSecurityExemptRuntimeClasses: []string{"openshell-sandbox"}},
		Recorder:  rec,
	}
}

// uniqueName is a cluster name no other test (or helper sharing the engine) uses.
func uniqueName(t *testing.T) string {
	t.Helper()
	return "occ-dev-t" + strings.ToLower(rand.Text()[:10])
}

// deleteAtEnd removes the cluster when the test ends, whatever happened, so a failing test
// leaves nothing on the shared engine.
func (b *bed) deleteAtEnd(t *testing.T, id k3d.Identity) {
	t.Cleanup(func() {
		if err := b.provider.Delete(context.Background(), id); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
}

// memRecorder records into a real state directory (so every record passes the state's rules
// for its type) and can run a check at the moment of each record (to prove the record comes
// before the object).
type memRecorder struct {
	dir      *state.Dir
	onRecord func(state.Object)
}

func newRecorder(t *testing.T) *memRecorder {
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

// owner is the state's ownership value, as the flow passes it.
func (r *memRecorder) owner() string { return r.dir.State().Owner() }

func (r *memRecorder) all() []state.Object { return r.dir.State().Objects }

// containersOf lists the engine's containers of a cluster name, by k3d's label.
func containersOf(t *testing.T, ctx context.Context, e *docker.Engine, name string) []container.Summary {
	t.Helper()
	cs, err := e.API.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", "k3d.cluster="+name))})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
