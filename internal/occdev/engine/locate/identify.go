package locate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/openclaw/occ/internal/occdev/engine"
)

// Identity is what an engine said about itself on its version endpoint.
type Identity struct {
	Kind engine.Kind
	// Version is the engine's release: that of the component that names its kind (Podman's from
	// its Podman Engine component), else the answer's.
	Version string
	// APIVersion is the Docker API version it serves.
	APIVersion string
	// Platform is the product the engine says it is part of ("Docker Desktop 4.37.1 (178610)",
	// "Docker Engine - Community"); empty when it names none.
	Platform string
}

// DefaultProbeTimeout bounds one identification: a socket that accepts but never answers must
// not hang `occ dev up` before it has started.
const DefaultProbeTimeout = 10 * time.Second

// ProbeError is why no engine answered at a socket. Reason is written for a person ("the socket
// … does not exist"); Err is the cause.
type ProbeError struct {
	Endpoint Endpoint
	Reason   string
	// Permission is true when the socket exists but may not be opened, which needs another fix
	// than starting the engine.
	Permission bool
	Err        error
}

func (e *ProbeError) Error() string { return e.Endpoint.String() + ": " + e.Reason }
func (e *ProbeError) Unwrap() error { return e.Err }

// Identify asks the engine at ep who it is: GET /version over the unix socket, the call both
// Docker and Podman answer without an API version prefix. A component a registered kind names
// (Podman's "Podman Engine") means that kind, whatever else the answer says; any other engine
// serving that endpoint is Docker (engine.Recognise). A missing socket, a socket that may not be opened, a stale socket of a stopped engine,
// and something that is not an engine are told apart in the ProbeError.
func Identify(ctx context.Context, ep Endpoint) (Identity, error) {
	fail := func(reason string, err error) (Identity, error) {
		return Identity{}, &ProbeError{Endpoint: ep, Reason: reason, Err: err}
	}
	fi, err := os.Stat(ep.Socket)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fail("the socket "+ep.Socket+" does not exist", err)
	case errors.Is(err, fs.ErrPermission):
		return Identity{}, &ProbeError{Endpoint: ep, Reason: "the socket " + ep.Socket + " cannot be reached (permission denied on a parent directory)", Permission: true, Err: err}
	case err != nil:
		return fail("the socket "+ep.Socket+" cannot be inspected: "+err.Error(), err)
	case fi.Mode()&fs.ModeSocket == 0:
		return fail(ep.Socket+" is not a unix socket", nil)
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultProbeTimeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", ep.Socket)
	switch {
	case err == nil:
	case errors.Is(err, syscall.EACCES) || errors.Is(err, fs.ErrPermission):
		return Identity{}, &ProbeError{Endpoint: ep, Reason: "permission denied opening the socket " + ep.Socket, Permission: true, Err: err}
	case errors.Is(err, syscall.ECONNREFUSED):
		return fail("nothing accepts connections on "+ep.Socket+" (a stale socket of a stopped engine)", err)
	case ctx.Err() != nil:
		return fail("connecting to "+ep.Socket+" timed out", err)
	default:
		return fail("the socket "+ep.Socket+" cannot be connected to: "+err.Error(), err)
	}
	used := false
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(context.Context, string, string) (net.Conn, error) {
			if used {
				return nil, errors.New("one connection per identification")
			}
			used = true
			return conn, nil
		},
		DisableKeepAlives: true,
	}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://engine/version", nil)
	if err != nil {
		conn.Close()
		return Identity{}, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fail("the engine at "+ep.Socket+" did not answer within "+DefaultProbeTimeout.String(), err)
		}
		return fail("the engine at "+ep.Socket+" did not answer GET /version: "+err.Error(), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fail(fmt.Sprintf("what listens on %s answered GET /version with %s: not a Docker-compatible engine", ep.Socket, resp.Status), nil)
	}
	var v struct {
		Version    string
		APIVersion string `json:"ApiVersion"`
		Platform   struct{ Name string }
		Components []struct {
			Name    string
			Version string
		}
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&v); err != nil {
		return fail("what listens on "+ep.Socket+" answered GET /version with something other than an engine's version: "+err.Error(), err)
	}
	names := make([]string, len(v.Components))
	for i, c := range v.Components {
		names[i] = c.Name
	}
	id := Identity{Kind: engine.Recognise(names), Version: v.Version, APIVersion: v.APIVersion, Platform: v.Platform.Name}
	if r := id.Kind.Registration(); r.Component != "" {
		id.Version = v.Components[slices.Index(names, r.Component)].Version
	}
	return id, nil
}
