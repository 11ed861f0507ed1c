package images

import (
	"context"
	"fmt"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/pins"
)

// ImageState is how an imported image compares with its pin.
type ImageState string

const (
	// ImageMatches: the node holds repo@sha256:<pinned> with the config of the pinned local image.
	ImageMatches ImageState = "matches"
	// ImageDiffers: the node's repo@sha256:<pinned> has another config than the pinned image.
	ImageDiffers ImageState = "differs"
	// ImageAbsent: the node has no repo@sha256:<pinned>.
	ImageAbsent ImageState = "absent"
	// ImageUnverified: the node has it, but the local pinned image is gone, so there is nothing
	// trustworthy to compare with.
	ImageUnverified ImageState = "unverified"
)

// ImageStatus is how one pinned image in a node compares with the local image pulled by its
// digest.
type ImageStatus struct {
	Pin   pins.Image
	State ImageState
	// Reference is the name looked up in the node (repo@sha256:<pinned>).
	Reference string
	// LocalID is the engine's image ID of the local pinned image, Store its store.
	LocalID string
	Store   Store
	// NodeManifest and NodeConfig are the manifest the node runs under Reference and its config.
	NodeManifest string
	NodeConfig   string
	Reason       string
}

// StatusOptions are the inputs of Status.
type StatusOptions struct {
	Engine engine.Engine
	Node   string
	Images []pins.Image
}

// Status compares each pinned image in the node with the local image pulled by that digest, by
// the identity the engine's store keeps (Local.Holds). It reads and changes nothing else.
// The tests of package images judge an import by it; `occ dev status` reports the cluster's images
// from their records instead (observe.ImageStatus).
func Status(ctx context.Context, opts StatusOptions) ([]ImageStatus, error) {
	n := nodeContainerd{eng: opts.Engine, node: opts.Node}
	list, err := n.list(ctx)
	if err != nil {
		return nil, fmt.Errorf("list images in node %s: %w", opts.Node, err)
	}
	// The node is one of the engine's containers: it runs the engine's platform, whose manifest
	// of a multi-platform image is the one to compare.
	platform, err := EnginePlatform(ctx, opts.Engine, "")
	if err != nil {
		return nil, err
	}
	out := make([]ImageStatus, 0, len(opts.Images))
	for _, pin := range opts.Images {
		st := ImageStatus{Pin: pin, Reference: pin.DigestReference()}
		content, found, err := n.resolve(ctx, list, st.Reference)
		if err != nil {
			return nil, fmt.Errorf("status of image %s: %w", pin, err)
		}
		st.NodeManifest, st.NodeConfig = content.Manifest, content.Config
		l, ierr := inspect(ctx, opts.Engine, pin, st.Reference, platform)
		switch {
		case ierr == nil:
			st.LocalID, st.Store = l.ID, l.Store
		case !engine.IsNotFound(ierr):
			return nil, fmt.Errorf("inspect local image %s: %w", st.Reference, ierr)
		}
		switch {
		case !found:
			st.State, st.Reason = ImageAbsent, "not imported into node "+opts.Node
		case st.LocalID == "":
			st.State, st.Reason = ImageUnverified, "the local image pulled by the pinned digest is gone, so there is nothing to compare with"
		default:
			if ok, why := l.Holds(content); ok {
				st.State = ImageMatches
			} else {
				st.State, st.Reason = ImageDiffers, "the node's image "+why
			}
		}
		out = append(out, st)
	}
	return out, nil
}
