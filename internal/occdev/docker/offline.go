package docker

import (
	"context"
	"fmt"
	"io"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/registry"
)

// OfflineError is a pull or registry lookup an offline run refused.
type OfflineError struct {
	Call, Image string
}

func (e *OfflineError) Error() string {
	return fmt.Sprintf("--offline: %s of image %s would reach its registry; give a bundle that holds it (--bundle, OCC_DEVELOPMENT_BUNDLE), have the engine hold it by its digest, or drop --offline", e.Call, e.Image)
}

// Offline is api refusing every call that reaches a registry through the engine (a pull, a
// distribution lookup) with an *OfflineError naming the image, for `up --offline`.
func Offline(api API) API { return offlineAPI{API: api} }

type offlineAPI struct{ API }

func (offlineAPI) ImagePull(_ context.Context, ref string, _ image.PullOptions) (io.ReadCloser, error) {
	return nil, &OfflineError{Call: "a pull", Image: ref}
}

func (offlineAPI) DistributionInspect(_ context.Context, ref, _ string) (registry.DistributionInspect, error) {
	return registry.DistributionInspect{}, &OfflineError{Call: "a registry lookup", Image: ref}
}
