package dockerbed

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/system"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/net/http2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// heredocDockerfile is the shape of OCE's runtime image, which writes a file with a RUN heredoc,
// plus an optional secret mount like the root Dockerfile's: both are BuildKit-only syntax (the
// Dockerfile frontend of BuildKit ≥ 0.10, Docker Engine ≥ 23).
const heredocDockerfile = `FROM %s
RUN <<EOF
set -e
echo heredoc-one > /heredoc.txt
echo heredoc-two >> /heredoc.txt
EOF
RUN --mount=type=secret,id=occ-bed-absent,required=false cat /heredoc.txt
`

// The bed's default engine is what OCE engineers run today (Docker Desktop, docker-ce): a Docker
// Engine of version 23 or later whose builder is BuildKit and builds RUN heredocs.
func TestDefaultEngineBuildsHeredocs(t *testing.T) {
	e := Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	v, err := e.API.ServerVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if major := engineMajor(v.Version); major < 23 {
		t.Fatalf("the default engine at %s is Docker %s; the bed's default must be 23 or later (scripts/testdocker starts Docker 29; the 20.10 engine is `scripts/testdocker legacy`)", e.Host, v.Version)
	}
	ping, err := e.API.Ping(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ping.BuilderVersion != build.BuilderBuildKit {
		t.Errorf("the default engine's builder is %q, want BuildKit (%q)", ping.BuilderVersion, build.BuilderBuildKit)
	}
	t.Logf("default engine: Docker %s, API %s, builder %s", v.Version, v.APIVersion, ping.BuilderVersion)

	tag := UniqueName(t, "occ-bed-heredoc") + ":1"
	if err := buildHeredoc(ctx, t, e, tag); err != nil {
		t.Fatalf("the default engine cannot build a RUN heredoc: %v", err)
	}
	t.Cleanup(func() {
		_, _ = e.API.ImageRemove(context.Background(), tag, image.RemoveOptions{Force: true, PruneChildren: true})
	})
	// The heredoc ran as a script: both lines are in the file.
	if got := runOnce(ctx, t, e, tag, "cat", "/heredoc.txt"); got != "heredoc-one\nheredoc-two\n" {
		t.Fatalf("/heredoc.txt of the built image is %q, want both heredoc lines", got)
	}
}

// The bed's default engine is what Docker Engine 29 and new Docker Desktop installs are: Docker
// 29 on its default image store, the containerd one, where an image's ID is the digest of the
// manifest (or index) it was loaded or pulled as, not its config digest.
func TestDefaultEngineIsDocker29OnTheContainerdStore(t *testing.T) {
	e := Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	v, info := versionAndInfo(ctx, t, e)
	if engineMajor(v.Version) != 29 {
		t.Errorf("the default engine at %s is Docker %s, want 29.x (scripts/testdocker)", e.Host, v.Version)
	}
	if !slices.ContainsFunc(info.DriverStatus, func(kv [2]string) bool { return kv == [2]string{"driver-type", containerdSnapshotter} }) {
		t.Fatalf("the default engine's storage driver %s reports %v, want driver-type %s (the containerd image store)", info.Driver, info.DriverStatus, containerdSnapshotter)
	}
	if store, err := e.ImageStore(ctx); err != nil || store != ContainerdStore {
		t.Fatalf("ImageStore = %v, %v; want the containerd image store", store, err)
	}
	l, img, ins := loadBusybox(ctx, t, e)
	manifest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if ins.Descriptor == nil || ins.Descriptor.Digest.String() != manifest.String() || ins.ID != manifest.String() || l.ID != ins.ID {
		t.Fatalf("loaded %s: ID %s, Descriptor %+v, LocalImage.ID %s; want all the loaded manifest's digest %s", l.Tag, ins.ID, ins.Descriptor, l.ID, manifest)
	}
	t.Logf("default engine: Docker %s (API %s), storage driver %s %v, containerd %s", v.Version, v.APIVersion, info.Driver, info.DriverStatus, componentVersion(v, "containerd"))
}

// The classic-store engine is what most Docker hosts ran before Engine 29 and what a daemon.json
// with the containerd snapshotter off still gives: overlay2, and image IDs that are config
// digests.
func TestClassicEngineIsDocker28OnTheClassicStore(t *testing.T) {
	e := RequireClassic(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	v, info := versionAndInfo(ctx, t, e)
	if engineMajor(v.Version) != 28 {
		t.Errorf("the classic engine at %s=%s is Docker %s, want 28.x (scripts/testdocker classic)", ClassicHostEnv, e.Host, v.Version)
	}
	if info.Driver != "overlay2" || slices.ContainsFunc(info.DriverStatus, func(kv [2]string) bool { return kv[0] == "driver-type" }) {
		t.Fatalf("the classic engine's storage driver is %s %v, want overlay2 (the classic image store)", info.Driver, info.DriverStatus)
	}
	if store, err := e.ImageStore(ctx); err != nil || store != ClassicStore {
		t.Fatalf("ImageStore = %v, %v; want the classic image store", store, err)
	}
	l, img, ins := loadBusybox(ctx, t, e)
	config, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	if ins.ID != config.String() || l.ID != ins.ID || ins.Descriptor != nil {
		t.Fatalf("loaded %s: ID %s, Descriptor %+v, LocalImage.ID %s; want the config digest %s and no descriptor", l.Tag, ins.ID, ins.Descriptor, l.ID, config)
	}
	t.Logf("classic engine: Docker %s (API %s), storage driver %s", v.Version, v.APIVersion, info.Driver)
}

// A pinned index pulled on each engine flavour: the engine keeps the identity its store keeps
// (the index digest on the containerd store, the native platform's config digest on the classic
// store and Podman), records the pin in RepoDigests, and holds the native platform only.
func TestPinnedIndexPullGivesEachStoreItsIdentity(t *testing.T) {
	for _, f := range Flavours() {
		t.Run(f.Name, func(t *testing.T) {
			e := f.Require(t)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			b := &Bed{t: t, Engine: e, Registry: StartRegistry(t)}
			spec, err := ProductImage("bed-identity-" + f.Name)
			if err != nil {
				t.Fatal(err)
			}
			p, err := b.Provide(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			id, err := e.Pull(ctx, p.Ref)
			if err != nil {
				t.Fatal(err)
			}
			if want := p.LocalID(f.Store); id != want {
				t.Fatalf("pulled %s on the %s: image ID %s, want %s (Digest %s, ManifestDigest %s, ConfigDigest %s)", p.Ref, f.Store, id, want, p.Digest, p.ManifestDigest, p.ConfigDigest)
			}
			if f.Store != ContainerdStore {
				return
			}
			ins, err := e.API.ImageInspect(ctx, p.Ref, client.ImageInspectWithManifests(true))
			if err != nil {
				t.Fatal(err)
			}
			available := map[string]bool{}
			for _, m := range ins.Manifests {
				if m.Kind == image.ManifestKindImage {
					available[m.ImageData.Platform.OS+"/"+m.ImageData.Platform.Architecture] = m.Available
				}
			}
			native, foreign := nativePlatform(), foreignPlatform()
			if !available[native.OS+"/"+native.Architecture] || available[foreign.OS+"/"+foreign.Architecture] || len(available) != 2 {
				t.Errorf("the engine's manifests of %s: available %v; want %s only, of two", p.Ref, available, native)
			}
		})
	}
}

// versionAndInfo is what the engine says of itself: its version and its system info.
func versionAndInfo(ctx context.Context, t *testing.T, e *Engine) (types.Version, system.Info) {
	t.Helper()
	v, err := e.API.ServerVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	info, err := e.API.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return v, info
}

// ensureBusybox loads the bed's busybox into the engine unless it holds it already, and returns
// its spec and the loaded image.
func ensureBusybox(ctx context.Context, t *testing.T, e *Engine) (ImageSpec, LocalImage) {
	t.Helper()
	spec, err := BusyboxImage()
	if err != nil {
		t.Fatal(err)
	}
	l, err := e.EnsureImage(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	return spec, l
}

// loadBusybox loads the bed's busybox into the engine and returns the loaded image, the image
// it was loaded from, and the engine's inspect of the loaded tag.
func loadBusybox(ctx context.Context, t *testing.T, e *Engine) (LocalImage, v1.Image, image.InspectResponse) {
	t.Helper()
	spec, l := ensureBusybox(ctx, t, e)
	img, err := spec.Image()
	if err != nil {
		t.Fatal(err)
	}
	ins, err := e.API.ImageInspect(ctx, l.Tag)
	if err != nil {
		t.Fatal(err)
	}
	return l, img, ins
}

// componentVersion is the version of the named component a Docker engine reports.
func componentVersion(v types.Version, name string) string {
	for _, c := range v.Components {
		if strings.EqualFold(c.Name, name) {
			return c.Version
		}
	}
	return "unknown"
}

// The tests of what occ refuses on an old engine need Debian's docker.io 20.10, whose builder
// cannot parse a RUN heredoc; OCC_TEST_DOCKER_LEGACY_HOST names that engine.
func TestLegacyEngineIs2010AndRefusesHeredocs(t *testing.T) {
	e := RequireLegacy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	v, err := e.API.ServerVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(v.Version, "20.10.") {
		t.Fatalf("the legacy engine at %s=%s is Docker %s, want Debian's 20.10 (scripts/testdocker legacy)", LegacyHostEnv, e.Host, v.Version)
	}
	tag := UniqueName(t, "occ-bed-heredoc") + ":1"
	err = buildHeredoc(ctx, t, e, tag)
	if err == nil {
		_, _ = e.API.ImageRemove(context.Background(), tag, image.RemoveOptions{Force: true, PruneChildren: true})
		t.Fatalf("Docker %s built a RUN heredoc; the legacy engine is there because it cannot", v.Version)
	}
	t.Logf("Docker %s refuses the heredoc Dockerfile: %v", v.Version, err)
}

// engineMajor is the major version of a Docker Engine version string ("28.5.2" → 28), or 0.
func engineMajor(version string) int {
	major, _, _ := strings.Cut(version, ".")
	n, err := strconv.Atoi(major)
	if err != nil {
		return 0
	}
	return n
}

// buildHeredoc builds heredocDockerfile on the bed's busybox through the engine's BuildKit and
// tags the result; the error is the builder's own message.
func buildHeredoc(ctx context.Context, t *testing.T, e *Engine, tag string) error {
	t.Helper()
	_, base := ensureBusybox(ctx, t, e)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dockerfile := fmt.Sprintf(heredocDockerfile, base.Tag)
	if err := tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile))}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write([]byte(dockerfile)); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	// BuildKit resolves every secret mount, optional or not, through a client session.
	session, err := startSession(ctx, e)
	if err != nil {
		return err
	}
	defer session.stop()
	// NoCache: the RUN steps must run, not come from an earlier build. The bed's engines have no
	// default bridge, which RUN steps would join otherwise.
	resp, err := e.API.ImageBuild(ctx, &buf, build.ImageBuildOptions{
		Version: build.BuilderBuildKit, SessionID: session.id, NoCache: true, Tags: []string{tag}, NetworkMode: "none", Remove: true, ForceRemove: true,
	})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var msg struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&msg); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return fmt.Errorf("read the build stream: %w", err)
		}
		if msg.Error != "" {
			return errors.New(msg.Error)
		}
	}
	if _, err := e.API.ImageInspect(ctx, tag); err != nil {
		return fmt.Errorf("the build ended without an error but %s is missing: %w", tag, err)
	}
	return nil
}

