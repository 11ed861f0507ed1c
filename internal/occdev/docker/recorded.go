package docker

import (
	"context"
	"fmt"
	"sync"

	"github.com/openclaw/occ/internal/occdev/engine/locate"
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
				kind := state.EngineDocker
				if e != nil {
					kind = e.KindOrDocker()
				}
				err = fmt.Errorf("the state records objects in a %s engine but no engine endpoint", kindName(locate.Kind(kind)))
				return
			}
			var ep Endpoint
			if ep, err = ParseEndpoint(e.Endpoint, SourceRecorded); err != nil {
				return
			}
			eng, err = ConnectAs(ctx, ep, SourceRecorded, locate.Kind(e.KindOrDocker()))
		})
		return eng, err
	}
}
