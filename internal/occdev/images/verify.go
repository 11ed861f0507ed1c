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
	// ConfigDigest is the config digest of the image the node runs, read in the node.
	ConfigDigest string
	// NodeManifest is the manifest the node runs: on the containerd store the registry's own
	// platform manifest, on the classic store one containerd wrote on import.
	NodeManifest string
}

// DigestError is an image that is absent, ambiguous or different in the node.
type DigestError struct {
	Pin  pins.Image
	Node string
	// Name is the containerd image name looked at.
	Name string
	// Local is the image the pinned pull produced (or the build made).
	Local Local
	// Found reports whether the node has the name at all; Reason says what is wrong with it.
	Found  bool
	Reason string
}

func (e *DigestError) Error() string {
	if !e.Found {
		return fmt.Sprintf("image %s is not in node %s as %s (%s), although the local image %s was imported: run occ dev up again, which imports what the node lacks", e.Pin, e.Node, e.Name, e.Reason, e.Local.ID)
	}
	return fmt.Sprintf("image %s in node %s (%s) is not the local image %s that the pinned pull produced (%s store): %s; the node does not hold the verified image. Something changed it in the engine or the node while occ worked: run occ dev up again, which imports it anew, and check that nothing re-tags images meanwhile", e.Pin, e.Node, e.Name, e.Local.ID, e.Local.Store, e.Reason)
}

// VerifyInNode proves each imported image is in the node as pulled (Local.Holds, on its staging
// name). It then tags repo@sha256:<pinned> on that image for the chart, checks that name too
// (an existing one is overwritten, so a stale earlier import cannot linger under it), and drops
// the staging name. An image the node held already (Imported.InNode) is checked under the chart's
// name alone. Every image is checked; all failures are reported together.
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
	moved := func(i int) bool { return v.errs[i] == nil && !opts.Images[i].InNode }

	// The staging name of each imported image must hold the content the pinned pull produced.
	if err := v.resolve(ctx, list, moved, func(im Imported) string { return im.Staging }, func(i int, row nodeImage, content nodeContent) {
		if ok, why := opts.Images[i].Holds(content); !ok {
			v.fail(i, opts.Images[i].Staging, true, why)
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
		if moved(i) {
			cmds = append(cmds, []string{"images", "tag", "--force", im.Staging, im.Pin.DigestReference()})
			tagged = append(tagged, i)
		}
	}
	after := list
	if len(tagged) > 0 {
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
		if after, err = parseImageList(ls.stdout); err != nil {
			return nil, fmt.Errorf("list images in node %s: %w", opts.Node, err)
		}
	}

	// The chart's name must hold the local image too: for an imported image, the very target the
	// staging name had.
	if err := v.resolve(ctx, after, func(i int) bool { return v.errs[i] == nil }, func(im Imported) string { return im.Pin.DigestReference() }, func(i int, final nodeImage, content nodeContent) {
		im := opts.Images[i]
		ok, why := im.Holds(content)
		if ok && !im.InNode && final.Digest != v.rows[i].Digest {
			ok, why = false, fmt.Sprintf("the chart's name points at %s, not at %s the import left", final.Digest, v.rows[i].Digest)
		}
		if !ok {
			v.fail(i, im.Pin.DigestReference(), true, why)
			return
		}
		v.out[i] = Verified{Pin: im.Pin, Reference: im.Pin.DigestReference(), ConfigDigest: content.Config, NodeManifest: content.Manifest}
	}, "the tag did not take"); err != nil {
		return nil, err
	}

	// Drop the staging names of the verified images, and record every verified image.
	cmds, tagged = nil, nil
	for i, im := range opts.Images {
		if moved(i) {
			cmds = append(cmds, []string{"images", "rm", im.Staging})
			tagged = append(tagged, i)
		}
	}
	res, err := n.batch(ctx, cmds)
	if err != nil {
		return nil, fmt.Errorf("remove the staging names in node %s: %w", opts.Node, err)
	}
	for j, i := range tagged {
		if err := res[j].err(opts.Node); err != nil {
			v.errs[i] = fmt.Errorf("remove staging name %s in node %s: %w", opts.Images[i].Staging, opts.Node, err)
		}
	}
	for i := range opts.Images {
		if v.errs[i] == nil && opts.Recorder != nil {
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

func (v *verification) fail(i int, name string, found bool, reason string) {
	im := v.images[i]
	v.errs[i] = &DigestError{Pin: im.Pin, Node: v.n.node, Name: name, Local: im.Local, Found: found, Reason: reason}
}

// resolve looks up, for each image that takes part, the name nameOf gives in list, follows all
// their targets in one pass, and hands each found one to check; a name that is absent fails
// with absent.
func (v *verification) resolve(ctx context.Context, list []nodeImage, takesPart func(int) bool, nameOf func(Imported) string, check func(i int, row nodeImage, content nodeContent), absent string) error {
	rows := map[int]nodeImage{}
	var targets []string
	for i, im := range v.images {
		if !takesPart(i) {
			continue
		}
		name := nameOf(im)
		row, found, err := v.n.find(list, name)
		switch {
		case err != nil:
			v.errs[i] = fmt.Errorf("verify image %s in node %s: %w", name, v.n.node, err)
		case !found:
			v.fail(i, name, false, absent)
		default:
			rows[i] = row
			targets = append(targets, row.Digest)
		}
	}
	if len(targets) == 0 {
		return nil
	}
	contents, failed, err := v.n.follow(ctx, targets)
	if err != nil {
		return fmt.Errorf("read image manifests in node %s: %w", v.n.node, err)
	}
	for i, row := range rows {
		if err := failed[row.Digest]; err != nil {
			v.errs[i] = fmt.Errorf("verify image %s in node %s: %w", nameOf(v.images[i]), v.n.node, err)
			continue
		}
		check(i, row, contents[row.Digest])
	}
	return nil
}
