package images

import (
	"context"
	"fmt"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/openclaw/occ/internal/occdev/state"
)

// RemovePulledImage undoes a recorded pull: it removes the digest reference `up` pulled. Only
// that reference goes; if the user has tagged the image since, the engine keeps the image under
// the other names. An image whose ID is not the recorded one is left alone (it was pulled again
// by someone else). A record without an ID is of a pull that was interrupted: the image can only
// exist if that pull completed in the engine, so it is removed too. Absent is success.
func RemovePulledImage(ctx context.Context, api client.APIClient, rec state.Object) error {
	if rec.Kind != KindPulledImage {
		return fmt.Errorf("remove pulled image: state entry %s is not a %s", rec, KindPulledImage)
	}
	return removeReference(ctx, api, rec)
}

// RemoveStagingTag removes a recorded staging tag if it still names the recorded image.
func RemoveStagingTag(ctx context.Context, api client.APIClient, rec state.Object) error {
	if rec.Kind != KindStagingTag {
		return fmt.Errorf("remove staging tag: state entry %s is not a %s", rec, KindStagingTag)
	}
	return removeReference(ctx, api, rec)
}

func removeReference(ctx context.Context, api client.APIClient, rec state.Object) error {
	ins, err := api.ImageInspect(ctx, rec.Name)
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("inspect image %s: %w", rec.Name, err)
	}
	if rec.UID != "" && ins.ID != rec.UID {
		// Not what was recorded: leave it, and let the record go.
		return nil
	}
	// Force stays off: an image a container still uses is reported, not yanked from under it.
	if _, err := api.ImageRemove(ctx, rec.Name, image.RemoveOptions{PruneChildren: true}); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove image %s: %w; stop what uses it and run occ dev down again", rec.Name, err)
	}
	return nil
}
