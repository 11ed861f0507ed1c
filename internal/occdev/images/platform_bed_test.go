package images_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/engine/locate"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/testbed/dockerbed"
)

// A pin names a single-platform image of another architecture than the engine's (linux/arm64 on
// the bed's linux/amd64 engine, the mirror of an amd64-only pin on Docker Desktop on Apple
// Silicon). The engine pulls a manifest by digest whatever its platform; Present refuses it
// naming both platforms and the fix, keeps the pull recorded so the rollback removes it, and
// refuses it again, recording nothing, once the engine holds it.
func TestPresentRefusesAPinOfAnotherPlatform(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := dockerbed.Require(t)
	reg := dockerbed.StartRegistry(t)
	ep, source, err := locate.DockerPlace(locate.Env{})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := docker.ConnectAs(ctx, ep, source, engine.Docker)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	engine, err := images.EnginePlatform(ctx, eng.Verbs(), eng.Name())
	if err != nil {
		t.Fatal(err)
	}
	other := "arm64"
	if engine.Architecture == "arm64" {
		other = "amd64"
	}
	p, err := reg.PushForPlatform(ctx, product(t, dockerbed.RoleGateway), "linux", other)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Forget(p.Ref) })
	pin := pinOf(t, p.Ref, "")

	rec := newRecorder(t)
	_, err = images.Present(ctx, images.PresentOptions{Engine: eng.Verbs(), Image: pin, Recorder: rec})
	var pe *images.PlatformError
	if !errors.As(err, &pe) {
		t.Fatalf("Present of a linux/%s pin on a %s engine: %v", other, engine, err)
	}
	t.Logf("refusal: %v", err)
	for _, want := range []string{p.Ref, "is linux/" + other, "runs " + engine.String() + " containers", "occ dev pins verify", "multi-platform index"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal lacks %q", want)
		}
	}
	recs := rec.of(images.TypePulledImage)
	store, err := e.ImageStore(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].ID != p.LocalID(store) || !present(t, ctx, eng, p.Ref) {
		t.Fatalf("records %+v; want the pull recorded with its image ID %s, for the rollback", recs, p.LocalID(store))
	}

	again := newRecorder(t)
	if _, err := images.Present(ctx, images.PresentOptions{Engine: eng.Verbs(), Image: pin, Recorder: again, Platform: engine}); !errors.As(err, &pe) {
		t.Errorf("Present of the held image: %v, want the platform refusal", err)
	}
	if got := again.of(images.TypePulledImage); len(got) != 0 {
		t.Errorf("an image that was already there was recorded: %+v", got)
	}

	if r, err := images.RemovePulledImage(ctx, eng.Verbs(), recs[0]); err != nil || r.Outcome != state.Removed {
		t.Fatalf("removal of the recorded pull: %+v %v", r, err)
	}
	if present(t, ctx, eng, p.Ref) {
		t.Errorf("%s is still in the engine after its removal", p.Ref)
	}
}
