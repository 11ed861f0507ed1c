package images

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	cerrdefs "github.com/containerd/errdefs"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/state"
)

// memoryEngine is an engine held in memory, in occ's own verbs: images by reference, a pull that
// makes a pinned image appear (or fails as the registry makes it fail), a registry that resolves
// tags, and references a container keeps in use. Only the verbs the image steps call are served.
type memoryEngine struct {
	engine.Engine
	identity engine.Identity
	images   map[string]engine.Image
	// pulls are what a pull of a reference makes appear under it; failPull fails every pull.
	pulls    map[string]engine.Image
	failPull error
	// tags are what the registry serves for a tag; inUse are references a container keeps.
	tags  map[string]string
	inUse map[string]bool
	calls []string
}

func (m *memoryEngine) Identify(context.Context) (engine.Identity, error) {
	m.calls = append(m.calls, "Identify")
	return m.identity, nil
}

func (m *memoryEngine) Image(_ context.Context, ref string) (engine.Image, error) {
	m.calls = append(m.calls, "Image "+ref)
	if img, ok := m.images[ref]; ok {
		return img, nil
	}
	return engine.Image{}, cerrdefs.ErrNotFound.WithMessage("No such image: " + ref)
}

func (m *memoryEngine) ImageManifests(ctx context.Context, ref string) (engine.Image, error) {
	return m.Image(ctx, ref)
}

func (m *memoryEngine) Pull(_ context.Context, ref string, progress func(engine.PullProgress)) error {
	m.calls = append(m.calls, "Pull "+ref)
	if m.failPull != nil {
		return m.failPull
	}
	progress(engine.PullProgress{Layer: "0841ae73", Status: "Downloading", Current: 10, Total: 20})
	m.images[ref] = m.pulls[ref]
	return nil
}

func (m *memoryEngine) ResolveTag(_ context.Context, ref string) (string, error) {
	if d, ok := m.tags[ref]; ok {
		return d, nil
	}
	return "", errors.New("no registry")
}

func (m *memoryEngine) Untag(_ context.Context, ref string) error {
	m.calls = append(m.calls, "Untag "+ref)
	if m.inUse[ref] {
		return cerrdefs.ErrConflict.WithMessage("conflict: unable to remove repository reference " + ref + " (must force)")
	}
	if _, ok := m.images[ref]; !ok {
		return cerrdefs.ErrNotFound
	}
	delete(m.images, ref)
	return nil
}

// memoryRecorder keeps records as the state does.
type memoryRecorder struct{ objs []state.Object }

func (r *memoryRecorder) Record(o state.Object) error {
	for i := range r.objs {
		if r.objs[i].Type == o.Type && r.objs[i].Name == o.Name && r.objs[i].Digest == o.Digest {
			r.objs[i] = o
			return nil
		}
	}
	r.objs = append(r.objs, o)
	return nil
}

func (r *memoryRecorder) Forget(o state.Object) error {
	for i := range r.objs {
		if r.objs[i].Type == o.Type && r.objs[i].Name == o.Name && r.objs[i].Digest == o.Digest {
			r.objs = append(r.objs[:i], r.objs[i+1:]...)
			return nil
		}
	}
	return nil
}

// A pinned image the engine lacks is recorded, pulled by digest with the engine's progress passed
// on, and recorded again with the ID its store keeps; on the containerd store that ID is the
// pinned index, whose manifest for the engine's platform is what the node will be given.
func TestPresentPullsThroughTheEngineSeam(t *testing.T) {
	pin := mustPin(t, "ghcr.io/nvidia/openshell/gateway:0.1.3@"+digestIndex)
	ref := pin.DigestReference()
	amd64 := &ocispec.Platform{OS: "linux", Architecture: "amd64"}
	eng := &memoryEngine{
		identity: engine.Identity{Store: engine.StoreContainerd, Platform: linuxAmd64},
		images:   map[string]engine.Image{},
		pulls: map[string]engine.Image{ref: {ID: digestIndex, Target: digestIndex, RepoDigests: []string{ref}, Size: 20, Platform: linuxAmd64,
			Manifests: []engine.Manifest{{ID: digestAmd64, Kind: engine.ManifestImage, Available: true, Platform: amd64}}}},
	}
	rec := &memoryRecorder{}
	var events []Event
	l, err := Present(context.Background(), PresentOptions{Engine: eng, Image: pin, Recorder: rec, Progress: func(ev Event) { events = append(events, ev) }})
	if err != nil {
		t.Fatal(err)
	}
	if !l.Pulled || l.ID != digestIndex || l.Store != StoreContainerd || l.Manifest != digestAmd64 || l.ManifestPlatform == nil || l.ManifestPlatform.Architecture != "amd64" {
		t.Errorf("local image %+v", l)
	}
	if len(rec.objs) != 1 || rec.objs[0].Type != TypePulledImage || rec.objs[0].ID != digestIndex || rec.objs[0].Engine != engine.Docker {
		t.Errorf("records %+v", rec.objs)
	}
	var statuses []string
	for _, ev := range events {
		statuses = append(statuses, ev.Status)
	}
	if got := strings.Join(statuses, ","); got != "pulling,Downloading,pulled" || events[1].Layer != "0841ae73" || events[1].Current != 10 {
		t.Errorf("events %+v", events)
	}
	if err := CheckRepoDigest(l); err != nil {
		t.Error(err)
	}
}

