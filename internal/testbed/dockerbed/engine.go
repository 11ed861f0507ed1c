// Package dockerbed is the Docker + k3d tier of the test bed: it connects tests to the private
// Docker engine that scripts/testdocker starts, builds the images the bed needs (busybox, the k3s
// stand-in node, k3d's tools and proxy, stand-ins for the pinned product images) with
// go-containerregistry, loads them into the engine, and serves them from an in-process registry
// so that the engine pulls them by digest for real. Only tests import it.
package dockerbed

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/client"
)

// SkipEnv names the variable that turns a missing engine from a test failure into a skip. It is
// for machines that cannot run Docker at all; make test and CI never set it.
const SkipEnv = "OCC_TEST_DOCKER"

// LegacyHostEnv names the variable that holds the DOCKER_HOST of the bed's legacy engine,
// Debian's docker.io 20.10 (`scripts/testdocker legacy`; make test exports it). DOCKER_HOST
// names the default engine, a current Docker Engine; the legacy one exists for the tests of what
// occ refuses on an engine that old (its builder cannot parse RUN heredocs).
const LegacyHostEnv = "OCC_TEST_DOCKER_LEGACY_HOST"

// Engine is a connection to the bed's Docker engine.
type Engine struct {
	// API is a Docker API client for the engine, negotiated down to its API version.
	API *client.Client
	// Host is the DOCKER_HOST value (unix:///…) the engine was reached at.
	Host string
	// Socket is the filesystem path of the engine's unix socket. k3d bind-mounts it into its
	// tools container and reads it from DOCKER_SOCK, so k3d callers must export it there.
	Socket string
}

// Require returns the engine named by DOCKER_HOST, after checking that it answers. A test that
// calls it fails when there is no engine, unless OCC_TEST_DOCKER=skip, in which case it is
// skipped with the reason printed. Every test that needs Docker calls this first.
func Require(t testing.TB) *Engine {
	t.Helper()
	e, err := connect("DOCKER_HOST")
	if err != nil {
		if os.Getenv(SkipEnv) == "skip" {
			t.Skipf("dockerbed: skipped because %s=skip and no Docker engine is usable: %v", SkipEnv, err)
		}
		t.Fatalf("dockerbed: %v\n(start the bed's engine with `export DOCKER_HOST=$(scripts/testdocker)`, or run `make test`, which does; set %s=skip only on a machine that cannot run Docker)", err, SkipEnv)
	}
	t.Cleanup(func() { e.API.Close() })
	return e
}

// RequireLegacy returns the bed's legacy engine (Debian's docker.io 20.10), named by
// OCC_TEST_DOCKER_LEGACY_HOST, after checking that it answers. Like Require, it fails the test
// when the engine is missing unless OCC_TEST_DOCKER=skip.
func RequireLegacy(t testing.TB) *Engine {
	t.Helper()
	e, err := connect(LegacyHostEnv)
	if err != nil {
		if os.Getenv(SkipEnv) == "skip" {
			t.Skipf("dockerbed: skipped because %s=skip and the legacy Docker engine is not usable: %v", SkipEnv, err)
		}
		t.Fatalf("dockerbed: %v\n(start the bed's legacy engine with `export %s=$(scripts/testdocker legacy)`, or run `make test`, which does; set %s=skip only on a machine that cannot run Docker)", err, LegacyHostEnv, SkipEnv)
	}
	t.Cleanup(func() { e.API.Close() })
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
