package docker_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/testbed/dockerbed"
)

// Two builds of one tag on one engine: the second moves the tag (another environment built from
// the same checkout, or the developer ran `docker build -t` by hand), and on the containerd
// image store the image that loses its last name is deleted at once, so a caller that built the
// first and still needs it by ID (occ between its build and its import into the node) finds
// "No such image". A build with a hold (BuildRequest.Hold) gives its result a second name no
// other build uses, and the image outlives the move on both Docker stores. (occ builds through
// BuildKit, which Podman's API does not offer: Podman environments run selected images.)
func TestABuildsHoldKeepsItsImageWhenAnotherBuildTakesTheTag(t *testing.T) {
	for _, f := range dockerbed.Flavours() {
		if f.Podman {
			continue
		}
		t.Run(f.Name, func(t *testing.T) {
			bed := f.Require(t)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			ep, err := docker.ParseEndpoint(bed.Host, f.HostEnv)
			if err != nil {
				t.Fatal(err)
			}
			conn, err := docker.ConnectAs(ctx, ep, f.HostEnv, engine.Docker)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			eng := conn.Verbs()

			name := dockerbed.UniqueName(t, "occ-hold")
			tag, hold := "occ.local/test/"+name+":built", "occ.local/build/"+name+":env"
			// The tags, then every image the test built (the classic store keeps those whose
			// tag moved, as dangling images).
			var built []string
			t.Cleanup(func() {
				for _, ref := range append([]string{tag, hold}, built...) {
					_, _ = bed.API.ImageRemove(context.Background(), ref, image.RemoveOptions{})
				}
			})
			dir := t.TempDir()
			build := func(content, hold string) string {
				t.Helper()
				if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\nCOPY content /content\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "content"), []byte(content+" "+name), 0o644); err != nil {
					t.Fatal(err)
				}
				res, err := eng.Build(ctx, engine.BuildRequest{ContextDir: dir, Dockerfile: "Dockerfile", Tag: tag, Hold: hold, NetworkMode: "none"})
				if err != nil {
					t.Fatal(err)
				}
				built = append(built, res.ID)
				return res.ID
			}
			survives := func(id string) bool {
				t.Helper()
				_, err := eng.Image(ctx, id)
				if err != nil && !engine.IsNotFound(err) {
					t.Fatal(err)
				}
				return err == nil
			}

			// The hazard, without a hold: what the engine does with the first image.
			first := build("one", "")
			if second := build("two", ""); second == first {
				t.Fatalf("two builds of different content gave one image %s", first)
			}
			kept := survives(first)
			t.Logf("%s: without a hold, the image a second build of its tag replaced is kept: %v", f.Name, kept)
			if f.Store == dockerbed.ContainerdStore && kept {
				t.Errorf("the containerd store kept image %s after another build took its only name; the hold below would prove nothing", first)
			}

			held := build("three", hold)
			ins, err := eng.Image(ctx, hold)
			if err != nil || ins.ID != held {
				t.Fatalf("the hold %s names %s (%v), want the build's result %s", hold, ins.ID, err, held)
			}
			if other := build("four", ""); other == held {
				t.Fatalf("two builds of different content gave one image %s", held)
			}
			if !survives(held) {
				t.Errorf("image %s, built with the hold %s, is gone after another build took its tag %s", held, hold, tag)
			}
		})
	}
}
