package docker

import "github.com/openclaw/occ/internal/occdev/docker/engineapi"

// API is everything occ asks of a container engine: the calls of the Docker Engine API the flow,
// the image steps, the cluster provider and the Compose profile make (engineapi.API, where the
// interface sits so that an engine kind's registration, below this package, can name the
// wrapper its engine needs, with the client's option types those calls take). An Engine's API
// is the Docker client, wrapped for its kind.
type API = engineapi.API
