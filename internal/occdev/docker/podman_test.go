package docker

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/openclaw/occ/internal/occdev/engine"
)

const (
	digestPinned = "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	digestOther  = "sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	imageID      = "sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
)

// fakeEngine serves the engine API calls these tests make on a unix socket: the ping, the
// version with the given components, and an image inspect that answers every reference with
// one image whose RepoDigests are repoDigests; any other request goes to other, when given.
func fakeEngine(t *testing.T, components []types.ComponentVersion, repoDigests []string, other ...http.HandlerFunc) Endpoint {
	t.Helper()
	reply := replyJSON
	return serveUnix(t, "e.sock", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("API-Version", "1.41")
		switch p := r.URL.Path; {
		case strings.HasSuffix(p, "/_ping"):
			_, _ = w.Write([]byte("OK"))
		case strings.HasSuffix(p, "/version"):
			reply(w, types.Version{Version: "4.3.1", APIVersion: "1.41", Components: components})
		case strings.Contains(p, "/images/") && strings.HasSuffix(p, "/json"):
			reply(w, image.InspectResponse{ID: imageID, RepoTags: []string{"localhost/bed/gateway:t"}, RepoDigests: repoDigests})
		case len(other) > 0:
			other[0](w, r)
		default:
			http.NotFound(w, r)
		}
	}))
}

var podmanComponents = []types.ComponentVersion{{Name: "Podman Engine", Version: "4.3.1"}}

// Podman behind the Docker API (Podman Desktop, `podman system service`) says so in its version
// components: the engine is named Podman and driven through Podman's registered wrapper of the
// client; an engine without that component is Docker, driven by the Docker client itself.
func TestConnectChoosesTheAPIByTheVersionComponents(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name       string
		components []types.ComponentVersion
		podman     bool
	}{
		{"podman", podmanComponents, true},
		{"docker", []types.ComponentVersion{{Name: "Engine", Version: "28.5.2"}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			// The kind the caller expects does not decide: a Podman engine behind DOCKER_HOST is
			// still Podman.
			eng, err := ConnectAs(ctx, fakeEngine(t, c.components, nil), "DOCKER_HOST", engine.Docker)
			if err != nil {
				t.Fatal(err)
			}
			defer eng.Close()
			_, isClient := eng.API.(*client.Client)
			if (eng.Identity.Kind == engine.Podman) != c.podman || isClient == c.podman {
				t.Fatalf("engine of kind %q with API %T, want Podman=%v", eng.Identity.Kind, eng.API, c.podman)
			}
			if want := map[bool]string{true: "Podman", false: "Docker"}[c.podman]; eng.Name() != want {
				t.Fatalf("Name = %q, want %q", eng.Name(), want)
			}
		})
	}
}

// A pin Podman already held under another name (here the localhost/ name a load gave it, the way
// the Podman bed loads its images) is found by its digest reference; Podman lists the digest
// under the image's own names only, and its API adds the reference asked for, as Docker lists
// it for an image pulled by that reference. A digest the image does not hold adds nothing, and
// a reference that is not a digest reference is answered as it is.
func TestPodmanImageInspectListsTheDigestReferenceAskedFor(t *testing.T) {
	ctx := context.Background()
	held := []string{"localhost/bed/gateway@" + digestOther, "localhost/bed/gateway@" + digestPinned}
	ref := "127.0.0.1:5000/bed/gateway@" + digestPinned
	eng, err := ConnectAs(ctx, fakeEngine(t, podmanComponents, held), "CONTAINER_HOST", engine.Docker)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ins, err := eng.API.ImageInspect(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if want := append(slices.Clone(held), ref); !slices.Equal(ins.RepoDigests, want) {
		t.Errorf("RepoDigests = %v, want %v", ins.RepoDigests, want)
	}
	for _, asked := range []string{"127.0.0.1:5000/bed/gateway@sha256:dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd", "localhost/bed/gateway:t", imageID} {
		ins, err := eng.API.ImageInspect(ctx, asked)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ins.RepoDigests, held) {
			t.Errorf("inspect %s: RepoDigests = %v, want Podman's own %v", asked, ins.RepoDigests, held)
		}
	}

	// Docker's RepoDigests are answered as they are: an entry under another name proves nothing
	// there.
	docker, err := ConnectAs(ctx, fakeEngine(t, nil, held), "DOCKER_HOST", engine.Docker)
	if err != nil {
		t.Fatal(err)
	}
	defer docker.Close()
	if ins, err := docker.API.ImageInspect(ctx, ref); err != nil || !slices.Equal(ins.RepoDigests, held) {
		t.Errorf("Docker inspect %s: RepoDigests = %v (%v), want the engine's %v", ref, ins.RepoDigests, err, held)
	}
}

