package docker

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/system"

	"github.com/openclaw/occ/internal/occdev/docker/engineapi"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/engine/locate"
	"github.com/openclaw/occ/internal/occdev/state"
)

// recording is an engine kind of this test only: an engine that speaks the Docker API, says what
// it is by a version component of its own, and needs a wrapper over the Docker client (here one
// that records the calls made through it). Its registration is the whole cost of a new kind.
var recording = engine.Register(engine.Registration{Kind: "recording", Name: "Recording", Component: "Recording Engine", API: newRecordingAPI, PermissionFix: "open the recording engine's socket to your user", Builder: engine.BuildKit, StableID: true, ResolvesTags: true})

// recordingAPI is the Docker client with every call this test makes through it recorded.
type recordingAPI struct {
	engineapi.API
	mu    sync.Mutex
	calls []string
}

func newRecordingAPI(c engineapi.API) engineapi.API { return &recordingAPI{API: c} }

func (r *recordingAPI) record(call string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call)
}

func (r *recordingAPI) Info(ctx context.Context) (system.Info, error) {
	r.record("Info")
	return r.API.Info(ctx)
}

// recordingEngine serves, on a unix socket, what an engine of the recording kind answers: the
// ping, a version naming its component, and its system info with a stable ID.
func recordingEngine(t *testing.T) Endpoint {
	t.Helper()
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Api-Version", "1.47")
		replyJSON(w, v)
	}
	return serveUnix(t, "rec.sock", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch path := r.URL.Path; {
		case path == "/_ping" || path == "/v1.47/_ping":
			w.Header().Set("Api-Version", "1.47")
			_, _ = w.Write([]byte("OK"))
		case path == "/version" || path == "/v1.47/version":
			reply(w, types.Version{Version: "0.9.0", APIVersion: "1.47", Components: []types.ComponentVersion{
				{Name: "Recording Engine", Version: "1.2.3"}, {Name: "Engine", Version: "0.9.0"}}})
		case path == "/v1.47/info":
			reply(w, system.Info{ID: "recording-1"})
		default:
			http.NotFound(w, r)
		}
	}))
}

// serveUnix serves h on a unix socket named name in a short temporary directory, for as long as
// the test runs, and returns the socket as an engine endpoint.
func serveUnix(t *testing.T, name string, h http.Handler) Endpoint {
	t.Helper()
	sock := filepath.Join(shortDir(t), name)
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return Endpoint{Socket: sock}
}

// replyJSON answers v as the engine's JSON.
func replyJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// An engine of a kind registered by one line, found behind DOCKER_HOST as any Docker-API engine
// is: the locator names it by its own component (not Docker, though it also lists an "Engine"),
// and the engine opened for it is driven through its registered wrapper, down to the identity
// the state records and the recorded engine `down` opens again.
func TestARegisteredKindIsLocatedAndOpenedThroughItsWrapper(t *testing.T) {
	ctx := context.Background()
	ep := recordingEngine(t)
	env := locate.Env{Getenv: func(name string) string {
		return map[string]string{"DOCKER_HOST": ep.String(), "HOME": t.TempDir()}[name]
	}, Home: t.TempDir(), SystemRoot: t.TempDir()}
	loc, err := locate.Find(ctx, locate.Options{Choice: locate.Auto, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	if loc.Kind != recording.Kind || loc.Version != "1.2.3" || loc.Endpoint != ep || loc.Source != locate.EnvDockerHost {
		t.Fatalf("located %+v, want the recording engine 1.2.3 at %s from DOCKER_HOST", loc, ep)
	}
	if got := loc.String(); got != "Recording 1.2.3 at "+ep.String()+" (from DOCKER_HOST)" {
		t.Errorf("location reads %q", got)
	}

	eng, err := ConnectAs(ctx, loc.Endpoint, loc.Source, loc.Kind)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	api, ok := eng.API.(*recordingAPI)
	if eng.Identity.Kind != recording.Kind || eng.Name() != "Recording" || !ok {
		t.Fatalf("opened a %q engine (%s) with API %T, want the recording kind behind its wrapper", eng.Identity.Kind, eng.Name(), eng.API)
	}
	if id, err := IDOf(ctx, eng); err != nil || id != "recording-1" {
		t.Fatalf("IDOf = %q, %v; want the engine's stable ID", id, err)
	}
	if !slices.Equal(api.calls, []string{"Info"}) {
		t.Errorf("calls through the wrapper = %v, want [Info]", api.calls)
	}

	// `down` reaches the recorded engine the same way, and finds it the same one.
	again, err := Recorded(&state.Engine{Kind: recording.Kind, Endpoint: ep.String(), ID: "recording-1"})(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if _, ok := again.API.(*recordingAPI); !ok {
		t.Errorf("recorded engine's API is %T, want the recording wrapper", again.API)
	}
}
