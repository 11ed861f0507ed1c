package docker

import (
	"context"
	"errors"
	"sync"

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
				err = errors.New("the state records objects in a Docker engine but no engine endpoint")
				return
			}
			var ep Endpoint
			if ep, err = ParseEndpoint(e.Endpoint, SourceRecorded); err != nil {
				return
			}
			eng, err = Connect(ctx, ep, SourceRecorded)
		})
		return eng, err
	}
}
