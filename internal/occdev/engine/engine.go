// Package engine is the container-engine seam of `occ dev`: Engine (verbs.go), a container
// engine in occ's own verbs and types, which occ's image, exec, diagnosis and removal logic
// drives; Identity, what an engine is (its kind, its version and API version as it answered on
// connecting, and its system info: its ID, image store, platform and host); and what occ knows
// of each kind of engine it drives, one Registration per kind (kinds.go), carrying everything
// the flow asks of a kind (its name, how it says what it is on GET /version, the wrapper its API
// needs over the Docker client, its start and permission fixes, how k3d, Compose and the image
// builder must treat it). The layers read a kind's fields instead of asking which engine they
// drive, so an engine that speaks the Docker API is one more Registration.
//
// Engine's one implementation is package docker's, over the Docker API (docker.Engine.Verbs),
// which also connects to an engine at its Endpoint. Finding the engine is package
// engine/locate's.
//
// occ's own logic drives the engine through Engine only. The k3d library (cluster creation) and
// the `docker compose` plugin still speak the Docker API, with clients of their own that reach
// the engine's Endpoint; so an engine that served only Engine, not the Docker API, could run
// only the existing-cluster provider with the Kubernetes-only profile.
package engine

import (
	"fmt"
	"regexp"
	"slices"
	"sync"

	"github.com/openclaw/occ/internal/occdev/docker/engineapi"
)

// Kind is a container engine's kind as the state and the plan's JSON write it ("docker",
// "podman"): once written by a release it never changes. The zero Kind is an engine whose kind
// was not recorded (a state written before kinds were), which is Docker (OrDocker).
type Kind string

// OrDocker is k, or Docker when k is empty.
func (k Kind) OrDocker() Kind {
	if k == "" {
		return Docker
	}
	return k
}

// Registration is the registered value of k (Docker's when k is empty). An unregistered kind's
// value names it by its own string and has no quirks; the state refuses such a kind (Registered).
func (k Kind) Registration() Registration {
	mu.RLock()
	defer mu.RUnlock()
	if r, ok := registered[k.OrDocker()]; ok {
		return r
	}
	return Registration{Kind: k, Name: string(k)}
}

// Name is the kind as people write it ("Docker", "Podman"): Docker when k is empty.
func (k Kind) Name() string { return k.Registration().Name }

// Registration is what occ knows of one kind of engine. Every kind speaks the Docker API; what
// differs between kinds is in these fields, and only here.
type Registration struct {
	// Kind is the kind's name in the state and the plan: a lower-case word, never changed once
	// a release wrote it.
	Kind Kind
	// Name is the kind as messages write it ("Podman").
	Name string
	// Component is the name of the GET /version component by which an engine says it is of
	// this kind ("Podman Engine"). An engine that names no registered kind's component is
	// Docker, whose Component is empty.
	Component string
	// API wraps the Docker client of an engine of this kind where the kind's answers mean
	// something else than Docker's; nil uses the client as it is.
	API func(engineapi.API) engineapi.API
	// PermissionFix is what to do when the user may not open the engine's socket.
	PermissionFix string
	// PodmanSocket says the engine's socket is Podman's: Podman's units or machine start it
	// (locate.PodmanStart) and CONTAINER_HOST points occ at another, which the fixes of an
	// engine that cannot be used name; otherwise they name Docker's start and DOCKER_HOST.
	PodmanSocket bool
	// K3dPodman says k3d must run the cluster as it runs it on Podman: k3d's Podman handling
	// (its retried creation, the node's DNS), which k3d decides by the engine's answers.
	K3dPodman bool
	// ComposePodman says a Compose project on the engine runs as OCE runs it on Podman: the
	// checkout's Podman overlay (compose.podman.yaml) is layered with the engine's socket, a
	// service may use only Podman's logging drivers, and the exited jobs are listed on the
	// project's network without an address (which occ then disconnects).
	ComposePodman bool
	// Builder is the build API the engine serves behind the Docker API's image build.
	Builder Builder
	// StableID says the engine keeps an identity (system info's ID) across calls and restarts,
	// which the state records and later commands compare; Podman answers a new one every call.
	StableID bool
	// ResolvesTags says the engine resolves a tag to its registry digest (the Docker API's
	// distribution endpoint); Podman's API has none.
	ResolvesTags bool
	// ClassicStore says the engine may keep images in Docker's classic store, which names a
	// loaded image by its config alone: a bundle's images must then be pulled, not loaded.
	ClassicStore bool
}

// Builder is the build API an engine serves behind the Docker API's image build.
type Builder int

const (
	// BuildKit is Docker's builder, which occ's build path (a BuildKit session for secret
	// mounts, BuildKit's progress stream) drives; the check is the engine's API version.
	BuildKit Builder = iota
	// Buildah is Podman's builder behind its Docker-compatible API, which serves no BuildKit
	// session: occ builds nothing on it.
	Buildah
)

// kindPattern is the shape of a Kind: a lower-case word, as state.json writes it.
var kindPattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,31}$`)

// registered are the registered kinds: written while packages initialise (Register runs from
// package variables), read afterwards. It is a registry in the manner of database/sql's
// drivers, because a state's kind is read and an engine identified before any command could
// hand a table to the layers that ask.
var (
	mu         sync.RWMutex
	registered = map[Kind]Registration{}
	order      []Kind
)

// Register makes a kind known and returns it, so a kind is registered in one line of a package
// variable. It panics on a malformed or repeated registration: two kinds claiming one name or
// one version component would drive each other's engines.
func Register(r Registration) Registration {
	if !kindPattern.MatchString(string(r.Kind)) || r.Name == "" {
		panic(fmt.Sprintf("engine.Register: kind %q needs a lower-case name and a Name for messages", r.Kind))
	}
	mu.Lock()
	defer mu.Unlock()
	for _, k := range order {
		if o := registered[k]; k == r.Kind || o.Component == r.Component {
			panic(fmt.Sprintf("engine.Register: kind %q repeats the kind or the version component of %q", r.Kind, k))
		}
	}
	registered[r.Kind] = r
	order = append(order, r.Kind)
	return r
}

// Registered reports whether k is a registered kind (empty is Docker, which is).
func Registered(k Kind) bool {
	mu.RLock()
	defer mu.RUnlock()
	_, ok := registered[k.OrDocker()]
	return ok
}

// Recognise is the kind of an engine whose GET /version listed components (their names): the
// first registered kind whose Component is among them, whatever else the answer says; Docker
// when none is.
func Recognise(components []string) Kind {
	mu.RLock()
	defer mu.RUnlock()
	for _, k := range order {
		if c := registered[k].Component; c != "" && slices.Contains(components, c) {
			return k
		}
	}
	return Docker
}

// Kinds are the registered kinds, in the order they were registered (Docker first).
func Kinds() []Kind {
	mu.RLock()
	defer mu.RUnlock()
	return slices.Clone(order)
}
