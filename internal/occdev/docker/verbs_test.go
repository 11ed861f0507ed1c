package docker

import (
	"archive/tar"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/openclaw/occ/internal/occdev/engine"
)

// The digests of a two-platform index pulled into a containerd-store engine: the index (the
// image's ID there), its amd64 manifest (held) and its arm64 manifest (never pulled).
const (
	seamIndex = "sha256:5548bc58aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	seamAmd64 = "sha256:181186a2aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	seamArm64 = "sha256:e75ccfe6aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
)

// seamEngine is a Docker 28.5 engine on the containerd image store (API 1.51), as it answers the
// calls of the engine seam, with the requests it got recorded.
type seamEngine struct {
	mu   sync.Mutex
	seen []string
	// session are the headers of the BuildKit session's upgrade, and contextFiles the names in
	// the build context's tar, in order.
	session      http.Header
	contextFiles []string
}

func (s *seamEngine) saw(r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
}

func (s *seamEngine) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

var versionPrefix = regexp.MustCompile(`^/v1\.[0-9]+`)

func (s *seamEngine) serve(t *testing.T) Endpoint {
	t.Helper()
	reply := replyJSON
	fail := func(w http.ResponseWriter, code int, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]string{"message": msg})
	}
	amd64 := ocispec.Platform{OS: "linux", Architecture: "amd64"}
	arm64 := ocispec.Platform{OS: "linux", Architecture: "arm64"}
	return serveUnix(t, "seam.sock", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Api-Version", "1.51")
		s.saw(r)
		path := versionPrefix.ReplaceAllString(r.URL.Path, "")
		switch {
		case path == "/_ping":
			_, _ = w.Write([]byte("OK"))
		case path == "/version":
			reply(w, types.Version{Version: "28.5.2", APIVersion: "1.51", Os: "linux", Arch: "amd64", KernelVersion: "6.1.0",
				Platform:   struct{ Name string }{Name: "Docker Engine - Community"},
				Components: []types.ComponentVersion{{Name: "Engine", Version: "28.5.2"}}})
		case path == "/info":
			reply(w, system.Info{ID: "daemon-1", Name: "host-1", KernelVersion: "6.1.0", OSType: "linux", Architecture: "x86_64", Driver: "overlayfs", NCPU: 2,
				DriverStatus: [][2]string{{"driver-type", "io.containerd.snapshotter.v1"}}})
		case path == "/images/127.0.0.1:5000/mp/x@"+seamIndex+"/json":
			ins := image.InspectResponse{ID: seamIndex, RepoDigests: []string{"127.0.0.1:5000/mp/x@" + seamIndex}, Size: 8980,
				Os: "linux", Architecture: "amd64", Descriptor: &ocispec.Descriptor{MediaType: ocispec.MediaTypeImageIndex, Digest: digest.Digest(seamIndex)}}
			if r.URL.Query().Get("manifests") == "1" {
				ins.Manifests = []image.ManifestSummary{
					{ID: seamAmd64, Available: true, Kind: image.ManifestKindImage, ImageData: &image.ImageProperties{Platform: amd64}},
					{ID: seamArm64, Available: false, Kind: image.ManifestKindImage, ImageData: &image.ImageProperties{Platform: arm64}},
					{ID: "sha256:attest", Available: true, Kind: image.ManifestKindAttestation},
				}
			}
			reply(w, ins)
		case path == "/session":
			s.mu.Lock()
			s.session = r.Header.Clone()
			s.mu.Unlock()
			conn, buf, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			_, _ = buf.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n")
			_ = buf.Flush()
			// The builder would call back over the session; this one waits for it to close.
			_, _ = io.Copy(io.Discard, conn)
			_ = conn.Close()
		case path == "/build":
			tr := tar.NewReader(r.Body)
			var names []string
			for {
				h, err := tr.Next()
				if err != nil {
					break
				}
				names = append(names, h.Name)
			}
			s.mu.Lock()
			s.contextFiles = names
			s.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"stream":"Step 1/1 : FROM scratch\n"}`+"\n"+`{"id":"moby.image.id","aux":{"ID":"sha256:b1"}}`+"\n")
		case path == "/images/occ.local/built:1/json":
			reply(w, image.InspectResponse{ID: "sha256:b1", RepoTags: []string{"occ.local/built:1"}})
		case strings.HasPrefix(path, "/images/") && strings.HasSuffix(path, "/json"):
			fail(w, http.StatusNotFound, "No such image: "+strings.TrimSuffix(strings.TrimPrefix(path, "/images/"), "/json"))
		case path == "/images/create":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"status":"Pulling from mp/x","id":"sha256:5548bc58"}`+"\n"+
				`{"status":"Downloading","progressDetail":{"current":100,"total":8980},"id":"0841ae73"}`+"\n"+
				`{"errorDetail":{"message":"unexpected EOF"},"error":"unexpected EOF"}`+"\n")
		case r.Method == http.MethodDelete && path == "/images/in-use:1":
			fail(w, http.StatusConflict, "conflict: unable to remove repository reference \"in-use:1\" (must force) - container 0123 is using its referenced image 5548bc58")
		case path == "/images/get":
			_, _ = io.WriteString(w, "a tar stream")
		case path == "/images/load":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"errorDetail":{"message":"archive/tar: invalid tar header"},"error":"archive/tar: invalid tar header"}`+"\n")
		case path == "/containers/json":
			reply(w, []container.Summary{{ID: "c1", Names: []string{"/occ-dev-x-api-1"}, ImageID: "sha256:6ad55c21", Labels: map[string]string{"com.docker.compose.project": "occ-dev-x"},
				State: container.StateRunning, Created: 1700000000},
				{ID: "c2", Names: []string{"/k3d-x-server-0"}, ImageID: "6ad55c22", State: container.StateExited,
					Mounts: []container.MountPoint{{Type: "volume", Name: "k3d-x-images"}, {Type: "bind", Source: "/tmp"}, {Type: "volume", Name: "0a1b"}}}})
		case path == "/containers/occ-dev-x-bootstrap-1/json":
			reply(w, container.InspectResponse{
				ContainerJSONBase: &container.ContainerJSONBase{ID: "c3", Name: "/occ-dev-x-bootstrap-1", Image: "sha256:6ad55c23", Created: "2026-12-07T12:00:00.5Z",
					State: &container.State{Status: container.StateExited, ExitCode: 3, Running: false, Health: &container.Health{Status: "Unhealthy"}}},
				Config:          &container.Config{Labels: map[string]string{"com.docker.compose.service": "bootstrap"}, Tty: true},
				NetworkSettings: &container.NetworkSettings{Networks: map[string]*network.EndpointSettings{"occ-dev-x_development": {IPAddress: "172.30.0.4"}}}})
		case path == "/containers/job/logs":
			w.Header().Set("Content-Type", "application/vnd.docker.multiplexed-stream")
			_, _ = stdcopy.NewStdWriter(w, stdcopy.Stdout).Write([]byte("migrating\n"))
			_, _ = stdcopy.NewStdWriter(w, stdcopy.Stderr).Write([]byte("boom\n"))
		case path == "/containers/job/archive":
			w.Header().Set("X-Docker-Container-Path-Stat", "e30=")
			_, _ = io.WriteString(w, "a tar stream")
		case path == "/events":
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(events.Message{Type: events.ContainerEventType, Action: events.ActionDie, TimeNano: 1700000000000000001,
				Actor: events.Actor{ID: "c1", Attributes: map[string]string{"com.docker.compose.project": "occ-dev-x"}}})
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case path == "/containers/gone/json":
			fail(w, http.StatusNotFound, "No such container: gone")
		case path == "/containers/k3d-x-server-0/json":
			reply(w, container.InspectResponse{ContainerJSONBase: &container.ContainerJSONBase{ID: "c2", Name: "/k3d-x-server-0"}})
		case path == "/networks":
			reply(w, []network.Summary{{ID: "n1", Name: "occ-dev-x_default", Labels: map[string]string{"com.docker.compose.project": "occ-dev-x"},
				IPAM: network.IPAM{Config: []network.IPAMConfig{{Subnet: "172.30.0.0/16"}}}}})
		case path == "/volumes":
			reply(w, volume.ListResponse{Volumes: []*volume.Volume{{Name: "occ-dev-x_pg", Labels: map[string]string{"com.docker.compose.project": "occ-dev-x"}}}})
		case r.Method == http.MethodDelete && (path == "/networks/occ-dev-x_default" || path == "/volumes/occ-dev-x_pg"):
			w.WriteHeader(http.StatusNoContent)
		case path == "/networks/occ-dev-x_default":
			reply(w, network.Inspect{ID: "n1", Name: "occ-dev-x_default", Labels: map[string]string{"com.docker.compose.network": "default"},
				Containers: map[string]network.EndpointResource{"c2": {}, "c1": {IPv4Address: "172.30.0.2/16"}}})
		case r.Method == http.MethodPost && path == "/networks/occ-dev-x_development/disconnect":
			var body network.DisconnectOptions
			if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Container != "c3" || body.Force {
				fail(w, http.StatusBadRequest, "disconnect asked wrongly")
				return
			}
		case path == "/volumes/occ-dev-x_pg":
			reply(w, volume.Volume{Name: "occ-dev-x_pg", Labels: map[string]string{"com.docker.compose.volume": "pg"}})
		case path == "/volumes/occ-dev-x_gone":
			fail(w, http.StatusNotFound, "get occ-dev-x_gone: no such volume")
		default:
			http.NotFound(w, r)
		}
	}))
}

func connectSeam(t *testing.T) (engine.Engine, *seamEngine) {
	t.Helper()
	s := &seamEngine{}
	eng, err := ConnectAs(context.Background(), s.serve(t), "the test", engine.Docker)
	if err != nil {
		t.Fatal(err)
	}
	v := eng.Verbs()
	t.Cleanup(func() { _ = v.Close() })
	return v, s
}

// A Docker 28.5 engine on the containerd store says so in its driver status: the seam reports
// the store, its stable ID and its platform in image names (x86_64 is amd64).
func TestSeamIdentifiesAContainerdStoreEngine(t *testing.T) {
	eng, _ := connectSeam(t)
	ctx := context.Background()
	id, err := eng.Identify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if id.Kind != engine.Docker || id.Version != "28.5.2" || id.ID != "daemon-1" || id.Store != engine.StoreContainerd ||
		id.Platform != (engine.Platform{OS: "linux", Architecture: "amd64"}) || id.Host.Driver != "overlayfs" || id.Host.NCPU != 2 ||
		id.Host.Name != "host-1" || id.Host.KernelVersion != "6.1.0" || len(id.Host.DriverStatus) != 1 {
		t.Errorf("Identify = %+v", id)
	}
	v, err := eng.Version(ctx)
	if err != nil || v != (engine.Version{Platform: "Docker Engine - Community", OS: "linux", Arch: "amd64", KernelVersion: "6.1.0"}) {
		t.Errorf("Version = %+v, %v", v, err)
	}
}

// A two-platform index pulled on the containerd store: the image's ID is the index, its target is
// reported, and the manifests it lists say which platform's content the engine holds.
func TestSeamImageIdentityOfAnIndexOnTheContainerdStore(t *testing.T) {
	eng, s := connectSeam(t)
	ctx := context.Background()
	ref := "127.0.0.1:5000/mp/x@" + seamIndex
	img, err := eng.Image(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if img.ID != seamIndex || img.Target != seamIndex || img.Platform.String() != "linux/amd64" || len(img.Manifests) != 0 || img.Size != 8980 {
		t.Errorf("Image = %+v", img)
	}
	img, err = eng.ImageManifests(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if len(img.Manifests) != 3 {
		t.Fatalf("ImageManifests lists %+v", img.Manifests)
	}
	if m := img.Manifests[0]; m.ID != seamAmd64 || !m.Available || m.Kind != engine.ManifestImage || m.Platform == nil || m.Platform.Architecture != "amd64" {
		t.Errorf("first manifest %+v", m)
	}
	if m := img.Manifests[1]; m.Available {
		t.Errorf("the arm64 manifest was never pulled, but is %+v", m)
	}
	if m := img.Manifests[2]; m.Kind == engine.ManifestImage || m.Platform != nil {
		t.Errorf("the attestation is %+v", m)
	}
	if req := s.requests(); !strings.Contains(req[len(req)-1], "manifests=1") {
		t.Errorf("the manifests were not asked for: %q", req[len(req)-1])
	}
	if _, err := eng.Image(ctx, "127.0.0.1:5000/mp/x@"+seamArm64); !engine.IsNotFound(err) {
		t.Errorf("an image the engine lacks: %v", err)
	}
}

// A pull whose stream ends in an error message fails with it, after the progress reported before.
func TestSeamPullReportsProgressAndTheStreamsError(t *testing.T) {
	eng, _ := connectSeam(t)
	var got []engine.PullProgress
	err := eng.Pull(context.Background(), "127.0.0.1:5000/mp/x@"+seamIndex, func(p engine.PullProgress) { got = append(got, p) })
	if err == nil || err.Error() != "unexpected EOF" {
		t.Errorf("Pull = %v", err)
	}
	if len(got) != 2 || got[1] != (engine.PullProgress{Layer: "0841ae73", Status: "Downloading", Current: 100, Total: 8980}) {
		t.Errorf("progress %+v", got)
	}
}

// An image a container still uses is refused, and the refusal is told apart; a save of one
// platform asks the engine for that platform; a load the engine refuses in its stream fails.
func TestSeamUntagSaveAndLoad(t *testing.T) {
	eng, s := connectSeam(t)
	ctx := context.Background()
	if err := eng.Untag(ctx, "in-use:1"); !engine.IsInUse(err) {
		t.Errorf("Untag of an image in use = %v", err)
	}
	rc, err := eng.Save(ctx, []string{"occ.local/import/x:exp"}, &ocispec.Platform{OS: "linux", Architecture: "amd64"})
	if err != nil {
		t.Fatal(err)
	}
	_ = rc.Close()
	req := s.requests()
	if last := req[len(req)-1]; !strings.Contains(last, "/images/get?") || !strings.Contains(last, "platform=") || !strings.Contains(last, "amd64") {
		t.Errorf("save asked %q", last)
	}
	if err := eng.Load(ctx, strings.NewReader("not a tar")); err == nil || !strings.Contains(err.Error(), "invalid tar header") {
		t.Errorf("Load = %v", err)
	}
}

// Containers, networks and volumes are listed by label (the filter the engine gets) and looked
// up by name, with their names and labels as occ records them; the images containers use are
// listed without "sha256:".
func TestSeamListsAndRemovesByLabel(t *testing.T) {
	eng, s := connectSeam(t)
	ctx := context.Background()
	labels := map[string]string{"com.docker.compose.project": "occ-dev-x"}
	cs, err := eng.List(ctx, engine.Containers, labels)
	if err != nil || len(cs) != 2 || cs[0].Name != "occ-dev-x-api-1" || cs[0].Labels["com.docker.compose.project"] != "occ-dev-x" {
		t.Errorf("containers %+v, %v", cs, err)
	}
	req := s.requests()
	if last := req[len(req)-1]; !strings.Contains(last, "com.docker.compose.project%3Docc-dev-x") || !strings.Contains(last, "all=1") {
		t.Errorf("container list asked %q", last)
	}
	if ns, err := eng.List(ctx, engine.Networks, labels); err != nil || len(ns) != 1 || ns[0].Name != "occ-dev-x_default" || !slices.Equal(ns[0].Subnets, []string{"172.30.0.0/16"}) {
		t.Errorf("networks %+v, %v", ns, err)
	}
	if vs, err := eng.List(ctx, engine.Volumes, labels); err != nil || len(vs) != 1 || vs[0].ID != "occ-dev-x_pg" {
		t.Errorf("volumes %+v, %v", vs, err)
	}
	if _, err := eng.List(ctx, engine.Images, labels); err == nil {
		t.Error("images were listed by label")
	}
	if n, err := eng.Inspect(ctx, engine.Networks, "occ-dev-x_default"); err != nil || n.ID != "n1" || n.Labels["com.docker.compose.network"] != "default" {
		t.Errorf("network %+v, %v", n, err)
	}
	if v, err := eng.Inspect(ctx, engine.Volumes, "occ-dev-x_pg"); err != nil || v.Name != "occ-dev-x_pg" || v.Labels["com.docker.compose.volume"] != "pg" {
		t.Errorf("volume %+v, %v", v, err)
	}
	if _, err := eng.Inspect(ctx, engine.Volumes, "occ-dev-x_gone"); !engine.IsNotFound(err) {
		t.Errorf("a removed volume: %v", err)
	}
	if err := eng.Remove(ctx, engine.Networks, "occ-dev-x_default"); err != nil {
		t.Error(err)
	}
	if err := eng.Remove(ctx, engine.Volumes, "occ-dev-x_pg"); err != nil {
		t.Error(err)
	}
	used, err := eng.ImagesInUse(ctx)
	if err != nil || !used["6ad55c21"] || !used["6ad55c22"] || len(used) != 2 {
		t.Errorf("ImagesInUse = %v, %v", used, err)
	}
	if ok, err := eng.ContainerExists(ctx, "gone"); ok || err != nil {
		t.Errorf("a removed container exists: %v, %v", ok, err)
	}
	if ok, err := eng.ContainerExists(ctx, "k3d-x-server-0"); !ok || err != nil {
		t.Errorf("the node does not exist: %v, %v", ok, err)
	}
}

// A listed container carries its state, image, creation and the volumes it mounts (not its bind
// mounts); an inspected one its exit, health, TTY and addresses; an inspected network its
// members; a name is looked up through the engine's name filter.
func TestSeamObjectFields(t *testing.T) {
	eng, s := connectSeam(t)
	ctx := context.Background()
	cs, err := eng.ListNamed(ctx, engine.Containers, "k3d-x-")
	if err != nil || len(cs) != 2 {
		t.Fatalf("containers %+v, %v", cs, err)
	}
	if last := s.requests()[len(s.requests())-1]; !strings.Contains(last, "name%22%3A%7B%22k3d-x-%22") {
		t.Errorf("container list asked %q", last)
	}
	if c := cs[0]; c.State != "running" || c.Image != "sha256:6ad55c21" || !c.Created.Equal(time.Unix(1700000000, 0)) || len(c.Volumes) != 0 {
		t.Errorf("first container %+v", c)
	}
	if c := cs[1]; c.State != "exited" || !slices.Equal(c.Volumes, []string{"k3d-x-images", "0a1b"}) {
		t.Errorf("second container %+v", c)
	}
	if _, err := eng.ListNamed(ctx, engine.Images, "x"); err == nil {
		t.Error("images were listed by name")
	}
	c, err := eng.Inspect(ctx, engine.Containers, "occ-dev-x-bootstrap-1")
	if err != nil || c.ID != "c3" || c.Name != "occ-dev-x-bootstrap-1" || c.State != "exited" || c.ExitCode != 3 || c.Health != "unhealthy" || !c.TTY ||
		c.Image != "sha256:6ad55c23" || c.Addresses["occ-dev-x_development"] != "172.30.0.4" || c.Labels["com.docker.compose.service"] != "bootstrap" ||
		!c.Created.Equal(time.Date(2026, 12, 7, 12, 0, 0, 5e8, time.UTC)) {
		t.Errorf("container %+v, %v", c, err)
	}
	if n, err := eng.Inspect(ctx, engine.Networks, "occ-dev-x_default"); err != nil || !maps.Equal(n.Members, map[string]string{"c1": "172.30.0.2/16", "c2": ""}) {
		t.Errorf("network %+v, %v", n, err)
	}
	if err := eng.Disconnect(ctx, "occ-dev-x_development", "c3"); err != nil {
		t.Error(err)
	}
}

// Events asks for the container events of the labels and actions, delivers them in occ's terms,
// and ends with ctx's error once ctx ends.
func TestSeamEventsFilteredByLabelEndWithCtx(t *testing.T) {
	eng, s := connectSeam(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	evs, errs := eng.Events(ctx, map[string]string{"com.docker.compose.project": "occ-dev-x"}, engine.EventStart, engine.EventDie)
	select {
	case ev := <-evs:
		if ev.Action != "die" || ev.Container != "c1" || ev.Labels["com.docker.compose.project"] != "occ-dev-x" || !ev.Time.Equal(time.Unix(0, 1700000000000000001)) {
			t.Errorf("event %+v", ev)
		}
	case err := <-errs:
		t.Fatal(err)
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
	}
	var asked string
	for _, r := range s.requests() {
		if strings.Contains(r, "/events?") {
			asked = r
		}
	}
	for _, want := range []string{"com.docker.compose.project%3Docc-dev-x", "%22type%22%3A%7B%22container%22", "%22start%22", "%22die%22"} {
		if !strings.Contains(asked, want) {
			t.Errorf("events asked %q, without %s", asked, want)
		}
	}
	cancel()
	select {
	case err := <-errs:
		if err != context.Canceled {
			t.Errorf("the stream ended with %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end with ctx")
	}
}

// Logs splits the engine's multiplexed log into stdout and stderr, and asks for the tail;
// CopyFrom hands out the engine's archive.
func TestSeamLogsAndCopyFrom(t *testing.T) {
	eng, s := connectSeam(t)
	ctx := context.Background()
	var out, errOut strings.Builder
	if err := eng.Logs(ctx, "job", engine.LogsRequest{Tail: 20}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if out.String() != "migrating\n" || errOut.String() != "boom\n" {
		t.Errorf("stdout %q, stderr %q", out.String(), errOut.String())
	}
	if last := s.requests()[len(s.requests())-1]; !strings.Contains(last, "tail=20") || !strings.Contains(last, "stderr=1") {
		t.Errorf("logs asked %q", last)
	}
	rc, err := eng.CopyFrom(ctx, "job", "/key/service.key")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if b, _ := io.ReadAll(rc); string(b) != "a tar stream" {
		t.Errorf("archive %q", b)
	}
}
