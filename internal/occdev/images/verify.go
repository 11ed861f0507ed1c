package images

import (
	"context"
	"errors"
	"fmt"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/pins"
)

// VerifyOptions are the inputs of VerifyInNode.
type VerifyOptions struct {
	Engine engine.Engine
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
	n := nodeContainerd{eng: opts.Engine, node: opts.Node}
	list, err := n.list(ctx)
	if err != nil {
		return nil, fmt.Errorf("list images in node %s: %w", opts.Node, err)
	}
	v := verification{n: n, images: opts.Images, errs: make([]error, len(opts.Images)), rows: make([]nodeImage, len(opts.Images)), out: make([]Verified, len(opts.Images))}
	if err := v.checkStaging(ctx, list); err != nil {
		return nil, err
	}
	after, err := v.tagChartNames(ctx, list)
	if err != nil {
		return nil, err
	}
	if err := v.checkChartNames(ctx, after); err != nil {
		return nil, err
	}
	if err := v.dropStaging(ctx); err != nil {
		return nil, err
	}
	v.record(opts.Recorder)
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

// moved says image i was imported under its staging name (not held by the node already) and
// has not failed: its names are still to be checked, tagged or dropped.
func (v *verification) moved(i int) bool { return v.errs[i] == nil && !v.images[i].InNode }

// checkStaging requires the staging name of each imported image to hold the content the pinned
// pull produced; list is the node's image list.
func (v *verification) checkStaging(ctx context.Context, list []nodeImage) error {
	return v.resolve(ctx, list, v.moved, func(im Imported) string { return im.Staging }, func(i int, row nodeImage, content nodeContent) {
		if ok, why := v.images[i].Holds(content); !ok {
			v.fail(i, v.images[i].Staging, true, why)
			return
		}
		v.rows[i] = row
	}, "the import left no image of that name")
}

// tagChartNames tags the chart's name on each image verified under its staging name, then
// lists the node's images again, in the same exec. It returns that list (list itself when
// nothing was tagged).
func (v *verification) tagChartNames(ctx context.Context, list []nodeImage) ([]nodeImage, error) {
	var cmds [][]string
	var tagged []int
	for i, im := range v.images {
		if v.moved(i) {
			cmds = append(cmds, []string{"images", "tag", "--force", im.Staging, im.Pin.DigestReference()})
			tagged = append(tagged, i)
		}
	}
	if len(tagged) == 0 {
		return list, nil
	}
	node := v.n.node
	res, err := v.n.batch(ctx, append(cmds, []string{"images", "ls"}))
	if err != nil {
		return nil, fmt.Errorf("tag the verified images in node %s: %w", node, err)
	}
	for j, i := range tagged {
		if err := res[j].err(node); err != nil {
			v.errs[i] = fmt.Errorf("tag %s in node %s: %w", v.images[i].Pin.DigestReference(), node, err)
		}
	}
	ls := res[len(tagged)]
	if err := ls.err(node); err != nil {
		return nil, fmt.Errorf("list images in node %s: %w", node, err)
	}
	after, err := parseImageList(ls.stdout)
	if err != nil {
		return nil, fmt.Errorf("list images in node %s: %w", node, err)
	}
	return after, nil
}

// checkChartNames requires the chart's name to hold the local image too (for an imported image,
// the very target the staging name had), and makes the result of each image that does; after
// is the node's image list once tagged.
func (v *verification) checkChartNames(ctx context.Context, after []nodeImage) error {
	return v.resolve(ctx, after, func(i int) bool { return v.errs[i] == nil }, func(im Imported) string { return im.Pin.DigestReference() }, func(i int, final nodeImage, content nodeContent) {
		im := v.images[i]
		ok, why := im.Holds(content)
		if ok && !im.InNode && final.Digest != v.rows[i].Digest {
			ok, why = false, fmt.Sprintf("the chart's name points at %s, not at %s the import left", final.Digest, v.rows[i].Digest)
		}
		if !ok {
			v.fail(i, im.Pin.DigestReference(), true, why)
			return
		}
		v.out[i] = Verified{Pin: im.Pin, Reference: im.Pin.DigestReference(), ConfigDigest: content.Config, NodeManifest: content.Manifest}
	}, "the tag did not take")
}

// dropStaging removes the staging names of the verified images, in one exec.
func (v *verification) dropStaging(ctx context.Context) error {
	var cmds [][]string
	var dropped []int
	for i, im := range v.images {
		if v.moved(i) {
			cmds = append(cmds, []string{"images", "rm", im.Staging})
			dropped = append(dropped, i)
		}
	}
	res, err := v.n.batch(ctx, cmds)
	if err != nil {
		return fmt.Errorf("remove the staging names in node %s: %w", v.n.node, err)
	}
	for j, i := range dropped {
		if err := res[j].err(v.n.node); err != nil {
			v.errs[i] = fmt.Errorf("remove staging name %s in node %s: %w", v.images[i].Staging, v.n.node, err)
		}
	}
	return nil
}

// record hands the cluster record of every verified image to recorder, when there is one.
func (v *verification) record(recorder Recorder) {
	for i := range v.images {
		if v.errs[i] == nil && recorder != nil {
			if err := recorder.Record(clusterRecord(v.out[i].Pin, v.out[i].ConfigDigest)); err != nil {
				v.errs[i] = fmt.Errorf("record verified image %s: %w", v.out[i].Reference, err)
			}
		}
	}
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
