package docker

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
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
		_, err := Connect(context.Background(), ep, SourceRecorded)
		if err == nil {
			t.Fatalf("Connect to %s succeeded", ep)
		}
		msg := err.Error()
		if strings.Contains(msg, "point DOCKER_HOST") || !strings.Contains(msg, "start the Docker engine that occ dev up recorded") || !strings.Contains(msg, ep.Socket) {
			t.Errorf("recorded engine %s: %v", ep, err)
		}
	}
	// Where the engine was located from the environment, pointing DOCKER_HOST elsewhere still helps.
	if _, err := Connect(context.Background(), missing, "DOCKER_HOST"); err == nil || !strings.Contains(err.Error(), "point DOCKER_HOST") {
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
