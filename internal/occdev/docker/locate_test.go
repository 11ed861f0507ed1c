package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// env is a fake environment for Locate.
type env map[string]string

func (e env) get(k string) string { return e[k] }

// writeContext stores a context the way `docker context create` does: meta.json under the
// sha256 of the name.
func writeContext(t *testing.T, configDir, name, host string) {
	t.Helper()
	sum := sha256.Sum256([]byte(name))
	dir := filepath.Join(configDir, "contexts", "meta", hex.EncodeToString(sum[:]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	meta := `{"Name":"` + name + `","Metadata":{"Description":"test"},"Endpoints":{"docker":{"Host":"` + host + `","SkipTLSVerify":false}}}`
	if err := os.WriteFile(filepath.Join(dir, "meta.json"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeConfig(t *testing.T, configDir, content string) {
	t.Helper()
	if err := os.MkdirAll(configDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(configDir, "config.json"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A docker user's engine is found in the order the docker CLI uses: DOCKER_HOST, then
// DOCKER_CONTEXT, then currentContext of ~/.docker/config.json, then the default socket.
func TestLocateFollowsTheDockerCLIOrder(t *testing.T) {
	home := t.TempDir()
	cfg := filepath.Join(home, ".docker")
	writeConfig(t, cfg, `{"auths":{},"currentContext":"desktop"}`)
	writeContext(t, cfg, "desktop", "unix:///home/u/.docker/desktop/docker.sock")
	writeContext(t, cfg, "colima", "unix:///home/u/.colima/default/docker.sock")
	other := t.TempDir()
	writeConfig(t, other, `{"currentContext":"colima"}`)
	writeContext(t, other, "colima", "unix:///elsewhere/docker.sock")

	cases := []struct {
		name       string
		env        env
		wantSocket string
		wantSource string
	}{
		{"DOCKER_HOST wins over every context", env{EnvHost: "unix:///run/user/1000/docker.sock", EnvContext: "colima"}, "/run/user/1000/docker.sock", "DOCKER_HOST"},
		{"DOCKER_CONTEXT wins over currentContext", env{EnvContext: "colima"}, "/home/u/.colima/default/docker.sock", `docker context "colima" (DOCKER_CONTEXT)`},
		{"currentContext from config.json", env{}, "/home/u/.docker/desktop/docker.sock", `docker context "desktop" (currentContext in ` + filepath.Join(cfg, "config.json") + `)`},
		{"DOCKER_CONFIG moves the configuration", env{EnvConfig: other}, "/elsewhere/docker.sock", `docker context "colima"`},
		{"the default context is the default socket", env{EnvContext: "default"}, DefaultSocket, "the default socket"},
		{"socket paths are cleaned", env{EnvHost: "unix:///var/run//docker.sock"}, "/var/run/docker.sock", "DOCKER_HOST"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			loc, err := Locate(LocateOptions{Getenv: c.env.get, Home: home})
			if err != nil {
				t.Fatalf("Locate: %v", err)
			}
			if loc.Endpoint.Socket != c.wantSocket || !strings.HasPrefix(loc.Source, c.wantSource) {
				t.Fatalf("Locate = %+v, want socket %s from %s", loc, c.wantSocket, c.wantSource)
			}
			if loc.Endpoint.String() != "unix://"+c.wantSocket {
				t.Fatalf("String() = %s", loc.Endpoint)
			}
		})
	}
}

// A machine without any docker CLI configuration uses the default socket.
func TestLocateWithoutConfigurationUsesDefaultSocket(t *testing.T) {
	loc, err := Locate(LocateOptions{Getenv: env{}.get, Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if loc.Endpoint.Socket != DefaultSocket || loc.Source != "the default socket" {
		t.Fatalf("Locate = %+v", loc)
	}
}

// Remote engines (tcp, ssh), relative sockets and broken context stores are refused before
// anything is created, naming where the value came from, the rule and the fix.
func TestLocateRefusesNonUnixEndpoints(t *testing.T) {
	home := t.TempDir()
	cfg := filepath.Join(home, ".docker")
	writeConfig(t, cfg, `{"currentContext":"remote"}`)
	writeContext(t, cfg, "remote", "ssh://builder@10.0.0.5")
	writeContext(t, cfg, "mislabelled", "unix:///x.sock")
	// A context whose meta.json names another context: the store is corrupt.
	sum := sha256.Sum256([]byte("mislabelled"))
	if err := os.WriteFile(filepath.Join(cfg, "contexts", "meta", hex.EncodeToString(sum[:]), "meta.json"), []byte(`{"Name":"other","Endpoints":{"docker":{"Host":"unix:///x.sock"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	broken := t.TempDir()
	writeConfig(t, broken, `{"currentContext":`)

	cases := []struct {
		name string
		env  env
		want []string
	}{
		{"tcp DOCKER_HOST", env{EnvHost: "tcp://192.168.1.20:2376"}, []string{"DOCKER_HOST", "tcp://192.168.1.20:2376", "not a local unix socket", "unset DOCKER_HOST"}},
		{"ssh context", env{}, []string{`docker context "remote"`, "ssh://REDACTED@10.0.0.5", "not a local unix socket"}},
		{"relative unix socket", env{EnvHost: "unix://docker.sock"}, []string{"DOCKER_HOST", "absolute socket path"}},
		{"missing context", env{EnvContext: "gone"}, []string{`docker context "gone"`, "does not exist", "docker context ls"}},
		{"corrupt context store", env{EnvContext: "mislabelled"}, []string{"describes context \"other\""}},
		{"broken config.json", env{EnvConfig: broken}, []string{"config.json", "not valid JSON", "DOCKER_HOST"}},
		{"npipe", env{EnvHost: "npipe:////./pipe/docker_engine"}, []string{"npipe", "not a local unix socket"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			loc, err := Locate(LocateOptions{Getenv: c.env.get, Home: home})
			if err == nil {
				t.Fatalf("Locate accepted %+v", loc)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// The state records an endpoint as a string; down parses it back with the same rule and refuses
// anything that is not a unix socket, so a tampered state cannot point down at a remote engine.
func TestParseEndpointRoundTripAndRefusals(t *testing.T) {
	ep, err := ParseEndpoint("unix:///var/run/docker.sock", "state")
	if err != nil || ep.Socket != "/var/run/docker.sock" {
		t.Fatalf("ParseEndpoint = %+v, %v", ep, err)
	}
	back, err := ParseEndpoint(ep.String(), "state")
	if err != nil || back != ep {
		t.Fatalf("round trip = %+v, %v", back, err)
	}
	for _, raw := range []string{"", "tcp://127.0.0.1:2375", "unix://", "unix:///s?x=1", "http://localhost", "/var/run/docker.sock", "unix://user:secret@/x"} {
		_, err := ParseEndpoint(raw, "state")
		var ee *EndpointError
		if !errors.As(err, &ee) {
			t.Errorf("ParseEndpoint(%q) = %v, want an EndpointError", raw, err)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("ParseEndpoint(%q) error shows a password: %v", raw, err)
		}
		if !strings.Contains(err.Error(), "from state") {
			t.Errorf("ParseEndpoint(%q) error %q does not name its source", raw, err)
		}
	}
}
