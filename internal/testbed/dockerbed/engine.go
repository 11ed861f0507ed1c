// Package dockerbed is the Docker + k3d tier of the test bed: it connects tests to the private
// Docker engines that scripts/testdocker starts, builds the images the bed needs (busybox, the k3s
// stand-in node, k3d's tools and proxy, stand-ins for the pinned product images) with
// go-containerregistry, loads them into an engine, and serves them from an in-process registry
// so that the engine pulls them by digest for real, shaped as registries serve real images
// (multi-platform indexes, attestation manifests, Docker manifest lists). Only tests import it.
package dockerbed

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/client"
)

// SkipEnv names the variable that turns a missing engine from a test failure into a skip. It is
// for machines that cannot run Docker at all; make test and CI never set it.
const SkipEnv = "OCC_TEST_DOCKER"

// ClassicHostEnv names the variable that holds the DOCKER_HOST of the bed's classic-store engine,
// Docker Engine 28.5.2 on the classic image store (`scripts/testdocker classic`; make test
// exports it). DOCKER_HOST names the default engine, Docker Engine 29 on its containerd image
// store. Between them they are the two ways a Docker engine keeps images today, which differ in
// what an image ID is (see ImageStore).
const ClassicHostEnv = "OCC_TEST_DOCKER_CLASSIC_HOST"

// LegacyHostEnv names the variable that holds the DOCKER_HOST of the bed's legacy engine,
// Debian's docker.io 20.10 (`scripts/testdocker legacy`; make test exports it). It exists for the
// tests of what occ refuses on an engine that old (its builder cannot parse RUN heredocs).
const LegacyHostEnv = "OCC_TEST_DOCKER_LEGACY_HOST"

// PodmanHostEnv names the variable that holds the bed's Podman endpoint (`scripts/testpodman`;
// make test exports it), reached through Podman's Docker-compatible API.
const PodmanHostEnv = "OCC_TEST_PODMAN_HOST"

// PodmanSkipEnv names the variable that turns a missing Podman bed into a skip.
const PodmanSkipEnv = "OCC_TEST_PODMAN"

// Engine is a connection to one of the bed's engines.
type Engine struct {
	// API is a Docker API client for the engine, negotiated down to its API version.
	API *client.Client
	// Host is the DOCKER_HOST value (unix:///…) the engine was reached at.
	Host string
	// Socket is the filesystem path of the engine's unix socket. k3d bind-mounts it into its
	// tools container and reads it from DOCKER_SOCK, so k3d callers must export it there.
	Socket string

	storeOnce sync.Once
	store     ImageStore
	storeErr  error
}

// Require returns the engine named by DOCKER_HOST (the bed's default engine, Docker 29 on the
// containerd image store), after checking that it answers. A test that calls it fails when there
// is no engine, unless OCC_TEST_DOCKER=skip, in which case it is skipped with the reason printed.
// Every test that needs Docker calls this first.
func Require(t testing.TB) *Engine {
	t.Helper()
	return require(t, "DOCKER_HOST", SkipEnv, "export DOCKER_HOST=$(scripts/testdocker)")
}

// RequireClassic returns the bed's classic-store engine (Docker 28.5.2), named by
// OCC_TEST_DOCKER_CLASSIC_HOST, after checking that it answers. Like Require, it fails the test
// when the engine is missing unless OCC_TEST_DOCKER=skip.
func RequireClassic(t testing.TB) *Engine {
	t.Helper()
	return require(t, ClassicHostEnv, SkipEnv, "export "+ClassicHostEnv+"=$(scripts/testdocker classic)")
}

// RequireLegacy returns the bed's legacy engine (Debian's docker.io 20.10), named by
// OCC_TEST_DOCKER_LEGACY_HOST, after checking that it answers. Like Require, it fails the test
// when the engine is missing unless OCC_TEST_DOCKER=skip.
func RequireLegacy(t testing.TB) *Engine {
	t.Helper()
	return require(t, LegacyHostEnv, SkipEnv, "export "+LegacyHostEnv+"=$(scripts/testdocker legacy)")
}

func require(t testing.TB, env, skipEnv, start string) *Engine {
	t.Helper()
	e, err := connect(env)
	if err != nil {
		if os.Getenv(skipEnv) == "skip" {
			t.Skipf("dockerbed: skipped because %s=skip and the engine of %s is not usable: %v", skipEnv, env, err)
		}
		t.Fatalf("dockerbed: %v\n(start it with `%s`, or run `make test`, which does; set %s=skip only on a machine that cannot run it)", err, start, skipEnv)
	}
	t.Cleanup(func() { e.API.Close() })
	return e
}

// Flavour is one kind of engine occ meets on users' machines, as the bed runs it.
type Flavour struct {
	// Name names the flavour in subtest names.
	Name string
	// HostEnv names the variable holding the flavour's DOCKER_HOST value.
	HostEnv string
	// Store is how the flavour keeps images.
	Store ImageStore
	// Podman reports whether the engine is Podman (through its Docker-compatible API).
	Podman bool

	skipEnv, start string
}

