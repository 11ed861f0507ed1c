// Package recorded connects to what a state records and removes it. Every connection is made
// from the record alone (the recorded cluster access and owner, the recorded engine endpoint),
// never from the environment the command runs in, so `down`, the rollback, `status`, `logs` and
// the debug bundle all see the environment `up` made, and nothing else.
package recorded

import (
	"context"
	"errors"
	"fmt"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/state"
)

// Env holds the connections to what a state records (state.Connections). They are made lazily,
// on the first record that needs one, and shared by every record's Remover and by the readers
// of the environment.
type Env struct {
	st   state.State
	c    *state.Connections
	kube func(context.Context) (*kubeobj.Conn, error)
}

// Connect prepares the connections to what st records; nothing is contacted yet.
func Connect(st state.State) *Env {
	c := state.Connect(st)
	return &Env{st: st, c: c, kube: kubeobj.RecordedConn(c)}
}

// State is the record the connections are made from.
func (e *Env) State() state.State { return e.st }

// Engine connects to the recorded engine on first use.
func (e *Env) Engine(ctx context.Context) (*docker.Engine, error) {
	return docker.RecordedEngine(e.c)(ctx)
}

// Kube connects to the recorded cluster on first use.
func (e *Env) Kube(ctx context.Context) (*kubeobj.Conn, error) { return e.kube(ctx) }

// SameEngine refuses, before anything is read or removed, a recorded engine endpoint at which
// another engine answers now (docker.EngineChangedError): it holds none of the environment's
// objects, so `status` would call them all missing and `down` would forget them as gone. An
// engine that does not answer at all is no refusal here: each record then says it cannot be
// reached. dir is the state directory the refusal says is kept.
func (e *Env) SameEngine(ctx context.Context, dir string) error {
	if e.st.Engine == nil || e.st.Engine.Endpoint == "" {
		return nil
	}
	_, err := e.Engine(ctx)
	var changed *docker.EngineChangedError
	if errors.As(err, &changed) {
		return fmt.Errorf("%w; the state in %s is kept as it is", err, dir)
	}
	return nil
}

// Close releases the engine connection, if one was made.
func (e *Env) Close() { docker.CloseRecorded(e.c) }

// Removers is the registry `down`, rollback and `status` use: the Remover each record kind's
// layer registered (state.Kind), built over the recorded connections. A record whose type has
// none is kept, never skipped.
func (e *Env) Removers() state.Removers { return e.c.Removers() }
