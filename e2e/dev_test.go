//go:build e2e

// Package e2e holds the opt-in end-to-end tests: the shipped binary against a real Docker host
// with the real pinned images, nothing stood in. `make e2e` runs them (OCC_E2E_DOCKER=1); they
// are never part of `make test`.
package e2e

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
)

// defaultTimeout bounds one whole run (pulling the real images on a slow link included); set
// OCC_E2E_TIMEOUT (a Go duration) to change it.
const defaultTimeout = 20 * time.Minute

// A developer on a real Docker host runs the shipped `occ dev up` with the embedded pins (the
// real k3s, k3d-tools and OpenShell images, the real OpenShell archive and Agent Sandbox
// manifest, all fetched and verified), looks at it with `occ dev status`, and takes it down
// with `occ dev down`: afterwards no container, network or volume of the cluster and no state
// directory is left.
func TestDevUpDownOnDockerHost(t *testing.T) {
	if os.Getenv("OCC_E2E_DOCKER") != "1" {
		t.Fatal("OCC_E2E_DOCKER=1 is not set: run these tests with `OCC_E2E_DOCKER=1 make e2e` on a Docker host with network access to the pinned images")
	}
	bin := os.Getenv("OCC_E2E_BINARY")
	if bin == "" {
		t.Fatal("OCC_E2E_BINARY is not set: `make e2e` builds bin/occ and sets it")
	}
	timeout := defaultTimeout
	if v := os.Getenv("OCC_E2E_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("OCC_E2E_TIMEOUT %q is not a duration", v)
		}
		timeout = d
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	stateDir := filepath.Join(t.TempDir(), "state")
	name := fmt.Sprintf("occ-dev-e2e%d", time.Now().Unix()%1_000_000_000)
	run := func(ctx context.Context, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(os.Environ(), "OCC_DEVELOPMENT_STATE_DIRECTORY="+stateDir)
		// Ctrl-C first, so `up` rolls back; killed only if it does not stop.
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
		cmd.WaitDelay = 3 * time.Minute
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	t.Cleanup(func() {
		if _, err := os.Stat(stateDir); errors.Is(err, fs.ErrNotExist) {
			return
		}
		out, err := run(context.Background(), "dev", "down")
		t.Logf("cleanup: occ dev down: %v\n%s", err, out)
	})

	out, err := run(ctx, "dev", "up", "--cluster-provider", "k3d", "--control-plane", "kubernetes", "--cluster-name", name)
	t.Logf("occ dev up:\n%s", out)
	if ctx.Err() != nil {
		t.Fatalf("occ dev up did not finish within %s (OCC_E2E_TIMEOUT); it was interrupted and rolled back", timeout)
	}
	if err != nil {
		t.Fatalf("occ dev up failed (%v). On a host without access to github.com, ghcr.io and docker.io the pinned archive and images cannot be fetched, and this test cannot pass; the output above names the step and the cause", err)
	}
	out, err = run(ctx, "dev", "status")
	t.Logf("occ dev status:\n%s", out)
	if err != nil || !strings.Contains(out, "k3d cluster:   exists") || strings.Count(out, ": digest matches") != 3 {
		t.Errorf("occ dev status: %v; want the cluster to exist and the three images to match", err)
	}
	out, err = run(ctx, "dev", "down")
	t.Logf("occ dev down:\n%s", out)
	if err != nil {
		t.Fatalf("occ dev down: %v", err)
	}
	assertNothingLeft(ctx, t, stateDir, name)
}

// assertNothingLeft checks what `occ dev down` must leave: no state directory, and nothing the
// engine holds of the cluster (containers and volumes by k3d's label, its network).
func assertNothingLeft(ctx context.Context, t *testing.T, stateDir, name string) {
	t.Helper()
	if _, err := os.Stat(stateDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("state directory %s left after down", stateDir)
	}
	api, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	label := filters.NewArgs(filters.Arg("label", "k3d.cluster="+name))
	cs, err := api.ContainerList(ctx, container.ListOptions{All: true, Filters: label})
	if err != nil || len(cs) > 0 {
		t.Errorf("containers of %s after down: %d (%v)", name, len(cs), err)
	}
	vs, err := api.VolumeList(ctx, volume.ListOptions{Filters: label})
	if err != nil || len(vs.Volumes) > 0 {
		t.Errorf("volumes of %s after down: %d (%v)", name, len(vs.Volumes), err)
	}
	if _, err := api.NetworkInspect(ctx, "k3d-"+name, network.InspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("network k3d-%s after down: %v", name, err)
	}
}
