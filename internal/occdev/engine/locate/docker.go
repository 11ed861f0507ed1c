package locate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/option"
)

// The variables the docker CLI reads to find its engine, honoured here the same way.
const (
	EnvDockerHost    = "DOCKER_HOST"
	EnvDockerContext = "DOCKER_CONTEXT"
	EnvDockerConfig  = "DOCKER_CONFIG"
)

// DefaultDockerSocket is where Docker listens when nothing else is configured (Docker Desktop
// links it to its own socket when allowed to).
const DefaultDockerSocket = "/var/run/docker.sock"

// place is one place an engine may be listening, and what to start when none is there.
type place struct {
	// kind is the engine users expect at the place (the engine found there may differ).
	kind engine.Kind
	// source says which setting or rule names the place, for messages and summaries.
	source string
	// sockets are the paths the engine may listen on, in order; the first that exists is used
	// (a Podman machine's forwarded socket moved between Podman releases).
	sockets []string
	// start is what the user runs to start the engine the place expects.
	start string
	// problem, when set, is why the place cannot be used at all (a remote connection, a
	// configuration that does not resolve); sockets is then empty.
	problem string
}

// dockerPlace finds the Docker engine the way docker users expect: DOCKER_HOST when set;
// otherwise the docker context named by DOCKER_CONTEXT or by currentContext in the docker CLI
// configuration (~/.docker/config.json, or $DOCKER_CONFIG/config.json), resolved through the
// CLI's context store; otherwise the default socket. A bad DOCKER_HOST or DOCKER_CONTEXT is the
// user's setting and an error; a configuration file that does not resolve is a problem of the
// place, so `auto` can still go on to Podman.
func dockerPlace(env Env) (place, error) {
	if host := env.getenv(EnvDockerHost); host != "" {
		ep, rule := ParseUnix(host)
		if rule != "" {
			return place{}, &option.Error{Option: EnvDockerHost, Value: redact(host), Rule: rule,
				Fix: "set DOCKER_HOST=unix:///path/to/docker.sock, or unset it to use the docker context or " + DefaultDockerSocket}
		}
		return place{kind: engine.Docker, source: EnvDockerHost, sockets: []string{ep.Socket},
			start: "start the engine DOCKER_HOST names, or unset DOCKER_HOST"}, nil
	}
	configDir, err := dockerConfigDir(env)
	if err != nil {
		return place{}, err
	}
	configFile := filepath.Join(configDir, "config.json")
	name, from := env.getenv(EnvDockerContext), EnvDockerContext
	if name == "" {
		from = "currentContext in " + configFile
		if name, err = currentContext(configFile); err != nil {
			return place{kind: engine.Docker, source: "the docker CLI configuration", problem: err.Error()}, nil
		}
	}
	if name == "" || name == "default" {
		return place{kind: engine.Docker, source: "the default Docker socket", sockets: []string{env.system(DefaultDockerSocket)},
			start: dockerStart(env)}, nil
	}
	source := fmt.Sprintf("docker context %q (%s)", name, from)
	host, problem := contextHost(configDir, name)
	if problem == "" {
		var ep Endpoint
		if ep, problem = ParseUnix(host); problem == "" {
			return place{kind: engine.Docker, source: source, sockets: []string{ep.Socket},
				start: fmt.Sprintf("start the engine of docker context %q, or choose another with `docker context use`", name)}, nil
		}
		problem = fmt.Sprintf("has host %q, which %s", redact(host), problem)
	}
	if from == EnvDockerContext {
		return place{}, &option.Error{Option: EnvDockerContext, Value: name, Rule: problem,
			Fix: "name a context from `docker context ls` whose host is a unix:// socket, or unset DOCKER_CONTEXT"}
	}
	return place{kind: engine.Docker, source: source, problem: problem + "; choose another context with `docker context use`"}, nil
}

func dockerStart(env Env) string {
	if env.goos() == "darwin" {
		return "start Docker Desktop"
	}
	return "start Docker with `sudo systemctl start docker` (or start Docker Desktop)"
}

func dockerConfigDir(env Env) (string, error) {
	if dir := env.getenv(EnvDockerConfig); dir != "" {
		return dir, nil
	}
	home, err := env.home()
	if err != nil {
		return "", fmt.Errorf("find the docker CLI configuration: %w; set DOCKER_HOST=unix:///path/to/docker.sock", err)
	}
	return filepath.Join(home, ".docker"), nil
}

// currentContext reads currentContext from config.json; a missing file means the default
// context, as it does for the docker CLI.
func currentContext(file string) (string, error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", file, err)
	}
	var cfg struct {
		CurrentContext string `json:"currentContext"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return "", fmt.Errorf("%s is not valid JSON (%v); fix the file, or set DOCKER_HOST", file, err)
	}
	return cfg.CurrentContext, nil
}

// contextHost resolves a named context through the docker CLI's context store, which keeps each
// context in contexts/meta/<sha256 of the name>/meta.json. It returns the context's docker
// endpoint host, or the problem that stops it.
func contextHost(configDir, name string) (host, problem string) {
	sum := sha256.Sum256([]byte(name))
	file := filepath.Join(configDir, "contexts", "meta", hex.EncodeToString(sum[:]), "meta.json")
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "does not exist in the docker context store (" + file + " is missing)"
	}
	if err != nil {
		return "", fmt.Sprintf("cannot be read (%v)", err)
	}
	var meta struct {
		Name      string `json:"Name"`
		Endpoints map[string]struct {
			Host string `json:"Host"`
		} `json:"Endpoints"`
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		return "", fmt.Sprintf("has metadata %s that is not valid JSON (%v)", file, err)
	}
	if meta.Name != name {
		return "", fmt.Sprintf("resolves to %s, which describes context %q", file, meta.Name)
	}
	ep, ok := meta.Endpoints["docker"]
	if !ok || ep.Host == "" {
		return "", "has no docker endpoint host"
	}
	return ep.Host, ""
}

// DockerPlace is where Docker users expect their engine, found by the same rules as Find's
// Docker place but without contacting it: the socket DOCKER_HOST, the docker context or the
// default names, and which rule chose it. A place that cannot be used (a context that does not
// resolve, a remote host) is an error that names it and says why.
func DockerPlace(env Env) (Endpoint, string, error) {
	p, err := dockerPlace(env)
	if err != nil {
		return Endpoint{}, "", err
	}
	if p.problem != "" {
		return Endpoint{}, p.source, fmt.Errorf("%s %s; %s", p.source, p.problem, problemFix(p.kind))
	}
	return Endpoint{Socket: firstExisting(p.sockets)}, p.source, nil
}
