// Package podmanbed is the Podman tier of the test bed: it connects tests to the private
// `podman system service` that scripts/testpodman starts and runs the Docker bed's machinery
// (its images, its in-process registry, its k3s stand-in node) against that engine through
// Podman's Docker-compatible API, the way k3d and occ reach Podman. Only tests import it.
package podmanbed

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/engine/locate"
	"github.com/openclaw/occ/internal/testbed/dockerbed"
)

// HostEnv names the variable holding the bed's Podman endpoint (what scripts/testpodman prints).
// It is not CONTAINER_HOST or DOCKER_HOST, so a test decides itself which of those the code
// under test sees.
const HostEnv = dockerbed.PodmanHostEnv

// SkipEnv names the variable that turns a missing Podman bed from a test failure into a skip. It
// is for machines that cannot run Podman at all.
const SkipEnv = dockerbed.PodmanSkipEnv

// Require returns the bed's Podman engine as a Docker-API engine, after checking that it answers
// and identifies as Podman. A test that calls it fails when there is no Podman bed, unless
// OCC_TEST_PODMAN=skip, in which case it is skipped with the reason printed.
func Require(t testing.TB) *dockerbed.Engine {
	t.Helper()
	e, version, err := connect()
	if err != nil {
		if os.Getenv(SkipEnv) == "skip" {
			t.Skipf("podmanbed: skipped because %s=skip and the Podman bed is not usable: %v", SkipEnv, err)
		}
		t.Fatalf("podmanbed: %v\n(start the bed's Podman service with `export %s=$(scripts/testpodman)`; set %s=skip only on a machine that cannot run Podman)", err, HostEnv, SkipEnv)
	}
	t.Logf("podmanbed: Podman %s at %s", version, e.Host)
	t.Cleanup(func() { e.API.Close() })
	return e
}

// Start prepares the Docker bed's k3d machinery on the Podman engine: DOCKER_HOST is pointed at
// the Podman socket for the test (k3d's Docker runtime reads it on every call, as it does for a
// user who runs k3d on Podman), and then dockerbed.Start loads the node, tools and proxy images
// into Podman, pushes them to a registry of the test's own and sets DOCKER_SOCK,
// K3D_IMAGE_TOOLS, K3D_IMAGE_LOADBALANCER and TMPDIR. Like dockerbed.Start it sets the test's
// environment, so the test must not be parallel.
func Start(t testing.TB) *dockerbed.Bed {
	t.Helper()
	e := Require(t)
	t.Setenv("DOCKER_HOST", e.Host)
	for _, v := range []string{"DOCKER_CONTEXT", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH"} {
		t.Setenv(v, "")
		os.Unsetenv(v)
	}
	b := dockerbed.Start(t)
	// Pull the pins now, as a pinned pull does in production. Podman resolves a digest reference
	// to any local image holding that manifest digest, whatever its name, so k3d (which pulls
	// only when creating a container fails) would otherwise never pull them once the bed has
	// pulled them before, and the reference would never become one of the image's names. Removing
	// an image by a digest reference that is not one of its names deletes the whole image on
	// Podman (Docker would only untag), so dockerbed's cleanup would delete the ~450 MB node
	// image after every test.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, p := range []dockerbed.Pinned{b.Node, b.Tools, b.Proxy} {
		id, err := b.Engine.Pull(ctx, p.Ref)
		if err != nil {
			t.Fatalf("podmanbed: %v", err)
		}
		if id != p.ConfigDigest {
			t.Fatalf("podmanbed: pulled %s: image ID %s, want its config digest %s", p.Ref, id, p.ConfigDigest)
		}
	}
	return b
}

func connect() (*dockerbed.Engine, string, error) {
	host := os.Getenv(HostEnv)
	if host == "" {
		return nil, "", fmt.Errorf("%s is not set", HostEnv)
	}
	u, err := url.Parse(host)
	if err != nil || u.Scheme != "unix" || u.Path == "" {
		return nil, "", fmt.Errorf("%s=%q is not a unix:///path socket address", HostEnv, host)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := locate.Identify(ctx, locate.Endpoint{Socket: u.Path})
	if err != nil {
		return nil, "", fmt.Errorf("Podman service at %s=%q: %w", HostEnv, host, err)
	}
	if id.Kind != engine.Podman {
		return nil, "", fmt.Errorf("%s=%q is not a Podman service: the engine there identifies as %s %s", HostEnv, host, id.Kind.Name(), id.Version)
	}
	api, err := client.NewClientWithOpts(client.WithHost(host), client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, "", fmt.Errorf("docker client for %s=%q: %w", HostEnv, host, err)
	}
	return &dockerbed.Engine{API: api, Host: host, Socket: u.Path}, id.Version, nil
}