// buildSession is a BuildKit client session that offers only gRPC health: the engine upgrades
// POST /session to HTTP/2, and the builder calls the client back on it. A builder asking it
// for a secret gets "unimplemented", which BuildKit takes as "no such secret".
type buildSession struct {
	id   string
	stop func()
}

func startSession(ctx context.Context, e *Engine) (*buildSession, error) {
	id := strings.ToLower(rand.Text())
	conn, err := e.API.DialHijack(ctx, "/session", "h2c", map[string][]string{
		"X-Docker-Expose-Session-Uuid":        {id},
		"X-Docker-Expose-Session-Name":        {"occ-bed"},
		"X-Docker-Expose-Session-Sharedkey":   {"occ-bed-" + id},
		"X-Docker-Expose-Session-Grpc-Method": {"/grpc.health.v1.Health/Check", "/grpc.health.v1.Health/Watch"},
	})
	if err != nil {
		return nil, fmt.Errorf("open a BuildKit session: %w", err)
	}
	srv := grpc.NewServer()
	healthpb.RegisterHealthServer(srv, health.NewServer())
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		(&http2.Server{}).ServeConn(conn, &http2.ServeConnOpts{Context: sctx, Handler: srv})
	}()
	return &buildSession{id: id, stop: func() {
		cancel()
		srv.Stop()
		_ = conn.Close()
		<-done
	}}, nil
}

// runOnce runs cmd in a new container of img without a network and returns what it printed.
func runOnce(ctx context.Context, t *testing.T, e *Engine, img string, cmd ...string) string {
	t.Helper()
	name := UniqueName(t, "occ-bed")
	created, err := e.API.ContainerCreate(ctx, &container.Config{Image: img, Cmd: cmd, Labels: map[string]string{"occ.test": name}},
		&container.HostConfig{NetworkMode: "none"}, nil, nil, name)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = e.API.ContainerRemove(context.Background(), created.ID, container.RemoveOptions{Force: true})
	}()
	wait, errs := e.API.ContainerWait(ctx, created.ID, container.WaitConditionNextExit)
	if err := e.API.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-wait:
		if res.StatusCode != 0 {
			t.Fatalf("%q in %s exited %d", cmd, img, res.StatusCode)
		}
	case err := <-errs:
		t.Fatal(err)
	}
	logs, err := e.API.ContainerLogs(ctx, created.ID, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	var stdout, stderr bytes.Buffer
	if _, err := stdcopy.StdCopy(&stdout, &stderr, logs); err != nil {
		t.Fatal(err)
	}
	return stdout.String()
}
