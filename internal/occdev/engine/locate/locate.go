// Package locate finds the container engine `occ dev` drives and tells what it is, the way the
// users of each engine expect, without running any CLI: Docker from DOCKER_HOST, the current
// docker context or the default socket; Podman from CONTAINER_CONNECTION, CONTAINER_HOST, its
// default connection (a Podman machine's forwarded socket on macOS) or its rootful and rootless
// sockets. The choice (--engine, OCC_DEVELOPMENT_CONTAINER_ENGINE) is auto or a registered kind;
// auto tries Docker first and then Podman. What answers at a place is identified by its version
// endpoint, not by the place: a Podman behind DOCKER_HOST (podman-docker's /var/run/docker.sock,
// podman-mac-helper, a DOCKER_HOST a k3d guide told the user to set) is Podman.
//
// The package reads files and talks HTTP over a unix socket; it drives no engine client. What an
// answer says the engine is, and how each kind is named, are the registered kinds' (package engine).
package locate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/option"
)

// Choice is the engine the user asked for.
type Choice string

// The values of --engine and OCC_DEVELOPMENT_CONTAINER_ENGINE.
const (
	Auto         Choice = "auto"
	ChooseDocker Choice = Choice(engine.Docker)
	ChoosePodman Choice = Choice(engine.Podman)
)

// ChoiceEnv is the environment variable behind --engine.
const ChoiceEnv = "OCC_DEVELOPMENT_CONTAINER_ENGINE"

// ParseChoice reads a choice: auto or a registered engine kind; empty means auto. source names
// where the value came from ("--engine", "OCC_DEVELOPMENT_CONTAINER_ENGINE") for the error.
func ParseChoice(value, source string) (Choice, error) {
	switch c := Choice(value); {
	case c == "":
		return Auto, nil
	case c == Auto || engine.Registered(engine.Kind(c)):
		return c, nil
	}
	return "", &option.Error{Option: source, Value: value, Rule: "is not a container engine choice (" + ChoiceList() + ")",
		Fix: "use auto to take Docker when it runs and Podman otherwise, or name the engine"}
}

// Choices are the values a choice may take, in the order messages list them: auto, then the
// registered kinds in the order they were registered.
func Choices() []string {
	kinds := engine.Kinds()
	out := make([]string, 0, len(kinds)+1)
	out = append(out, string(Auto))
	for _, k := range kinds {
		out = append(out, string(k))
	}
	return out
}

// ChoiceList is Choices as a message lists them: "auto, docker or podman".
func ChoiceList() string {
	c := Choices()
	last := len(c) - 1
	return strings.Join(c[:last], ", ") + " or " + c[last]
}

// Options say what to find and where to look.
type Options struct {
	Choice Choice
	// ChoiceSource names the setting the choice came from, for messages; empty means --engine.
	ChoiceSource string
	// Env is where to look; the zero value is this process's environment and filesystem.
	Env Env
}

// Location is a located and identified engine.
type Location struct {
	// Kind is what the engine said it is, which is not always what its place suggests.
	Kind     engine.Kind
	Endpoint Endpoint
	// Source says which setting or rule named the place ("DOCKER_HOST", "the rootless Podman
	// socket ($XDG_RUNTIME_DIR/podman/podman.sock)", `Podman machine "podman-machine-default"`).
	Source     string
	Version    string
	APIVersion string
	// Platform is the product the engine says it is part of (Identity.Platform).
	Platform string
	// Skipped are the places looked at before this one that had no usable engine, in order.
	Skipped []Attempt
}

// String is a one-line summary: "Podman 4.3.1 at unix:///run/podman/podman.sock (from the
// rootful Podman socket)".
func (l Location) String() string {
	return fmt.Sprintf("%s %s at %s (from %s)", l.Kind.Name(), l.Version, l.Endpoint, l.Source)
}

// Attempt is a place looked at that had no usable engine.
type Attempt struct {
	// Kind is the engine expected at the place.
	Kind     engine.Kind
	Source   string
	Endpoint Endpoint
	// Reason says what was wrong there; Fix what to do about it.
	Reason string
	Fix    string
}

func (a Attempt) String() string {
	where := a.Kind.Name() + " "
	if !a.Endpoint.IsZero() {
		where += "at " + a.Endpoint.String() + " "
	}
	return fmt.Sprintf("%s(from %s): %s; %s", where, a.Source, a.Reason, a.Fix)
}

// NotFoundError says that no place had a usable engine, listing every place looked at with what
// to do there. Nothing has been created when it is returned.
type NotFoundError struct {
	Choice       Choice
	ChoiceSource string
	Attempts     []Attempt
}

func (e *NotFoundError) Error() string {
	var b strings.Builder
	if e.Choice == Auto {
		b.WriteString("no usable container engine (Docker or Podman)")
	} else {
		b.WriteString("no usable " + engine.Kind(e.Choice).Name() + " engine")
	}
	fmt.Fprintf(&b, " for %s %s; looked at:", e.ChoiceSource, e.Choice)
	for _, a := range e.Attempts {
		b.WriteString("\n  - " + a.String())
	}
	return b.String()
}

