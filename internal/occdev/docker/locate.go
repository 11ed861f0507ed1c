package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Environment variables the docker CLI reads, honoured here the same way.
const (
	EnvHost    = "DOCKER_HOST"
	EnvContext = "DOCKER_CONTEXT"
	EnvConfig  = "DOCKER_CONFIG"
)

// defaultContext is the docker CLI's built-in context: DOCKER_HOST or the default socket. It is
// never stored in the context store.
const defaultContext = "default"

// LocateOptions say where to look. The zero value reads the process environment and the user's
// home directory, as the docker CLI does; tests pass their own.
type LocateOptions struct {
	// Getenv reads an environment variable; nil means os.Getenv.
	Getenv func(string) string
	// Home is the user's home directory, used when DOCKER_CONFIG is unset; empty means
	// os.UserHomeDir.
	Home string
}

// Location is a located engine and the rule that chose it, for messages and summaries.
type Location struct {
	Endpoint Endpoint
	// Source says which rule chose the endpoint: "DOCKER_HOST", a docker context, or the default
	// socket.
	Source string
}

// Locate finds the Docker engine the way docker users expect: DOCKER_HOST when set; otherwise
// the docker context named by DOCKER_CONTEXT or by currentContext in the docker CLI config
// (~/.docker/config.json, or $DOCKER_CONFIG/config.json), resolved through the CLI's context
// store; otherwise the default socket. The result is pinned to a unix socket: any other kind of
// endpoint is refused with the rule and the fix. Locate does not contact the engine (Connect
// does).
func Locate(opts LocateOptions) (Location, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if host := getenv(EnvHost); host != "" {
		ep, err := ParseEndpoint(host, EnvHost)
		return Location{Endpoint: ep, Source: EnvHost}, err
	}
	configDir, err := configDir(getenv, opts.Home)
	if err != nil {
		return Location{}, err
	}
	name, from := getenv(EnvContext), EnvContext
	if name == "" {
		if name, err = currentContext(configDir); err != nil {
			return Location{}, err
		}
		from = "currentContext in " + filepath.Join(configDir, "config.json")
	}
	if name == "" || name == defaultContext {
		return Location{Endpoint: Endpoint{Socket: DefaultSocket}, Source: "the default socket"}, nil
	}
	source := fmt.Sprintf("docker context %q (%s)", name, from)
	host, err := contextHost(configDir, name, source)
	if err != nil {
		return Location{}, err
	}
	ep, err := ParseEndpoint(host, source)
	return Location{Endpoint: ep, Source: source}, err
}

func configDir(getenv func(string) string, home string) (string, error) {
	if dir := getenv(EnvConfig); dir != "" {
		return dir, nil
	}
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("find the docker CLI configuration: %w; set DOCKER_HOST=unix:///path/to/docker.sock", err)
		}
		home = h
	}
	return filepath.Join(home, ".docker"), nil
}

// currentContext reads currentContext from config.json; a missing file means the default
// context, as it does for the docker CLI.
func currentContext(configDir string) (string, error) {
	file := filepath.Join(configDir, "config.json")
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read docker CLI configuration %s: %w", file, err)
	}
	var cfg struct {
		CurrentContext string `json:"currentContext"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return "", fmt.Errorf("docker CLI configuration %s is not valid JSON (%v): fix the file, or set DOCKER_HOST=unix:///path/to/docker.sock", file, err)
	}
	return cfg.CurrentContext, nil
}

// contextMeta is the part of a context's meta.json occ reads.
type contextMeta struct {
	Name      string `json:"Name"`
	Endpoints map[string]struct {
		Host string `json:"Host"`
	} `json:"Endpoints"`
}

// contextHost resolves a named context through the docker CLI's context store, which keeps each
// context in contexts/meta/<sha256 of the name>/meta.json.
func contextHost(configDir, name, source string) (string, error) {
	sum := sha256.Sum256([]byte(name))
	file := filepath.Join(configDir, "contexts", "meta", hex.EncodeToString(sum[:]), "meta.json")
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return "", &EndpointError{Source: source, Value: name, Rule: "does not exist in the docker context store (" + file + " is missing)",
			Fix: "run `docker context ls` and `docker context use NAME` with an existing context, or set DOCKER_HOST"}
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", file, err)
	}
	var meta contextMeta
	if err := json.Unmarshal(data, &meta); err != nil {
		return "", fmt.Errorf("docker context metadata %s is not valid JSON (%v): recreate the context with `docker context create`", file, err)
	}
	if meta.Name != name {
		return "", &EndpointError{Source: source, Value: name, Rule: fmt.Sprintf("resolves to %s, which describes context %q", file, meta.Name),
			Fix: "repair the context store with `docker context rm` and `docker context create`"}
	}
	ep, ok := meta.Endpoints["docker"]
	if !ok || ep.Host == "" {
		return "", &EndpointError{Source: source, Value: name, Rule: "has no docker endpoint host",
			Fix: "recreate it with `docker context create NAME --docker host=unix:///path/to/docker.sock`"}
	}
	return ep.Host, nil
}
