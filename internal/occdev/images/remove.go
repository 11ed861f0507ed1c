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
	ins, found, err := inspectRef(ctx, api, rec.Name)
	if err != nil || !found {
		return err
	}
	if rec.UID != "" && ins.ID != rec.UID {
		return nil
	}
	return untag(ctx, api, rec.Name)
}

// RemoveStagingTag removes a recorded staging tag. The tag's name is occ's own (derived from the
// cluster's name), so it is removed even if it no longer names the recorded image, but only while
// that image keeps another reference: removing the tag then only untags, and never deletes an
// image occ did not make.
func RemoveStagingTag(ctx context.Context, api client.APIClient, rec state.Object) error {
	if rec.Kind != KindStagingTag {
		return fmt.Errorf("remove staging tag: state entry %s is not a %s", rec, KindStagingTag)
	}
	ins, found, err := inspectRef(ctx, api, rec.Name)
	if err != nil || !found {
		return err
	}
	if ins.ID != rec.UID && len(ins.RepoTags)+len(ins.RepoDigests) < 2 {
		return fmt.Errorf("staging tag %s names image %s, not the recorded %s, and is its only reference; occ leaves it: remove it yourself (docker rmi %s)", rec.Name, ins.ID, rec.UID, rec.Name)
	}
	return untag(ctx, api, rec.Name)
}

func inspectRef(ctx context.Context, api client.APIClient, ref string) (image.InspectResponse, bool, error) {
	ins, err := api.ImageInspect(ctx, ref)
	if cerrdefs.IsNotFound(err) {
		return image.InspectResponse{}, false, nil
	}
	if err != nil {
		return image.InspectResponse{}, false, fmt.Errorf("inspect image %s: %w", ref, err)
	}
	return ins, true, nil
}

// untag removes one reference. Force stays off: an image a container still uses is reported,
// not yanked from under it.
func untag(ctx context.Context, api client.APIClient, ref string) error {
	if _, err := api.ImageRemove(ctx, ref, image.RemoveOptions{PruneChildren: true}); err != nil && !cerrdefs.IsNotFound(err) {
		return fmt.Errorf("remove image %s: %w; stop what uses it and run occ dev down again", ref, err)
	}
	return nil
}
