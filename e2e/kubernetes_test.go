//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/controlplane"
)

// A developer on a real Docker host runs the shipped `occ dev up --control-plane kubernetes`
// in a real OCE checkout (OCC_E2E_OCE_CHECKOUT): the controller and Agent runtime are built from
// it with the real Dockerfiles, PostgreSQL and the OpenShell images are pulled by their pinned
// digests, and the whole stack runs in the k3d cluster with a real kubelet: the key is read
// through a real exec in the reader Pod, verified through the real API proxy on loopback, and
// the real worker provisions the bootstrap Namespace. The test then asks the live API itself
// with the written key, looks at `occ dev status`, and takes everything down: no container,
// network or volume of the cluster and no state directory is left, and no Compose ran.
func TestKubernetesStackOnDockerHost(t *testing.T) {
	if os.Getenv("OCC_E2E_DOCKER") != "1" {
		t.Fatal("OCC_E2E_DOCKER=1 is not set: run these tests with `OCC_E2E_DOCKER=1 make e2e` on a Docker host with network access to the pinned images")
	}
	checkout := os.Getenv("OCC_E2E_OCE_CHECKOUT")
	if checkout == "" {
		t.Fatal("OCC_E2E_OCE_CHECKOUT is not set: the whole Kubernetes-only stack needs a real OpenClaw Enterprise checkout; set OCC_E2E_OCE_CHECKOUT=<path> (its Dockerfiles, chart and scripts are what runs), or run only the platform test with `OCC_E2E_DOCKER=1 make e2e E2E_RUN=TestDevUpDownOnDockerHost`")
	}
	bin := os.Getenv("OCC_E2E_BINARY")
	if bin == "" {
		t.Fatal("OCC_E2E_BINARY is not set: `make e2e` builds bin/occ and sets it")
	}
	timeout := 40 * time.Minute // the real controller and runtime builds come first
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
	name := fmt.Sprintf("occ-dev-k8s%d", time.Now().Unix()%1_000_000_000)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	// A docker compose plugin that only leaves a mark: the profile must never run Compose.
	home := t.TempDir()
	mark := filepath.Join(t.TempDir(), "compose-was-called")
	plugin := filepath.Join(home, ".docker", "cli-plugins", "docker-compose")
	if err := os.MkdirAll(filepath.Dir(plugin), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plugin, []byte("#!/bin/sh\necho \"$@\" >> "+mark+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(ctx context.Context, args ...string) (string, string, error) {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(os.Environ(), "OCC_DEVELOPMENT_STATE_DIRECTORY="+stateDir, "DOCKER_CONFIG="+filepath.Join(home, ".docker"), fmt.Sprintf("OPENCLAW_DEV_PORT=%d", port))
		cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
		cmd.WaitDelay = 3 * time.Minute
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	t.Cleanup(func() {
		if _, err := os.Stat(stateDir); errors.Is(err, fs.ErrNotExist) {
			return
		}
		out, errOut, err := run(context.Background(), "dev", "down")
		t.Logf("cleanup: occ dev down: %v\n%s%s", err, out, errOut)
	})

	out, errOut, err := run(ctx, "dev", "up", "--cluster-provider", "k3d", "--control-plane", "kubernetes", "--cluster-name", name,
		"--repository", checkout, "-o", "json")
	t.Logf("occ dev up (progress):\n%s", errOut)
	if ctx.Err() != nil {
		t.Fatalf("occ dev up did not finish within %s (OCC_E2E_TIMEOUT); it was interrupted and rolled back", timeout)
	}
	if err != nil {
		t.Fatalf("occ dev up failed (%v); the progress above names the step and the cause", err)
	}
	var sum occdev.Summary
	if err := json.Unmarshal([]byte(out), &sum); err != nil || sum.OCE == nil {
		t.Fatalf("the summary is not the stack's (%v):\n%s", err, out)
	}
	t.Logf("summary: %+v, OCE %+v", sum, *sum.OCE)
	if sum.OCE.APIURL != fmt.Sprintf("http://127.0.0.1:%d", port) || sum.OCE.InstallationID == "" {
		t.Errorf("summary: %+v", sum.OCE)
	}

	// The key works against the live API, through the proxy k3d publishes on loopback.
	data, err := os.ReadFile(sum.OCE.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	key, err := controlplane.ParseServiceKey(data)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := controlplane.VerifyServiceKey(ctx, key, controlplane.VerifyKeyOptions{APIURL: sum.OCE.APIURL})
	if err != nil || inst.ID != sum.OCE.InstallationID {
		t.Errorf("GET /installation with the written key: %+v, %v", inst, err)
	}
	for _, f := range []string{sum.OCE.KeyFile, sum.OCE.PasswordFile} {
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, %v; want 0600", f, fi, err)
		}
	}

	out, errOut, err = run(ctx, "dev", "status")
	t.Logf("occ dev status:\n%s%s", out, errOut)
	if err != nil || !strings.Contains(out, "k3d cluster:   exists") || !strings.Contains(out, "openclaw-enterprise") {
		t.Errorf("occ dev status: %v; want the cluster and the OCE release present", err)
	}

	out, errOut, err = run(ctx, "dev", "down")
	t.Logf("occ dev down:\n%s%s", out, errOut)
	if err != nil {
		t.Fatalf("occ dev down: %v", err)
	}
	assertNothingLeft(ctx, t, stateDir, name)
	if _, err := os.Stat(mark); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the Kubernetes-only profile ran docker compose")
	}
}
