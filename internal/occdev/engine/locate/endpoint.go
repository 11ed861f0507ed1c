package locate

import (
	"errors"
	"net/url"
	"path"
	"strings"

	"github.com/openclaw/occ/internal/contract"
)

// Endpoint is a container engine's API address as occ pins it: always a unix socket, given by
// its absolute path. Both engines serve the Docker-compatible API there; the String form
// (unix:///path) is what DOCKER_HOST and CONTAINER_HOST take.
type Endpoint struct {
	// Socket is the absolute, clean path of the engine's unix socket.
	Socket string
}

// String is the URL form of e, "unix:///path/to/engine.sock".
func (e Endpoint) String() string { return "unix://" + e.Socket }

// IsZero reports whether e names no socket.
func (e Endpoint) IsZero() bool { return e.Socket == "" }

// localRule is why only unix sockets are accepted: the k3d API port and the node's published
// ports are bound to 127.0.0.1 of the engine's host, which occ reaches only when that host is
// this machine, and k3d imports images directly only over a local connection.
const localRule = "is not a local unix socket; occ dev publishes the cluster on 127.0.0.1 of the engine's host, so it needs the engine on this machine"

// ParseUnix accepts "unix:///absolute/path" (what DOCKER_HOST, docker contexts and Podman
// connections write) and "unix:/absolute/path" (what Podman itself prints for its default
// address), and refuses everything else with the rule that was broken.
func ParseUnix(raw string) (Endpoint, string) {
	if strings.TrimSpace(raw) == "" {
		return Endpoint{}, "is empty"
	}
	u, err := url.Parse(raw)
	if err != nil {
		return Endpoint{}, "is not a URL"
	}
	if u.Scheme != "unix" {
		return Endpoint{}, localRule
	}
	// unix:///p and unix:/p parse with an empty host; unix://p (relative) puts "p" into Host.
	p := u.Path
	if u.Host != "" || u.Opaque != "" || !path.IsAbs(p) {
		return Endpoint{}, "must name an absolute socket path (unix:///path/to/engine.sock)"
	}
	if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return Endpoint{}, "must be a plain socket path without query, fragment or user info"
	}
	return Endpoint{Socket: path.Clean(p)}, ""
}

// redact is an address as errors show it: occ's one rule (contract.RedactURL) hides user info,
// a query (?token=…), a fragment and percent-encoding.
func redact(raw string) string { return contract.RedactURL(raw) }

// MarshalText writes e in its String form, as the plan document and the state show it.
func (e Endpoint) MarshalText() ([]byte, error) {
	if e.IsZero() {
		return nil, nil
	}
	return []byte(e.String()), nil
}

// UnmarshalText reads e back from its String form; anything else is refused with the rule.
func (e *Endpoint) UnmarshalText(b []byte) error {
	if len(b) == 0 {
		*e = Endpoint{}
		return nil
	}
	ep, rule := ParseUnix(string(b))
	if rule != "" {
		return errors.New("engine endpoint " + redact(string(b)) + " " + rule)
	}
	*e = ep
	return nil
}
