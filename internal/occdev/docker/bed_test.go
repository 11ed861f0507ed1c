package docker_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/engine/locate"
	"github.com/openclaw/occ/internal/testbed/dockerbed"
)

// `occ dev up` on a machine whose engine is the bed's private default dockerd (a current Docker
// Engine): Locate follows DOCKER_HOST to its unix socket, Connect pings it and reports the engine, and a
// client built from the recorded endpoint alone still reaches it when the shell's DOCKER_HOST
// later points elsewhere (what `occ dev down` relies on).
func TestConnectToARealEngine(t *testing.T) {
	bed := dockerbed.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ep, source, err := locate.DockerPlace(locate.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if source != locate.EnvDockerHost || ep.Socket != bed.Socket {
		t.Fatalf("DockerPlace = %s from %s, want %s from DOCKER_HOST", ep, source, bed.Socket)
	}
	eng, err := docker.ConnectAs(ctx, ep, source, engine.Docker)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	if eng.Identity.Version == "" || eng.Identity.APIVersion == "" {
		t.Fatalf("engine version %q API %q", eng.Identity.Version, eng.Identity.APIVersion)
	}
	t.Logf("engine %s, API %s", eng.Identity.Version, eng.Identity.APIVersion)

	recorded := ep.String()
	t.Setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
	fromState, err := docker.ParseEndpoint(recorded, "the state")
	if err != nil {
		t.Fatal(err)
	}
	api, err := docker.NewClient(fromState)
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	if _, err := api.Ping(ctx); err != nil {
		t.Fatalf("the recorded endpoint's client does not reach the engine: %v", err)
	}
}

// `occ dev up` on a laptop that still runs Debian's or Ubuntu's docker.io 20.10 (API 1.41): the
// client negotiates down to the engine's API and Connect reports the old engine as it is, so the
// checks that refuse it can name its version.
func TestConnectToALegacyEngine(t *testing.T) {
	legacy := dockerbed.RequireLegacy(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ep, err := docker.ParseEndpoint(legacy.Host, dockerbed.LegacyHostEnv)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := docker.ConnectAs(ctx, ep, dockerbed.LegacyHostEnv, engine.Docker)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	if !strings.HasPrefix(eng.Identity.Version, "20.10.") || eng.Identity.APIVersion != "1.41" {
		t.Fatalf("the legacy engine reports Docker %q API %q, want 20.10 with API 1.41", eng.Identity.Version, eng.Identity.APIVersion)
	}
	if _, err := eng.API.ContainerList(ctx, container.ListOptions{}); err != nil {
		t.Fatalf("a call at the negotiated API version fails: %v", err)
	}
}

// Exec reports a command's output and exit code through the engine's exec API; a failing
// command is a result, not an error, so callers can quote its stderr.
func TestExec(t *testing.T) {
	bed := dockerbed.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	spec, err := dockerbed.BusyboxImage()
	if err != nil {
		t.Fatal(err)
	}
	img, err := bed.EnsureImage(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	name := dockerbed.UniqueName(t, "occ-exec")
	created, err := bed.API.ContainerCreate(ctx, &container.Config{Image: img.Tag, Cmd: []string{"sleep", "600"}}, nil, nil, nil, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = bed.API.ContainerRemove(context.Background(), created.ID, container.RemoveOptions{Force: true})
	})
	if err := bed.API.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	eng := (&docker.Engine{API: bed.API, Identity: engine.Identity{Kind: engine.Docker}}).Verbs()
	res, err := eng.Exec(ctx, name, engine.ExecInput{}, "sh", "-c", "echo out; echo err >&2; exit 3")
	if err != nil {
		t.Fatal(err)
	}
	if res.Stdout != "out\n" || res.Stderr != "err\n" || res.ExitCode != 3 {
		t.Fatalf("Exec = %+v", res)
	}
	if _, err := eng.Exec(ctx, "occ-no-such-container-x", engine.ExecInput{}, "true"); err == nil || !strings.Contains(err.Error(), "occ-no-such-container-x") {
		t.Fatalf("Exec in a missing container = %v", err)
	}

	// The input ends where the reader ends: `wc -c` only prints once its input is closed, so
	// an input that is never closed hangs here (until the context's deadline fails the test).
	payload := bytes.Repeat([]byte("occ-input "), 400_000)
	res, err = eng.Exec(ctx, name, engine.ExecInput{Stdin: bytes.NewReader(payload), Env: []string{"OCC_EXEC_TEST=set"}},
		"sh", "-c", `wc -c; echo "$OCC_EXEC_TEST" >&2`)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(res.Stdout) != strconv.Itoa(len(payload)) || res.Stderr != "set\n" || res.ExitCode != 0 {
		t.Fatalf("Exec(wc -c) with input of %d bytes = %+v", len(payload), res)
	}
	// A command that stops reading and fails is its exit code and output, not a write error.
	res, err = eng.Exec(ctx, name, engine.ExecInput{Stdin: bytes.NewReader(payload)},
		"sh", "-c", "head -c 4 >/dev/null; echo refused >&2; exit 5")
	if err != nil || res.ExitCode != 5 || res.Stderr != "refused\n" {
		t.Fatalf("Exec with input of a command that stops reading = %+v, %v; want exit 5 and its stderr", res, err)
	}
	// A cancelled context ends a command that waits for more input than it gets.
	cctx, ccancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() {
		_, _ = pw.Write([]byte("first bytes"))
		ccancel()
	}()
	if _, err := eng.Exec(cctx, name, engine.ExecInput{Stdin: pr}, "cat"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Exec cancelled while its input is open = %v, want the cancellation", err)
	}
}
