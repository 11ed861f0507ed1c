package docker

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/state"
)

// Recorded returns a function that connects, on first use and then from memory, to the engine
// the state recorded, never to the one the environment names. The removers of engine objects
// share it, so `down` connects once however many records it hands them.
func Recorded(e *state.Engine) func(context.Context) (*Engine, error) {
	var once sync.Once
	var eng *Engine
	var err error
	return func(ctx context.Context) (*Engine, error) {
		once.Do(func() {
			if e == nil || e.Endpoint == "" {
				var kind engine.Kind
				if e != nil {
					kind = e.Kind
				}
				err = fmt.Errorf("the state records objects in a %s engine but no engine endpoint", kind.Name())
				return
			}
			var ep Endpoint
			if ep, err = ParseEndpoint(e.Endpoint, SourceRecorded); err != nil {
				return
			}
			if eng, err = ConnectAs(ctx, ep, SourceRecorded, e.KindOrDocker()); err != nil {
				return
			}
			if err = checkSame(ctx, eng, e); err != nil {
				_ = eng.Close()
				eng = nil
			}
		})
		return eng, err
	}
}

// EngineChangedError is a recorded engine endpoint at which another engine answers now: Podman
// where Docker was recorded (or the reverse), or another Docker daemon (another ID). Nothing is
// read or removed through it: it holds none of the environment's objects, and `down` would
// report them gone and forget them.
type EngineChangedError struct {
	Endpoint string
	// RecordedKind and RecordedID are the recorded engine's; Kind and ID what answers now (an
	// ID is empty where the engine keeps none).
	RecordedKind, Kind engine.Kind
	RecordedID, ID     string
}

func (e *EngineChangedError) Error() string {
	was, now := e.RecordedKind.Name(), e.Kind.Name()
	if e.RecordedID != "" {
		was += " (ID " + e.RecordedID + ")"
	}
	if e.ID != "" {
		now += " (ID " + e.ID + ")"
	}
	return fmt.Sprintf("the environment was made in %s at %s, but %s answers there now: occ reads and removes nothing through another engine, which holds none of its objects; make the socket serve the engine the environment was made in (start it again, or switch the socket back), then run the command again", was, e.Endpoint, now)
}

// checkSame compares the engine that answered at the recorded endpoint with the record: its kind,
// and its ID where the record keeps one.
func checkSame(ctx context.Context, eng *Engine, e *state.Engine) error {
	changed := &EngineChangedError{Endpoint: e.Endpoint, RecordedKind: e.KindOrDocker(), RecordedID: e.ID, Kind: eng.Identity.Kind}
	if eng.Identity.Kind != e.KindOrDocker() {
		changed.ID, _ = IDOf(ctx, eng) // for the message only
		return changed
	}
	if e.ID == "" {
		return nil
	}
	id, err := IDOf(ctx, eng)
	if err != nil {
		return err
	}
	if id != e.ID {
		changed.ID = id
		return changed
	}
	return nil
}

// IDOf is the engine's own identity where its kind keeps one (engine.Registration.StableID):
// Docker's daemon ID; "" for Podman, whose API answers a new ID on every call.
func IDOf(ctx context.Context, eng *Engine) (string, error) {
	if !eng.Registration().StableID {
		return "", nil
	}
	id, err := eng.Verbs().Identify(ctx)
	if err != nil {
		return "", fmt.Errorf("read the identity of the %s engine at %s: %w", eng.Name(), eng.Endpoint, err)
	}
	return id.ID, nil
}

// recordedKey keeps the recorded engine's connection among a state's Connections.
type recordedKey struct{}

// sharedEngine is the recorded engine's connection and whether anyone asked for it.
type sharedEngine struct {
	connect func(context.Context) (*Engine, error)
	used    atomic.Bool
}

func shared(c *state.Connections) *sharedEngine {
	return state.Shared(c, recordedKey{}, func(c *state.Connections) *sharedEngine {
		return &sharedEngine{connect: Recorded(c.State().Engine)}
	})
}

// RecordedEngine is the recorded engine (Recorded) as c shares it: every record of the engine,
// and the command's own checks, use one connection.
func RecordedEngine(c *state.Connections) func(context.Context) (*Engine, error) {
	s := shared(c)
	return func(ctx context.Context) (*Engine, error) {
		s.used.Store(true)
		return s.connect(ctx)
	}
}

// CloseRecorded closes c's engine connection, if anyone made it.
func CloseRecorded(c *state.Connections) {
	s := shared(c)
	if !s.used.Load() {
		return
	}
	if eng, err := s.connect(context.Background()); err == nil {
		_ = eng.Close()
	}
}

// EngineNameOf is how messages name the engine the record o of an engine object lives in
// ("Docker", "Podman"): its Object.Engine, Docker when the state predates the engine's kind.
func EngineNameOf(o state.Object) string {
	return o.Engine.Name()
}