// Flavours lists the engine flavours a test of engine-dependent behaviour runs on, one subtest
// each: Docker on its containerd image store (Engine 29's and Docker Desktop's default), Docker on
// the classic store, and Podman. The legacy 20.10 engine is not among them: it is only for the
// refusals of what it cannot do.
func Flavours() []Flavour {
	return []Flavour{
		{Name: "docker-containerd-store", HostEnv: "DOCKER_HOST", Store: ContainerdStore, skipEnv: SkipEnv, start: "export DOCKER_HOST=$(scripts/testdocker)"},
		{Name: "docker-classic-store", HostEnv: ClassicHostEnv, Store: ClassicStore, skipEnv: SkipEnv, start: "export " + ClassicHostEnv + "=$(scripts/testdocker classic)"},
		{Name: "podman", HostEnv: PodmanHostEnv, Store: ClassicStore, Podman: true, skipEnv: PodmanSkipEnv, start: "export " + PodmanHostEnv + "=$(scripts/testpodman)"},
	}
}

// Require connects to the flavour's engine, after checking that it answers and keeps images the
// way the flavour says. It fails the test when the engine is missing, unless the flavour's skip
// variable (OCC_TEST_DOCKER, or OCC_TEST_PODMAN for Podman) is "skip".
func (f Flavour) Require(t testing.TB) *Engine {
	t.Helper()
	e := require(t, f.HostEnv, f.skipEnv, f.start)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	store, err := e.ImageStore(ctx)
	if err != nil {
		t.Fatalf("dockerbed: %v", err)
	}
	if store != f.Store {
		t.Fatalf("dockerbed: the engine at %s=%s keeps images on the %s, but the %s flavour is the %s", f.HostEnv, e.Host, store, f.Name, f.Store)
	}
	return e
}

// Use is Require, and points the test's DOCKER_HOST at the engine, where the bed (Start) and occ
// look for it. Its Docker flavours only: Podman is reached as occ reaches it (podmanbed).
func (f Flavour) Use(t testing.TB) *Engine {
	t.Helper()
	if f.Podman {
		t.Fatalf("dockerbed: the %s flavour is reached through podmanbed, not DOCKER_HOST", f.Name)
	}
	e := f.Require(t)
	t.Setenv("DOCKER_HOST", e.Host)
	return e
}

// connect reaches the engine whose DOCKER_HOST value is in the environment variable env.
func connect(env string) (*Engine, error) {
	host := os.Getenv(env)
	if host == "" {
		return nil, fmt.Errorf("%s is not set", env)
	}
	u, err := url.Parse(host)
	if err != nil || u.Scheme != "unix" || u.Path == "" {
		return nil, fmt.Errorf("%s=%q is not a unix:///path socket address, which the bed needs (k3d imports images directly only over a local socket)", env, host)
	}
	api, err := client.NewClientWithOpts(client.WithHost(host), client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client for %s=%q: %w", env, host, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := api.Ping(ctx); err != nil {
		api.Close()
		return nil, fmt.Errorf("docker engine at %s=%q does not answer: %w", env, host, err)
	}
	return &Engine{API: api, Host: host, Socket: u.Path}, nil
}

// ImageStore is how an engine keeps images, which decides what its image IDs are.
type ImageStore int

const (
	// ClassicStore is Docker's classic image store (graph drivers such as overlay2; Docker
	// before 29 by default, and any Docker with "containerd-snapshotter" off), and Podman: an
	// image's ID is the digest of its config.
	ClassicStore ImageStore = iota
	// ContainerdStore is Docker's containerd image store (Docker Engine 29's and new Docker
	// Desktop installs' default): an image's ID is the digest of its target, the manifest or
	// index it was pulled or loaded as.
	ContainerdStore
)

func (s ImageStore) String() string {
	if s == ContainerdStore {
		return "containerd image store"
	}
	return "classic image store"
}

// containerdSnapshotter is the driver-type a Docker engine on the containerd image store reports
// in its info's DriverStatus.
const containerdSnapshotter = "io.containerd.snapshotter.v1"

// ImageStore reports how the engine keeps images, from its info (asked once per Engine).
func (e *Engine) ImageStore(ctx context.Context) (ImageStore, error) {
	e.storeOnce.Do(func() {
		info, err := e.API.Info(ctx)
		if err != nil {
			e.storeErr = fmt.Errorf("engine info at %s: %w", e.Host, err)
			return
		}
		for _, kv := range info.DriverStatus {
			if len(kv) == 2 && kv[0] == "driver-type" && kv[1] == containerdSnapshotter {
				e.store = ContainerdStore
			}
		}
	})
	return e.store, e.storeErr
}

// UniqueName returns a name for a Docker object that no concurrent test (of this or another
// helper's run on the same engine) uses: prefix, the test's name and a random suffix, in the
// lower-case alphabet that container, network and k3d cluster names all accept.
func UniqueName(t testing.TB, prefix string) string {
	base := strings.ToLower(t.Name())
	base = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, base)
	if len(base) > 20 {
		base = base[:20]
	}
	return fmt.Sprintf("%s-%s-%s", prefix, strings.Trim(base, "-"), strings.ToLower(rand.Text()[:8]))
}