// Podman before 4.4 may fail the inspect of a container whose process exits during the call
// ("read /proc/<pid>/cgroup: no such process"; a CI run's bootstrap job met it). The Podman API
// asks again while it fails that way, a bounded number of times; any other error, and the same
// error from Docker, is answered at once.
func TestPodmanContainerInspectOutlastsTheExitRace(t *testing.T) {
	ctx := context.Background()
	const race = "read /proc/16786/cgroup: no such process"
	engine := func(t *testing.T, components []types.ComponentVersion, fails int, msg string) (API, *atomic.Int32) {
		var calls atomic.Int32
		ep := fakeEngine(t, components, nil, func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasSuffix(r.URL.Path, "/containers/job/json") {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			if int(calls.Add(1)) <= fails {
				w.WriteHeader(http.StatusInternalServerError)
				_ = json.NewEncoder(w).Encode(map[string]any{"cause": "no such process", "message": msg, "response": 500})
				return
			}
			_ = json.NewEncoder(w).Encode(container.InspectResponse{ContainerJSONBase: &container.ContainerJSONBase{
				ID: "job", State: &container.State{Status: container.StateExited}}})
		})
		eng, err := ConnectAs(ctx, ep, "CONTAINER_HOST", engine.Docker)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { eng.Close() })
		return eng.API, &calls
	}

	t.Run("podman, caught exiting twice", func(t *testing.T) {
		api, calls := engine(t, podmanComponents, 2, race)
		ins, err := api.ContainerInspect(ctx, "job")
		if err != nil || ins.State == nil || ins.State.Status != container.StateExited {
			t.Fatalf("inspect = %+v, %v; want the exited container", ins.ContainerJSONBase, err)
		}
		if n := calls.Load(); n != 3 {
			t.Errorf("engine asked %d times, want 3", n)
		}
	})
	t.Run("podman, never answers", func(t *testing.T) {
		api, calls := engine(t, podmanComponents, 1000, race)
		if _, err := api.ContainerInspect(ctx, "job"); err == nil || !strings.Contains(err.Error(), race) {
			t.Fatalf("inspect error = %v, want the engine's %q", err, race)
		}
		// The bound is engineapi's exitRaceTries.
		if n := calls.Load(); n != 6 {
			t.Errorf("engine asked %d times, want the bound 6", n)
		}
	})
	for _, c := range []struct {
		name       string
		components []types.ComponentVersion
		msg        string
	}{
		{"podman, another error", podmanComponents, "read /proc/16786/cgroup: permission denied"},
		{"podman, not a pid", podmanComponents, "read /proc/self/cgroup: no such process"},
		{"docker", nil, race},
	} {
		t.Run(c.name, func(t *testing.T) {
			api, calls := engine(t, c.components, 1000, c.msg)
			if _, err := api.ContainerInspect(ctx, "job"); err == nil || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("inspect error = %v, want the engine's %q", err, c.msg)
			}
			if n := calls.Load(); n != 1 {
				t.Errorf("engine asked %d times, want once", n)
			}
		})
	}
}
