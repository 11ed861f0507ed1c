package docker

import (
	"context"
	"errors"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/occdev/engine"
)

// shortDir is a temporary directory whose socket paths fit the 108-byte unix limit.
func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("/tmp", "occ-dk-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// A laptop where Docker is not started: the error says so and what to start, before any client
// call is attempted.
func TestConnectMissingSocketSaysWhatToStart(t *testing.T) {
	ep := Endpoint{Socket: filepath.Join(t.TempDir(), "docker.sock")}
	_, err := ConnectAs(context.Background(), ep, "the default socket", engine.Docker)
	var nr *NotRunningError
	if !errors.As(err, &nr) {
		t.Fatalf("Connect = %v, want NotRunningError", err)
	}
	for _, w := range []string{ep.String(), "the default socket", "does not exist", "start Docker"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}

// A socket file left behind by a stopped engine: connections are refused, and the error tells
// that apart from a missing socket.
func TestConnectStaleSocket(t *testing.T) {
	sock := filepath.Join(shortDir(t), "d.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	// Keep the file but stop listening: Go removes the file on Close unless told not to.
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	_, err = ConnectAs(context.Background(), Endpoint{Socket: sock}, "DOCKER_HOST", engine.Docker)
	if err == nil || !strings.Contains(err.Error(), "nothing accepts connections") || !strings.Contains(err.Error(), "start Docker") {
		t.Fatalf("Connect = %v, want a refused-connection error with the fix", err)
	}
}

// A socket that answers HTTP but is not a Docker engine (another service, or a broken proxy).
func TestConnectNonDockerServer(t *testing.T) {
	sock := filepath.Join(shortDir(t), "d.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "teapot", http.StatusTeapot)
	}), ReadHeaderTimeout: time.Second}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	_, err = ConnectAs(context.Background(), Endpoint{Socket: sock}, "DOCKER_HOST", engine.Docker)
	if err == nil || !strings.Contains(err.Error(), "did not answer a ping") {
		t.Fatalf("Connect = %v, want a ping failure", err)
	}
}

// A regular file where the socket should be is named for what it is.
func TestConnectNotASocket(t *testing.T) {
	p := filepath.Join(t.TempDir(), "docker.sock")
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ConnectAs(context.Background(), Endpoint{Socket: p}, "DOCKER_HOST", engine.Docker)
	if err == nil || !strings.Contains(err.Error(), "is not a unix socket") {
		t.Fatalf("Connect = %v", err)
	}
}

// NewClient never reads the environment: with DOCKER_HOST pointing elsewhere, the client still
// talks to the recorded endpoint (what `down` relies on).
func TestNewClientIgnoresEnvironment(t *testing.T) {
	t.Setenv("DOCKER_HOST", "tcp://203.0.113.9:2375")
	t.Setenv("DOCKER_CONTEXT", "remote")
	c, err := NewClient(Endpoint{Socket: "/run/recorded.sock"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.DaemonHost(); got != "unix:///run/recorded.sock" {
		t.Fatalf("DaemonHost = %s", got)
	}
	if _, err := NewClient(Endpoint{}); err == nil {
		t.Fatal("NewClient accepted an empty endpoint")
	}
}

// k3d is pointed at exactly the recorded socket, with contexts and TLS settings removed, and a
// developer's shell settings (a DOCKER_HOST naming another engine, a remote context) are back in
// place when the call returns, so nothing after it sees k3d's engine.
func TestPinK3dEnvironment(t *testing.T) {
	got := map[string]string{"DOCKER_HOST": "unix:///var/run/docker.sock", "DOCKER_CONTEXT": "remote", "DOCKER_TLS_VERIFY": "1", "HOME": "/home/u"}
	shell := maps.Clone(got)
	p := &envPin{
		set:    func(k, v string) error { got[k] = v; return nil },
		unset:  func(k string) error { delete(got, k); return nil },
		lookup: func(k string) (string, bool) { v, ok := got[k]; return v, ok },
	}
	ep := Endpoint{Socket: "/tmp/bed/podman.sock"}
	vars := K3dEnvironment(ep, EnvVar{Name: "K3D_IMAGE_TOOLS", Value: "tools@sha256:1"})
	restore, err := p.pin(vars)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"DOCKER_HOST": "unix:///tmp/bed/podman.sock", "DOCKER_SOCK": "/tmp/bed/podman.sock", "K3D_IMAGE_TOOLS": "tools@sha256:1", "HOME": "/home/u"}
	if !maps.Equal(got, want) {
		t.Fatalf("environment = %v, want %v", got, want)
	}
	// A nested pin (the DNS fix of one creation) is undone first, then the outer one.
	inner, err := p.pin([]EnvVar{{Name: "K3D_FIX_DNS", Value: "0"}})
	if err != nil || got["K3D_FIX_DNS"] != "0" {
		t.Fatalf("inner pin = %v, environment %v", err, got)
	}
	inner()
	if !maps.Equal(got, want) {
		t.Fatalf("after the inner restore environment = %v, want %v", got, want)
	}
	restore()
	if !maps.Equal(got, shell) {
		t.Fatalf("after restore environment = %v, want the shell's %v", got, shell)
	}
	// A later setting of the same name wins, whatever the order the caller listed them in.
	restore, err = p.pin(append(vars, EnvVar{Name: "K3D_IMAGE_TOOLS", Value: "tools@sha256:2"}))
	if err != nil || got["K3D_IMAGE_TOOLS"] != "tools@sha256:2" {
		t.Fatalf("override = %v, environment %v", err, got)
	}
	restore()
}
