package docker

import "github.com/openclaw/occ/internal/occdev/docker/engineapi"

// API is everything occ asks of a container engine: the calls of the Docker Engine API the flow,
// the image steps, the cluster provider and the Compose profile make (engineapi.API, where the
// interface sits so that an engine kind's registration, below this package, can name the
// wrapper its engine needs). An Engine's API is the Docker client, wrapped for its kind.
type API = engineapi.API

// ImageInspectOption, ImageSaveOption and ImageLoadOption are the client's option types of those
// calls, named here so that code outside this package never imports the client.
type (
	ImageInspectOption = engineapi.ImageInspectOption
	ImageSaveOption    = engineapi.ImageSaveOption
	ImageLoadOption    = engineapi.ImageLoadOption
)

// ImageInspectWithManifests asks for the manifests a multi-platform image lists (API 1.48 and
// later, the containerd image store); ImageSaveWithPlatforms saves only the named platforms'
// manifests of a multi-platform image (API 1.48 and later).
var (
	ImageInspectWithManifests = engineapi.ImageInspectWithManifests
	ImageSaveWithPlatforms    = engineapi.ImageSaveWithPlatforms
)