// A pull that fails, while the registry serves the pin's tag as another digest and the engine
// holds a re-tagged image under it, names both facts; the pull left nothing, so its record goes.
func TestPresentExplainsAFailedPullThroughTheEngineSeam(t *testing.T) {
	pin := mustPin(t, "ghcr.io/nvidia/openshell/gateway:0.1.3@"+digestIndex)
	tagged := "ghcr.io/nvidia/openshell/gateway:0.1.3"
	eng := &memoryEngine{
		identity: engine.Identity{Store: engine.StoreClassic, Platform: linuxAmd64},
		images:   map[string]engine.Image{tagged: {ID: digestConfig}},
		failPull: errors.New("manifest unknown"),
		tags:     map[string]string{tagged: digestAmd64},
	}
	rec := &memoryRecorder{}
	_, err := Present(context.Background(), PresentOptions{Engine: eng, Image: pin, Recorder: rec})
	want := []string{
		"pull pinned image " + pin.DigestReference() + " by digest: manifest unknown",
		fmt.Sprintf("the registry serves %s as %s, but the pin says %s", tagged, digestAmd64, digestIndex),
		fmt.Sprintf("the engine has a local %s (image ID %s, RepoDigests none)", tagged, digestConfig),
	}
	for _, w := range want {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v lacks %q", err, w)
		}
	}
	if len(rec.objs) != 0 {
		t.Errorf("a pull that left nothing is still recorded: %+v", rec.objs)
	}
}

// down removes the digest reference occ pulled; another environment's node still running the same
// pinned image keeps it, which leaves it alone rather than failing; a reference already gone is
// gone; an image pulled again since (another ID) is not occ's.
func TestRemovePulledImageThroughTheEngineSeam(t *testing.T) {
	pin := mustPin(t, "rancher/k3s@"+digestIndex)
	ref := pin.DigestReference()
	rec := pulledRecord(pin, digestConfig, "")
	for _, c := range []struct {
		name  string
		eng   *memoryEngine
		want  state.Outcome
		check string
	}{
		{"removed", &memoryEngine{images: map[string]engine.Image{ref: {ID: digestConfig}}}, state.Removed, ""},
		{"in use", &memoryEngine{images: map[string]engine.Image{ref: {ID: digestConfig}}, inUse: map[string]bool{ref: true}}, state.LeftAlone, "is in use by a container (conflict: unable to remove"},
		{"gone", &memoryEngine{images: map[string]engine.Image{}}, state.AlreadyGone, ""},
		{"pulled again", &memoryEngine{images: map[string]engine.Image{ref: {ID: digestEngineMf}}}, state.LeftAlone, "is now image " + digestEngineMf},
	} {
		rm, err := RemovePulledImage(context.Background(), c.eng, rec)
		if err != nil || rm.Outcome != c.want || !strings.Contains(rm.Detail, c.check) {
			t.Errorf("%s: %+v, %v", c.name, rm, err)
		}
	}
}

// down removes the environment's hold whatever image it names now (the name is occ's own, made
// for this environment); an image a container uses keeps it, with the reason; a hold already gone
// is gone. status reports the hold present on the image the state records, changed on another.
func TestBuildHoldThroughTheEngineSeam(t *testing.T) {
	hold := "occ.local/build/openclaw-enterprise-runtime:occ-dev-abc"
	rec := HoldRecord(hold, digestConfig)
	remover := func(eng *memoryEngine) state.Remover {
		return HoldRemover(func(context.Context) (engine.Engine, error) { return eng, nil })
	}
	for _, c := range []struct {
		name    string
		eng     *memoryEngine
		want    state.Outcome
		check   string
		inspect state.Liveness
	}{
		{"removed", &memoryEngine{images: map[string]engine.Image{hold: {ID: digestConfig}}}, state.Removed, "", state.Present},
		{"rebuilt since", &memoryEngine{images: map[string]engine.Image{hold: {ID: digestEngineMf}}}, state.Removed, "", state.Changed},
		{"in use", &memoryEngine{images: map[string]engine.Image{hold: {ID: digestConfig}}, inUse: map[string]bool{hold: true}}, state.LeftAlone, "is in use by a container (conflict: unable to remove", state.Present},
		{"gone", &memoryEngine{images: map[string]engine.Image{}}, state.AlreadyGone, "", state.Missing},
	} {
		r := remover(c.eng)
		if in := r.Inspect(context.Background(), rec); in.State != c.inspect {
			t.Errorf("%s: inspect %+v, want %s", c.name, in, c.inspect)
		}
		rm, err := r.Remove(context.Background(), rec)
		if err != nil || rm.Outcome != c.want || !strings.Contains(rm.Detail, c.check) {
			t.Errorf("%s: %+v, %v", c.name, rm, err)
		}
		if _, still := c.eng.images[hold]; still != (c.want == state.LeftAlone) {
			t.Errorf("%s: the hold is still there: %v", c.name, still)
		}
	}
}
