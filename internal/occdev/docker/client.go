package docker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/client"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/engine/locate"
)

// pingTimeout bounds the reachability check: a socket that accepts but never answers must not
// hang `occ dev up` before it has even started.
const pingTimeout = 15 * time.Second

// Engine is a container engine that answered a ping at a pinned Endpoint.
type Engine struct {
	Endpoint Endpoint
	// Identity is what the engine said it is when occ connected: its Kind, by its version
	// components (engine.Recognise; Podman serving the Docker-compatible API names a "Podman
	// Engine" component), its Version and its APIVersion. The facts of its system info (ID,
	// Store, Platform, Host) are Verbs().Identify's, which asks for them.
	Identity engine.Identity
	// API reaches that endpoint only, with the API version negotiated down to the engine's: the
	// Docker client, behind the wrapper its kind registered (Podman's), if any. occ's own logic
	// (images, exec, builds, Compose's and k3d's reads, watches and removals) drives the engine
	// through Verbs, which reads API when called; nothing outside this package calls API (the
	// k3d library and the `docker compose` plugin reach Endpoint with clients of their own). An
	// offline run wraps it (Offline), so Verbs refuse pulls too.
	API API
}

// Name is the engine as people write it ("Docker", "Podman").
func (e *Engine) Name() string { return e.Identity.Kind.Name() }

// Registration is what occ knows of the engine's kind.
func (e *Engine) Registration() engine.Registration { return e.Identity.Kind.Registration() }

// Close releases the client's connections.
func (e *Engine) Close() error { return e.API.Close() }

// NewClient returns an API client of ep and nothing else: it never reads DOCKER_HOST, contexts
// or TLS settings from the environment, so a recorded endpoint is reached the same way whatever
// the shell that runs `occ dev down` says. The API version is negotiated on first use, so engines
// as old as 20.10 (API 1.41) work.
func NewClient(ep Endpoint) (*client.Client, error) {
	if ep.IsZero() {
		return nil, errors.New("create Docker client: no endpoint (the state records none; was the engine located?)")
	}
	c, err := client.NewClientWithOpts(client.WithHost(ep.String()), client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("create Docker client for %s: %w", ep, err)
	}
	return c, nil
}

// NotRunningError says the engine at an endpoint cannot be used, and what to start or fix.
type NotRunningError struct {
	// Kind is the engine expected at Endpoint; empty means Docker.
	Kind     engine.Kind
	Endpoint Endpoint
	Source   string
	Reason   string
	Fix      string
	Err      error
}

func (e *NotRunningError) Error() string {
	return fmt.Sprintf("no usable %s engine at %s (from %s): %s; %s", e.Kind.Name(), e.Endpoint, e.Source, e.Reason, e.Fix)
}

func (e *NotRunningError) Unwrap() error { return e.Err }

const startFix = "start Docker (Docker Desktop, `sudo systemctl start docker`, or `dockerd`) or point DOCKER_HOST at a running engine's unix socket, then retry"

// SourceRecorded is the source of the endpoint `up` recorded in the state, the only engine
// `down` and `status` use.
const SourceRecorded = "the state"

// startFixFor is what to start for an engine from source: the environment's engine can be
// replaced by pointing DOCKER_HOST elsewhere, the recorded one cannot (down and status never
// read DOCKER_HOST), so for it the advice is to start that very engine.
func startFixFor(kind engine.Kind, ep Endpoint, source string) string {
	if kind.Registration().PodmanSocket {
		start := locate.PodmanStart(locate.Env{}, ep.Socket)
		if source == SourceRecorded {
			return "start the Podman engine that occ dev up recorded, at " + ep.Socket + " (" + start + "; down and status use only that engine, never DOCKER_HOST, CONTAINER_HOST or a Podman connection), then retry"
		}
		return start + ", or point CONTAINER_HOST at a running Podman's unix socket, then retry"
	}
	if source == SourceRecorded {
		return "start the Docker engine that occ dev up recorded, at " + ep.Socket + " (down and status use only that engine, never DOCKER_HOST or the docker context), then retry"
	}
	return startFix
}

