package images

import (
	"context"
	"errors"
	"fmt"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/pins"
)

// VerifyOptions are the inputs of VerifyInNode.
type VerifyOptions struct {
	API docker.API
	// Node is the container whose containerd holds the imported images.
	Node   string
	Images []Imported
	// Recorder, when set, receives each verified image's cluster record with the config digest
	// found in the node.
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
// The images go through these checks together, phase by phase, each phase one exec in the node
// (nodeContainerd.batch): the node's image list, the staging names' manifests, the chart names'
// tags with the list after them, the chart names' manifests, the removal of the staging names.
// An image that fails a phase takes no further part; each check reads and changes only its own
// image's names. The result keeps the order of opts.Images.
func VerifyInNode(ctx context.Context, opts VerifyOptions) ([]Verified, error) {
	n := nodeContainerd{api: opts.API, node: opts.Node}
	list, err := n.list(ctx)
	if err != nil {
		return nil, fmt.Errorf("list images in node %s: %w", opts.Node, err)
	}
	v := verification{n: n, images: opts.Images, errs: make([]error, len(opts.Images)), rows: make([]nodeImage, len(opts.Images)), out: make([]Verified, len(opts.Images))}

	// The staging name of each image must hold the content the pinned pull produced.
	if err := v.resolve(ctx, list, func(im Imported) string { return im.Staging }, func(i int, row nodeImage, config string) {
		im := opts.Images[i]
		if config != im.ID {
			v.fail(i, im.Staging, config, "the imported content differs")
			return
		}
		v.rows[i] = row
	}, "the import left no image of that name"); err != nil {
		return nil, err
	}

	// Tag the chart's name on each verified image, then list the node's images again.
	var cmds [][]string
	var tagged []int
	for i, im := range opts.Images {
		if v.errs[i] == nil {
			cmds = append(cmds, []string{"images", "tag", "--force", im.Staging, im.Pin.DigestReference()})
			tagged = append(tagged, i)
		}
	}
	if len(tagged) == 0 {
		return nil, errors.Join(v.errs...)
	}
	res, err := n.batch(ctx, append(cmds, []string{"images", "ls"}))
	if err != nil {
		return nil, fmt.Errorf("tag the verified images in node %s: %w", opts.Node, err)
	}
	for j, i := range tagged {
		if err := res[j].err(opts.Node); err != nil {
			v.errs[i] = fmt.Errorf("tag %s in node %s: %w", opts.Images[i].Pin.DigestReference(), opts.Node, err)
		}
	}
	ls := res[len(tagged)]
	if err := ls.err(opts.Node); err != nil {
		return nil, fmt.Errorf("list images in node %s: %w", opts.Node, err)
	}
	after, err := parseImageList(ls.stdout)
	if err != nil {
		return nil, fmt.Errorf("list images in node %s: %w", opts.Node, err)
	}

	// The chart's name must point at the very target the staging name had, with its config.
	if err := v.resolve(ctx, after, func(im Imported) string { return im.Pin.DigestReference() }, func(i int, final nodeImage, config string) {
		im := opts.Images[i]
		if config != im.ID || final.Digest != v.rows[i].Digest {
			v.fail(i, im.Pin.DigestReference(), config, "the chart's name points at other content")
			return
		}
		v.out[i] = Verified{Pin: im.Pin, Reference: im.Pin.DigestReference(), ConfigDigest: config, NodeManifest: final.Digest}
	}, "the tag did not take"); err != nil {
		return nil, err
	}

	// Drop the staging names of the verified images, and record them.
	cmds, tagged = nil, nil
	for i, im := range opts.Images {
		if v.errs[i] == nil {
			cmds = append(cmds, []string{"images", "rm", im.Staging})
			tagged = append(tagged, i)
		}
	}
	res, err = n.batch(ctx, cmds)
	if err != nil {
		return nil, fmt.Errorf("remove the staging names in node %s: %w", opts.Node, err)
	}
	for j, i := range tagged {
		if err := res[j].err(opts.Node); err != nil {
			v.errs[i] = fmt.Errorf("remove staging name %s in node %s: %w", opts.Images[i].Staging, opts.Node, err)
			continue
		}
		if opts.Recorder != nil {
			if err := opts.Recorder.Record(clusterRecord(v.out[i].Pin, v.out[i].ConfigDigest)); err != nil {
				v.errs[i] = fmt.Errorf("record verified image %s: %w", v.out[i].Reference, err)
			}
		}
	}
	if err := errors.Join(v.errs...); err != nil {
		return nil, err
	}
	return v.out, nil
}

// verification is the state of one VerifyInNode: per image, its failure (which ends its part),
// the staging name's row, and the result.
type verification struct {
	n      nodeContainerd
	images []Imported
	errs   []error
	rows   []nodeImage
	out    []Verified
}

func (v *verification) fail(i int, name, nodeConfig, reason string) {
	im := v.images[i]
	v.errs[i] = &DigestError{Pin: im.Pin, Node: v.n.node, Name: name, LocalID: im.ID, NodeConfig: nodeConfig, Reason: reason}
}

// resolve looks up, for each image still in the check, the name nameOf gives in list, reads the
// config digests of all their targets in one pass, and hands each found one to check; a name
// that is absent fails with absent.
func (v *verification) resolve(ctx context.Context, list []nodeImage, nameOf func(Imported) string, check func(i int, row nodeImage, config string), absent string) error {
	rows := map[int]nodeImage{}
	var targets []string
	for i, im := range v.images {
		if v.errs[i] != nil {
			continue
		}
		name := nameOf(im)
		row, found, err := v.n.find(list, name)
		switch {
		case err != nil:
			v.errs[i] = fmt.Errorf("verify image %s in node %s: %w", name, v.n.node, err)
		case !found:
			v.fail(i, name, "", absent)
		default:
			rows[i] = row
			targets = append(targets, row.Digest)
		}
	}
	if len(targets) == 0 {
		return nil
	}
	configs, failed, err := v.n.configDigests(ctx, targets)
	if err != nil {
		return fmt.Errorf("read image manifests in node %s: %w", v.n.node, err)
	}
	for i, row := range rows {
		if err := failed[row.Digest]; err != nil {
			v.errs[i] = fmt.Errorf("verify image %s in node %s: %w", nameOf(v.images[i]), v.n.node, err)
			continue
		}
		check(i, row, configs[row.Digest])
	}
	return nil
}
