package locate_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/engine/locate"
	"github.com/openclaw/occ/internal/testbed/dockerbed"
	"github.com/openclaw/occ/internal/testbed/podmanbed"
)

// A machine with the bed's real engines, the private dockerd and the private Podman service:
// with both running, auto takes Docker; with only Podman where a Podman user has it (the
// rootful socket) and no Docker socket, auto takes Podman; a Podman behind DOCKER_HOST is
// reported as Podman, and --engine docker refuses it. Each engine is identified by what its own
// version endpoint says.
func TestFindTheBedsRealEngines(t *testing.T) {
	docker := dockerbed.Require(t)
	podman := podmanbed.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir, err := os.MkdirTemp("", "locbed")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	env := func(v map[string]string) locate.Env {
		return locate.Env{
			Getenv:     func(k string) string { return v[k] },
			Home:       filepath.Join(dir, "home"),
			GOOS:       "linux",
			UID:        func() int { return 0 },
			SystemRoot: filepath.Join(dir, "sys"),
		}
	}

	// Both run: Docker first.
	both := env(map[string]string{locate.EnvDockerHost: docker.Host, locate.EnvContainerHost: podman.Host})
	loc, err := locate.Find(ctx, locate.Options{Env: both})
	if err != nil || loc.Kind != engine.Docker || loc.Endpoint.String() != docker.Host || loc.Source != locate.EnvDockerHost {
		t.Fatalf("both running, auto: %+v %v; want Docker at %s", loc, err, docker.Host)
	}
	sv, err := docker.API.ServerVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if loc.Version != sv.Version || loc.APIVersion != sv.APIVersion {
		t.Errorf("Docker identified as %s (API %s), the engine says %s (API %s)", loc.Version, loc.APIVersion, sv.Version, sv.APIVersion)
	}
	t.Logf("both running, auto: %s", loc)
	if loc, err := locate.Find(ctx, locate.Options{Choice: locate.ChoosePodman, Env: both}); err != nil || loc.Kind != engine.Podman || loc.Endpoint.String() != podman.Host {
		t.Errorf("both running, --engine podman: %+v %v", loc, err)
	}

	// Only Podman, at the rootful socket (a link to the bed's service), and no Docker socket.
	rootful := filepath.Join(dir, "sys", locate.RootfulPodmanSocket)
	if err := os.MkdirAll(filepath.Dir(rootful), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(podman.Socket, rootful); err != nil {
		t.Fatal(err)
	}
	loc, err = locate.Find(ctx, locate.Options{Env: env(nil)})
	if err != nil || loc.Kind != engine.Podman || loc.Endpoint.Socket != rootful || loc.Source != "the rootful Podman socket" || loc.Version != "4.3.1" {
		t.Fatalf("only Podman, auto: %+v %v", loc, err)
	}
	if len(loc.Skipped) != 1 || loc.Skipped[0].Kind != engine.Docker || !strings.Contains(loc.Skipped[0].Reason, "does not exist") {
		t.Errorf("only Podman, auto: skipped %+v, want Docker's missing socket", loc.Skipped)
	}
	t.Logf("only Podman, auto: %s (after %s)", loc, loc.Skipped[0])

	// Podman behind DOCKER_HOST.
	behind := env(map[string]string{locate.EnvDockerHost: podman.Host})
	loc, err = locate.Find(ctx, locate.Options{Env: behind})
	if err != nil || loc.Kind != engine.Podman || loc.Source != locate.EnvDockerHost || loc.Endpoint.String() != podman.Host {
		t.Fatalf("DOCKER_HOST at Podman, auto: %+v %v; want Podman from DOCKER_HOST", loc, err)
	}
	_, err = locate.Find(ctx, locate.Options{Choice: locate.ChooseDocker, Env: behind})
	var ke *locate.KindError
	if !errors.As(err, &ke) || !strings.Contains(err.Error(), "is Podman 4.3.1, not Docker") {
		t.Fatalf("DOCKER_HOST at Podman, --engine docker: %v; want a KindError", err)
	}
	t.Logf("DOCKER_HOST at Podman, --engine docker: %v", err)
}