// KindError says that the engine at the place the chosen engine is looked for is the other
// engine: the user asked for Docker and DOCKER_HOST (or the default socket) leads to Podman, or
// the other way round.
type KindError struct {
	Choice       Choice
	ChoiceSource string
	Found        Location
	// Fix says how to reach the chosen engine instead.
	Fix string
}

func (e *KindError) Error() string {
	return fmt.Sprintf("%s %s: the engine at %s (from %s) is %s %s, not %s; %s",
		e.ChoiceSource, e.Choice, e.Found.Endpoint, e.Found.Source, e.Found.Kind.Name(), e.Found.Version, engine.Kind(e.Choice).Name(), e.Fix)
}

// Find locates the engine opts ask for and identifies it:
//
//   - auto: Docker's place first, and whatever engine answers there is taken as what it says
//     it is (so a Podman behind DOCKER_HOST is Podman); then Podman's places in order;
//   - docker: Docker's place only, and the engine there must be Docker;
//   - podman: Podman's places in order, and the first engine that answers must be Podman;
//   - any other registered kind: Docker's place only (such an engine speaks the Docker API and
//     is reached as Docker is), and the engine there must be of that kind.
//
// A bad value of a variable the user set (DOCKER_HOST, DOCKER_CONTEXT, CONTAINER_HOST,
// CONTAINER_CONNECTION) is an *option.Error. When no place has a usable engine the error is a
// *NotFoundError naming every place with what to start there; an engine of the other kind where
// the chosen one was expected is a *KindError.
func Find(ctx context.Context, opts Options) (Location, error) {
	choice := opts.Choice
	if choice == "" {
		choice = Auto
	}
	source := opts.ChoiceSource
	if source == "" {
		source = "--engine"
	}
	var attempts []Attempt
	// try probes places in order and returns the first engine that answers.
	try := func(places []place) (Location, bool, error) {
		for _, p := range places {
			if p.problem != "" {
				attempts = append(attempts, Attempt{Kind: p.kind, Source: p.source, Reason: p.problem, Fix: problemFix(p.kind)})
				continue
			}
			ep := Endpoint{Socket: firstExisting(p.sockets)}
			id, err := Identify(ctx, ep)
			if err != nil {
				if ctx.Err() != nil {
					return Location{}, false, fmt.Errorf("locate the container engine: %w", ctx.Err())
				}
				attempts = append(attempts, probeAttempt(p, ep, err))
				continue
			}
			loc := Location{Kind: id.Kind, Endpoint: ep, Source: p.source, Version: id.Version, APIVersion: id.APIVersion, Platform: id.Platform, Skipped: attempts}
			if choice != Auto && id.Kind != engine.Kind(choice) {
				return Location{}, false, &KindError{Choice: choice, ChoiceSource: source, Found: loc, Fix: kindFix(choice)}
			}
			return loc, true, nil
		}
		return Location{}, false, nil
	}
	if choice != ChoosePodman {
		p, err := dockerPlace(opts.Env)
		if err != nil {
			return Location{}, err
		}
		if loc, ok, err := try([]place{p}); ok || err != nil {
			return loc, err
		}
	}
	if choice == Auto || choice == ChoosePodman {
		ps, err := podmanPlaces(opts.Env)
		if err != nil {
			return Location{}, err
		}
		if loc, ok, err := try(ps); ok || err != nil {
			return loc, err
		}
	}
	return Location{}, &NotFoundError{Choice: choice, ChoiceSource: source, Attempts: attempts}
}

// firstExisting is the first of sockets that exists, else the first (whose absence the probe
// then reports).
func firstExisting(sockets []string) string {
	for _, s := range sockets {
		if _, err := os.Lstat(s); err == nil {
			return s
		}
	}
	return sockets[0]
}

func probeAttempt(p place, ep Endpoint, err error) Attempt {
	a := Attempt{Kind: p.kind, Source: p.source, Endpoint: ep, Reason: err.Error(), Fix: p.start}
	var pe *ProbeError
	if errors.As(err, &pe) {
		a.Reason = pe.Reason
		if pe.Permission {
			a.Fix = permissionFix(p.kind)
		}
	}
	if len(p.sockets) > 1 && errors.Is(err, os.ErrNotExist) {
		a.Reason = "no forwarded API socket exists (looked for " + strings.Join(p.sockets, ", ") + "), so the machine is not running"
	}
	return a
}

func problemFix(k engine.Kind) string {
	if k == engine.Docker {
		return "or set DOCKER_HOST=unix:///path/to/docker.sock"
	}
	return "or set CONTAINER_HOST=unix:///path/to/podman.sock"
}

// permissionFix is what to do at a place where an engine of kind k is looked for whose socket
// the user may not open: the kind's own fix, except that Docker's place offers no rootless
// engine, which Find would have looked for at Podman's places.
func permissionFix(k engine.Kind) string {
	if k == engine.Docker {
		return "add your user to the docker group (`sudo usermod -aG docker $USER`, then log in again), or point DOCKER_HOST at a socket you may open"
	}
	return k.Registration().PermissionFix
}

func kindFix(choice Choice) string {
	if choice == ChooseDocker {
		return "use --engine podman (or auto) to drive it, or point DOCKER_HOST at a Docker engine"
	}
	return "use --engine docker (or auto) to drive it, or point CONTAINER_HOST at a Podman socket"
}
