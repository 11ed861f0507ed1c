package images

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/docker/docker/client"

	"github.com/openclaw/occ/internal/occdev/pins"
)

// VerifyOptions are the inputs of VerifyInNode.
type VerifyOptions struct {
	API client.APIClient
	// Node is the container whose containerd holds the imported images.
	Node   string
	Images []Imported
	// Recorder, when set, receives each verified image's cluster record with the config digest
	// found in the node, from the concurrent checks (*state.Dir is safe for that).
	Recorder Recorder
}

// Verified is an image proven to be in the node as the pinned pull produced it, under the
// reference the chart uses.
type Verified struct {
	Pin pins.Image
	// Reference is repo@sha256:<pinned>, the name tagged in the node for the chart (pullPolicy
	// Never).
	Reference string
	// ConfigDigest is the image's config digest in the node, equal to the local image ID.
	ConfigDigest string
	// NodeManifest is the manifest digest containerd wrote on import (not the pinned one: the
	// registry manifest does not survive docker save).
	NodeManifest string
}

// DigestError is an image that is absent, ambiguous or different in the node.
type DigestError struct {
	Pin  pins.Image
	Node string
	// Name is the containerd image name looked at.
	Name string
	// LocalID is the image ID the pinned pull produced; NodeConfig what the node holds ("" when
	// absent).
	LocalID    string
	NodeConfig string
	Reason     string
}

func (e *DigestError) Error() string {
	if e.NodeConfig == "" {
		return fmt.Sprintf("image %s is not in node %s as %s (%s), although the local image %s was imported: run occ dev down and occ dev up again", e.Pin, e.Node, e.Name, e.Reason, e.LocalID)
	}
	return fmt.Sprintf("image %s in node %s (%s) has config digest %s, but the local image the pinned pull produced is %s: the node does not hold the verified image (%s); run occ dev down and occ dev up again, and check nothing re-tags images in the engine meanwhile", e.Pin, e.Node, e.Name, e.NodeConfig, e.LocalID, e.Reason)
}

// VerifyInNode proves each imported image is in the node as pulled: the config digest of its
// staging name in the node's containerd must equal the local image ID. It then tags
// repo@sha256:<pinned> on that image for the chart, checks that name too (an existing one is
// overwritten, so a stale earlier import cannot linger under it), and drops the staging name.
// Every image is checked; all failures are reported together.
//
// The images are verified side by side: each check reads and changes only its own image's
// names in the node (its staging name and its pinned reference), so the checks need no order
// among them. The result keeps the order of opts.Images.
func VerifyInNode(ctx context.Context, opts VerifyOptions) ([]Verified, error) {
	n := nodeContainerd{api: opts.API, node: opts.Node}
	list, err := n.list(ctx)
	if err != nil {
		return nil, fmt.Errorf("list images in node %s: %w", opts.Node, err)
	}
	verified := make([]Verified, len(opts.Images))
	errs := make([]error, len(opts.Images))
	var wg sync.WaitGroup
	for i, im := range opts.Images {
		wg.Go(func() {
			v, err := verifyOne(ctx, n, list, im)
			if err == nil && opts.Recorder != nil {
				if rerr := opts.Recorder.Record(clusterRecord(v.Pin, v.ConfigDigest)); rerr != nil {
					err = fmt.Errorf("record verified image %s: %w", v.Reference, rerr)
				}
			}
			verified[i], errs[i] = v, err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return verified, nil
}

func verifyOne(ctx context.Context, n nodeContainerd, list []nodeImage, im Imported) (Verified, error) {
	fail := func(name, nodeConfig, reason string) (Verified, error) {
		return Verified{}, &DigestError{Pin: im.Pin, Node: n.node, Name: name, LocalID: im.ID, NodeConfig: nodeConfig, Reason: reason}
	}
	row, config, found, err := n.resolve(ctx, list, im.Staging)
	switch {
	case err != nil:
		return Verified{}, fmt.Errorf("verify image %s in node %s: %w", im.Pin, n.node, err)
	case !found:
		return fail(im.Staging, "", "the import left no image of that name")
	case config != im.ID:
		return fail(im.Staging, config, "the imported content differs")
	}
	ref := im.Pin.DigestReference()
	if _, err := n.ctr(ctx, "images", "tag", "--force", im.Staging, ref); err != nil {
		return Verified{}, fmt.Errorf("tag %s in node %s: %w", ref, n.node, err)
	}
	after, err := n.list(ctx)
	if err != nil {
		return Verified{}, fmt.Errorf("list images in node %s: %w", n.node, err)
	}
	final, finalConfig, found, err := n.resolve(ctx, after, ref)
	switch {
	case err != nil:
		return Verified{}, fmt.Errorf("verify image %s in node %s: %w", ref, n.node, err)
	case !found:
		return fail(ref, "", "the tag did not take")
	case finalConfig != im.ID || final.Digest != row.Digest:
		return fail(ref, finalConfig, "the chart's name points at other content")
	}
	if _, err := n.ctr(ctx, "images", "rm", im.Staging); err != nil {
		return Verified{}, fmt.Errorf("remove staging name %s in node %s: %w", im.Staging, n.node, err)
	}
	return Verified{Pin: im.Pin, Reference: ref, ConfigDigest: finalConfig, NodeManifest: final.Digest}, nil
}
