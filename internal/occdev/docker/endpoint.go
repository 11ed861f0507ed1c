// Package docker is how `occ dev` reaches its container engine, Docker or Podman, once package
// engine/locate has found it: it connects to a pinned local unix socket, checks that it answers
// before anything is created, and builds API clients from a recorded Endpoint only, so `occ dev
// down` never consults the environment it happens to run in.
//
// API (api.go) is the one interface through which the rest of occ drives the engine: the Docker
// client, behind the wrapper the engine's kind registered (package engine; Podman's answers where
// Podman differs the way Docker does). The interface and the wrappers sit in engineapi, below the
// kinds' registrations that name them. This package and engineapi are the only ones of the
// product that import the engine client (internal/repocheck holds it so); the API's request and
// response types, from github.com/docker/docker/api/types, carry no connection and are used
// everywhere.
//
// k3d's Docker runtime cannot be handed a client: it reads DOCKER_HOST and DOCKER_SOCK from the
// process environment on every call. PinK3dEnvironment (k3denv.go) is the one place that points
// it at a recorded Endpoint.
package docker

import (
	"fmt"
	"strings"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/occdev/engine/locate"
	"github.com/openclaw/occ/internal/occdev/option"
)

// Endpoint is an engine address occ has pinned (locate.Endpoint): always a unix socket given by
// its absolute path. It is what the state records, in its String form (unix:///path).
type Endpoint = locate.Endpoint

// EndpointError is an engine address occ refuses. Nothing has been created when it is returned.
type EndpointError struct {
	// Source says where the address came from ("DOCKER_HOST", "docker context \"x\"", "state").
	Source string
	Value  string
	Rule   string
	Fix    string
}

func (e *EndpointError) Error() string {
	msg := fmt.Sprintf("Docker endpoint %q (from %s) %s", e.Value, e.Source, e.Rule)
	if e.Fix != "" {
		msg += ": " + e.Fix
	}
	return msg
}

// Unwrap is the bad setting behind e: the engine's address comes from the user's environment
// (or the record it wrote), so the CLI reports e as it reports every bad setting.
func (e *EndpointError) Unwrap() error {
	return &option.Error{Option: e.Source, Value: e.Value, Rule: e.Rule, Fix: e.Fix}
}

const unixFix = "unset DOCKER_HOST (and DOCKER_CONTEXT) to use " + locate.DefaultDockerSocket + ", set DOCKER_HOST=unix:///path/to/docker.sock, or run `docker context use` with a context whose host is a unix:// socket"

// ParseEndpoint accepts "unix:///absolute/path" (the form DOCKER_HOST, docker contexts and the
// state use) and refuses every other scheme, naming source in the error.
func ParseEndpoint(raw, source string) (Endpoint, error) {
	bad := func(rule, fix string) (Endpoint, error) {
		return Endpoint{}, &EndpointError{Source: source, Value: redact(raw), Rule: rule, Fix: fix}
	}
	ep, rule := locate.ParseUnix(raw)
	switch {
	case rule == "":
		return ep, nil
	case strings.HasPrefix(rule, "must name an absolute"):
		return bad(rule, "write the socket path with three slashes after unix:")
	case strings.HasPrefix(rule, "must be a plain"):
		return bad(rule, "remove everything but unix:///path")
	}
	return bad(rule, unixFix)
}

// redact hides every part of an address that may carry a credential (userinfo, query,
// fragment, percent-encoding) with the one rule occ uses for every endpoint it shows.
func redact(raw string) string { return contract.RedactURL(raw) }
