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
	e, err := connect()
	if err != nil {
		if os.Getenv(SkipEnv) == "skip" {
			t.Skipf("dockerbed: skipped because %s=skip and no Docker engine is usable: %v", SkipEnv, err)
		}
		t.Fatalf("dockerbed: %v\n(start the bed's engine with `export DOCKER_HOST=$(scripts/testdocker)`, or run `make test`, which does; set %s=skip only on a machine that cannot run Docker)", err, SkipEnv)
	}
	t.Cleanup(func() { e.API.Close() })
	return e
}

func connect() (*Engine, error) {
	host := os.Getenv("DOCKER_HOST")
	if host == "" {
		return nil, fmt.Errorf("DOCKER_HOST is not set")
	}
	u, err := url.Parse(host)
	if err != nil || u.Scheme != "unix" || u.Path == "" {
		return nil, fmt.Errorf("DOCKER_HOST=%q is not a unix:///path socket address, which the bed needs (k3d imports images directly only over a local socket)", host)
	}
	api, err := client.NewClientWithOpts(client.WithHost(host), client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client for DOCKER_HOST=%q: %w", host, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := api.Ping(ctx); err != nil {
		api.Close()
		return nil, fmt.Errorf("docker engine at DOCKER_HOST=%q does not answer: %w", host, err)
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
