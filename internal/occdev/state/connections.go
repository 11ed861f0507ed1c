package state

import "sync"

// Connections are the connections to what one state records, shared by the Removers of every
// record kind and by the commands that read the records (status, logs, reload, down). Each is
// made from the record alone (the recorded cluster access and owner, the recorded engine
// endpoint), never from the environment the command runs in, and connects on first use, once:
// one engine connection serves every record of the engine. The layers own their connections'
// types and keep them here under keys of their own (Shared); the store knows none of them.
type Connections struct {
	state  State
	mu     sync.Mutex
	shared map[any]any
}

// Connect returns the connections of st; nothing is connected yet.
func Connect(st State) *Connections { return &Connections{state: st, shared: map[any]any{}} }

// State is the recorded state the connections are made from.
func (c *Connections) State() State { return c.state }

// Shared is the value c keeps under key, made from the recorded state by mk on first use. A
// layer defines an unexported key type for each value it keeps, so no other layer can reach or
// replace it. mk runs without c's lock held (a value may be made of other shared values); when
// two callers race, the first value stored is the one both get.
func Shared[T any](c *Connections, key any, mk func(*Connections) T) T {
	c.mu.Lock()
	v, ok := c.shared[key]
	c.mu.Unlock()
	if ok {
		return v.(T)
	}
	made := mk(c)
	c.mu.Lock()
	defer c.mu.Unlock()
	if v, ok := c.shared[key]; ok {
		return v.(T)
	}
	c.shared[key] = made
	return made
}

// Removers is the Remover of every registered kind, each built over c. A kind without one is
// left out: its records are refused (and kept) when their turn comes.
func (c *Connections) Removers() Removers {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	reg := make(Removers, len(kinds))
	for t, k := range kinds {
		if k.Remover != nil {
			reg[t] = k.Remover(c)
		}
	}
	return reg
}

// Order is a record kind's place in the order of removal.
type Order int

const (
	// InReverse records are removed in strict reverse creation order (a Namespace after what
	// is inside it).
	InReverse Order = iota
	// QuiescedFirst records are removed before anything else, the cluster included: the
	// Compose control plane's API and worker, which would otherwise go on reconciling against a
	// cluster being deleted. OCE's own `down` stops the reconcilers first for the same reason.
	QuiescedFirst
	// TheCluster is a cluster occ created: removed next, and the InsideCluster records go with
	// it.
	TheCluster
	// InsideCluster records live inside the cluster's API and go with a cluster occ created.
	// (Cluster images also leave a staging tag in the engine, so they are not of this kind and
	// their remover still runs.)
	InsideCluster
	// SideBySide records never depend on each other: each names its own image reference (a
	// pull's digest reference; an import's staging tag and name in the node), so the removal of
	// one cannot change what the removal of another finds. Consecutive records of one such type
	// are removed concurrently.
	SideBySide
)

// OrderOf is t's place in the order of removal; a type without a registered kind keeps its
// reverse order (and is refused when its turn comes).
func OrderOf(t Type) Order {
	k, _ := KindOf(t)
	return k.Order
}
