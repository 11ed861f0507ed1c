package state

import (
	"fmt"
	"regexp"
	"sync"
)

// Kind is what the store knows about one record Type: which optional fields its records carry,
// the rules they must follow, how messages name them, where they come in the order of removal
// and the Remover that removes and inspects them. The layer that makes records of a
// type defines its Kind and registers it (Register) when its package initialises, so the
// store never lists its producers: a new record type is a new Kind in the layer that makes it.
//
// A record whose type has no registered Kind is refused on every read and write: a binary
// that does not link the layer that made it could not remove it either.
type Kind struct {
	// Type is the name records of this kind carry in state.json. It is the on-disk format:
	// once written by a release it never changes.
	Type Type
	// Aliases are other names records of this kind carry in state files written by earlier
	// releases (a pulled image was "docker-image" or "podman-image" before the type was named
	// by what it is). Reading a state gives such records Type, so an environment made by an
	// earlier release still loads and `down` removes it; like Type, an alias is never dropped.
	Aliases []Type
	// Fields are the optional fields its records may carry; the others must stay empty.
	Fields Fields
	// Check applies the kind's own rules (name shape, required fields) to a record whose
	// fields the store has already checked against Fields and the rules every record shares.
	// It returns every problem found, joined; nil when there is none.
	Check func(Object) error
	// Describe names a record in messages, for example "Helm release oce-system/gateway".
	Describe func(Object) string
	// Order is the kind's place in the order of removal.
	Order Order
	// Remover builds the kind's Remover over the recorded connections (Connections.Removers).
	// A kind without one cannot be removed: its records are refused and kept.
	Remover func(*Connections) Remover
}

// Fields says which optional fields a record may carry; its name is always required.
type Fields struct {
	// APIVersionKind allows apiVersion and kind (a Kubernetes object's kind).
	APIVersionKind bool
	Namespace      bool
	UID            bool
	ID             bool
	Digest         bool
	Labels         bool
	// Engine marks the records of objects in the recorded engine (State.Engine): reading a
	// state gives them its kind (Object.Engine), so messages name the engine ("Podman volume").
	Engine bool
}

// kinds are the registered kinds: written while packages initialise (Register runs from init
// functions), read afterwards. It is the store's one piece of package state, a registry in the
// manner of database/sql's drivers, because records are read and checked long before any
// command could hand the store a list.
var (
	kindsMu sync.RWMutex
	kinds   = map[Type]Kind{}
	// aliases maps each registered alias to the Type of its kind.
	aliases = map[Type]Type{}
)

// Register makes a record kind known to the store. It is called from the init function of the
// package that makes records of the kind, and panics on a malformed or repeated registration:
// two layers claiming one on-disk name would remove each other's records.
func Register(k Kind) {
	if !typePattern.MatchString(string(k.Type)) || k.Check == nil || k.Describe == nil {
		panic(fmt.Sprintf("state.Register: kind %q needs a lower-case type name, Check and Describe", k.Type))
	}
	kindsMu.Lock()
	defer kindsMu.Unlock()
	for _, name := range append([]Type{k.Type}, k.Aliases...) {
		if !typePattern.MatchString(string(name)) {
			panic(fmt.Sprintf("state.Register: kind %q: alias %q is not a lower-case type name", k.Type, name))
		}
		_, isType := kinds[name]
		_, isAlias := aliases[name]
		if isType || isAlias {
			panic(fmt.Sprintf("state.Register: record type %q is registered twice", name))
		}
	}
	kinds[k.Type] = k
	for _, a := range k.Aliases {
		aliases[a] = k.Type
	}
}

// resolveAlias is the registered Type t names: t itself, or the kind's Type when t is one of
// its Aliases.
func resolveAlias(t Type) Type {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	if to, ok := aliases[t]; ok {
		return to
	}
	return t
}

// KindOf returns the registered kind of t.
func KindOf(t Type) (Kind, bool) {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	k, ok := kinds[t]
	return k, ok
}

var typePattern = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

// Rules shared by the layers that make engine records, defined once here so a record and the
// state's own engine fields (cluster.network) follow the same rule.
var (
	engineNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)
	repositoryPattern = regexp.MustCompile(`^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-]+[a-z0-9]+)*)+$|^[a-z0-9]+([._-][a-z0-9]+)*$`)
	digestPattern     = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
	// Compose project names become container, network and volume name prefixes.
	composeNamePattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,62}$`)
)

// IsEngineName reports whether s is a name the Docker engine accepts for a network or volume.
func IsEngineName(s string) bool { return engineNamePattern.MatchString(s) }

// IsRepository reports whether s is an image repository without tag or digest.
func IsRepository(s string) bool { return repositoryPattern.MatchString(s) }

// IsDigest reports whether s is a sha256 content digest (sha256: and 64 lower-case hex digits).
func IsDigest(s string) bool { return digestPattern.MatchString(s) }

// IsComposeProjectName reports whether s is a Compose project name: lower-case letters, digits,
// '_' and '-', starting with a letter or digit.
func IsComposeProjectName(s string) bool { return composeNamePattern.MatchString(s) }
