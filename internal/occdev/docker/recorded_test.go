package docker

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/state"
)

// `occ dev down` or `status` finds the engine `up` recorded gone (its socket removed, or left
// behind by a stopped engine): both use only that recorded engine, so the error says to start
// that engine, naming its socket, and never to point DOCKER_HOST elsewhere, which they ignore.
func TestRecordedEngineGoneSaysStartThatEngine(t *testing.T) {
	missing := Endpoint{Socket: filepath.Join(t.TempDir(), "docker.sock")}
	stale := Endpoint{Socket: filepath.Join(shortDir(t), "stale.sock")}
	l, err := net.Listen("unix", stale.Socket)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	for _, ep := range []Endpoint{missing, stale} {
		_, err := ConnectAs(context.Background(), ep, SourceRecorded, engine.Docker)
		if err == nil {
			t.Fatalf("Connect to %s succeeded", ep)
		}
		msg := err.Error()
		if strings.Contains(msg, "point DOCKER_HOST") || !strings.Contains(msg, "start the Docker engine that occ dev up recorded") || !strings.Contains(msg, ep.Socket) {
			t.Errorf("recorded engine %s: %v", ep, err)
		}
	}
	// Where the engine was located from the environment, pointing DOCKER_HOST elsewhere still helps.
	if _, err := ConnectAs(context.Background(), missing, "DOCKER_HOST", engine.Docker); err == nil || !strings.Contains(err.Error(), "point DOCKER_HOST") {
		t.Errorf("located engine: %v", err)
	}
}

// DOCKER_HOST pasted with a token in its query or userinfo is refused without printing it.
func TestEndpointErrorHidesCredentials(t *testing.T) {
	const canary = "CANARY-docker-host-9f3"
	for _, raw := range []string{"unix:///var/run/docker.sock?token=" + canary, "tcp://u:" + canary + "@10.0.0.5:2376", "unix:///var/run/docker.sock#" + canary} {
		_, err := ParseEndpoint(raw, "DOCKER_HOST")
		if err == nil || strings.Contains(err.Error(), canary) {
			t.Errorf("ParseEndpoint(%q) = %v", raw, err)
		}
	}
}

// A recorded Podman engine that does not answer (its socket removed, or left behind by a
// stopped Podman) is named as Podman, with Podman's start command, and never as Docker.
func TestRecordedPodmanGoneSaysStartPodman(t *testing.T) {
	dir := shortDir(t)
	missing := filepath.Join(dir, "podman.sock")
	stale := filepath.Join(dir, "stale.sock")
	l, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	for _, sock := range []string{missing, stale} {
		_, err := Recorded(&state.Engine{Kind: state.EnginePodman, Endpoint: "unix://" + sock})(context.Background())
		if err == nil {
			t.Fatalf("Recorded Podman at %s answered", sock)
		}
		msg := err.Error()
		for _, want := range []string{"no usable Podman engine at unix://" + sock + " (from the state)", "start the Podman engine that occ dev up recorded, at " + sock,
			"`podman system service --time=0 unix://" + sock + "`"} {
			if !strings.Contains(msg, want) {
				t.Errorf("recorded Podman %s: %q lacks %q", sock, msg, want)
			}
		}
		if strings.Contains(msg, "Docker engine") || strings.Contains(msg, "start Docker") || strings.Contains(msg, "docker group") {
			t.Errorf("recorded Podman %s is worded as Docker: %v", sock, err)
		}
	}
	// A state that predates the kind's record is Docker's, worded as before.
	_, err = Recorded(&state.Engine{Endpoint: "unix://" + missing})(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no usable Docker engine at") || !strings.Contains(err.Error(), "start the Docker engine that occ dev up recorded") {
		t.Errorf("recorded engine without a kind: %v", err)
	}
	if _, err := Recorded(&state.Engine{Kind: state.EnginePodman})(context.Background()); err == nil || err.Error() != "the state records objects in a Podman engine but no engine endpoint" {
		t.Errorf("recorded Podman without an endpoint: %v", err)
	}
}