// ConnectAs checks that an engine of kind (the located or recorded one; empty means Docker)
// answers at ep before anything is created, and returns a client of it. source names where ep
// came from ("DOCKER_HOST", a docker context, "the state") so the error can say which setting to
// change. A missing socket, a socket the user may not open, and an engine that does not answer
// are told apart, each with its fix, naming that engine and what starts it. The Engine's kind is
// what the engine says it is, which the caller compares with what it expects where that matters
// (checkSame).
func ConnectAs(ctx context.Context, ep Endpoint, source string, kind engine.Kind) (*Engine, error) {
	fail := func(reason, fix string, err error) (*Engine, error) {
		return nil, &NotRunningError{Kind: kind, Endpoint: ep, Source: source, Reason: reason, Fix: fix, Err: err}
	}
	if err := CheckSocketAs(ep, source, kind); err != nil {
		return nil, err
	}
	// The API client reports every dial failure as "cannot connect"; a dial of our own tells a
	// stale socket and a forbidden one apart, which need different fixes.
	var d net.Dialer
	dctx, dcancel := context.WithTimeout(ctx, pingTimeout)
	conn, err := d.DialContext(dctx, "unix", ep.Socket)
	dcancel()
	switch {
	case err == nil:
		conn.Close()
	case ctx.Err() != nil:
		return nil, fmt.Errorf("connect to the %s engine at %s: %w", kind.Name(), ep, ctx.Err())
	case errors.Is(err, syscall.EACCES) || errors.Is(err, fs.ErrPermission):
		return fail("permission denied opening the socket", permissionFixFor(kind), err)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fail("nothing accepts connections on the socket (a stale socket of a stopped engine)", startFixFor(kind, ep, source), err)
	default:
		return fail("the socket cannot be connected to: "+err.Error(), startFixFor(kind, ep, source), err)
	}
	api, err := NewClient(ep)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	ping, err := api.Ping(pctx)
	if err == nil {
		var sv types.Version
		if sv, err = api.ServerVersion(pctx); err == nil {
			apiVersion := sv.APIVersion
			if apiVersion == "" {
				apiVersion = ping.APIVersion
			}
			return opened(ep, api, sv, apiVersion), nil
		}
	}
	api.Close()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("connect to the %s engine at %s: %w", kind.Name(), ep, ctx.Err())
	}
	return fail("the engine did not answer a ping: "+err.Error(), startFixFor(kind, ep, source), err)
}

// CheckSocketAs makes the local half of ConnectAs's checks for an engine of kind (empty means
// Docker), for a dry run that contacts nothing: the socket file exists, may be reached, and is a
// socket. A stale socket of a stopped engine passes here; only ConnectAs, which dials it, tells.
func CheckSocketAs(ep Endpoint, source string, kind engine.Kind) error {
	fail := func(reason, fix string, err error) error {
		return &NotRunningError{Kind: kind, Endpoint: ep, Source: source, Reason: reason, Fix: fix, Err: err}
	}
	fi, err := os.Stat(ep.Socket)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fail("the socket "+ep.Socket+" does not exist, so no engine is running there", startFixFor(kind, ep, source), err)
	case errors.Is(err, fs.ErrPermission):
		return fail("the socket "+ep.Socket+" cannot be reached (permission denied on a parent directory)", permissionFixFor(kind), err)
	case err != nil:
		return fail("the socket "+ep.Socket+" cannot be inspected: "+err.Error(), startFixFor(kind, ep, source), err)
	case fi.Mode()&fs.ModeSocket == 0:
		return fail(ep.Socket+" is not a unix socket", notSocketFix(kind), nil)
	}
	return nil
}

// permissionFixFor is what to do when the user may not open the socket of an engine of kind.
func permissionFixFor(kind engine.Kind) string {
	return kind.Registration().PermissionFix
}

// notSocketFix is what to do when the endpoint of an engine of kind is not a socket.
func notSocketFix(kind engine.Kind) string {
	if kind.Registration().PodmanSocket {
		return "point CONTAINER_HOST at Podman's socket file"
	}
	return "point DOCKER_HOST at the engine's socket file"
}

// opened is the Engine that answered sv at ep through the client c: its kind recognised by the
// version's components, and c behind the wrapper that kind registered.
func opened(ep Endpoint, c *client.Client, sv types.Version, apiVersion string) *Engine {
	names := make([]string, len(sv.Components))
	for i, comp := range sv.Components {
		names[i] = comp.Name
	}
	e := &Engine{Endpoint: ep, API: c, Identity: engine.Identity{Kind: engine.Recognise(names), Version: sv.Version, APIVersion: apiVersion}}
	if wrap := e.Registration().API; wrap != nil {
		e.API = wrap(c)
	}
	return e
}
