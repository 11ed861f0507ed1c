package images

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/state"
)

// Importer loads local images into a cluster's nodes; the k3d provider's Importer implements it.
type Importer interface {
	ClusterName() string
	// NodeContainer is the container whose containerd receives the images.
	NodeContainer() string
	// ImportImages loads the named local images (tags in the engine) in one pass, only the
	// content of one platform (Pass).
	ImportImages(ctx context.Context, refs []string, pass Pass) error
}

// Pass is what one pass of an import moves of each image: one platform, the node's. Moving only
// it is what makes a multi-platform image importable from the containerd store, whose save names
// every platform's manifest but carries only those the engine pulled.
type Pass struct {
	// Platform is the platform the node's ctr keeps of what arrives (os/arch[/variant]); empty
	// leaves ctr to its default, the node's own.
	Platform string
	// Save, when set, is the one platform the engine saves of each image (API 1.48 and later):
	// the manifest Local.Manifest names. Unset, the engine saves each image's whole target.
	Save *ocispec.Platform
}

// passOf is the pass an image travels in: the platform of the manifest the engine saves, else
// the platform the image's config states.
func passOf(l Local) Pass {
	switch s := l.ManifestPlatform; {
	case s != nil:
		return Pass{Save: s, Platform: Platform{OS: s.OS, Architecture: s.Architecture, Variant: s.Variant}.String()}
	case l.Platform.OS != "" && l.Platform.Architecture != "":
		return Pass{Platform: l.Platform.String()}
	}
	return Pass{}
}

// key tells passes apart: images of equal passes travel in one stream.
func (p Pass) key() string {
	if p.Save == nil {
		return p.Platform
	}
	return p.Platform + " save " + Platform{OS: p.Save.OS, Architecture: p.Save.Architecture, Variant: p.Save.Variant}.String()
}

// ImportOptions are the inputs of Import.
type ImportOptions struct {
	Engine   engine.Engine
	Importer Importer
	// Images are the checked local images (Present, then CheckRepoDigest).
	Images []Local
	// Recorder receives each image's cluster record (TypeClusterImage) before its staging
	// tag is created; the cluster image's remover also removes a staging tag left by a crash.
	Recorder Recorder
	Progress func(Event)
}

// Imported is an image loaded into the node under its staging name, not yet verified.
type Imported struct {
	Local
	// Staging is the temporary name the image travelled under, as containerd names it.
	Staging string
	// InNode reports an image the node held already under the chart's name, as this local image
	// (Local.Holds): nothing of it moved, and it has no staging name.
	InNode bool
}

// stagingRepository prefixes staging tags. A registry-like first component keeps containerd
// from filing the name under docker.io, so the node holds exactly the name occ looks for.
const stagingRepository = "occ.local/import/"

// cleanupTimeout bounds the removal of staging tags, on a fresh context so that a cancelled
// import still removes them.
const cleanupTimeout = 30 * time.Second

// StagingTag is the temporary tag an image is imported under: k3d imports local images by tag,
// and an image pulled by digest has none. The name is derived from the pinned reference and the
// cluster, so the cluster image's record is enough to find it again.
func StagingTag(pin pins.Image, cluster string) string {
	sum := sha256.Sum256([]byte(pin.DigestReference()))
	return stagingRepository + path.Base(pin.Repository) + "-" + hex.EncodeToString(sum[:4]) + ":" + cluster
}

// clusterRecord is the record of an image imported into the recorded cluster
// (TypeClusterImage): repository, pinned digest and, once verified, the config digest the
// node holds.
func clusterRecord(pin pins.Image, config string) state.Object {
	return state.Object{Type: TypeClusterImage, Name: pin.Name(), Digest: pin.Digest, ID: config}
}

// Import loads the images into the cluster, one pass per platform (the k3d provider's
// importer; normally one pass in all). An image the node already holds under the chart's name as
// this local image (an up onto the cluster of an earlier run, a repeated reload) is not moved
// again. Each other image first gets a staging tag on its verified image ID, recorded before it
// exists; the tags are removed from the engine afterwards, whatever happened, on a fresh bounded
// context. The result still has to pass VerifyInNode: k3d's success alone proves nothing about
// content.
func Import(ctx context.Context, opts ImportOptions) (_ []Imported, err error) {
	if len(opts.Images) == 0 {
		return nil, errors.New("import images: none given")
	}
	if opts.Recorder == nil {
		return nil, errors.New("import images: no Recorder; staging tags must be recorded before they exist")
	}
	cluster := opts.Importer.ClusterName()
	node := nodeContainerd{eng: opts.Engine, node: opts.Importer.NodeContainer()}
	held, err := node.holding(ctx, opts.Images)
	if err != nil {
		return nil, err
	}
	r := &importRun{opts: opts, cluster: cluster}
	defer func() {
		// Staging tags are removed whatever happened; a tag whose removal fails stays findable
		// from its cluster image record, whose remover tries again.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		for _, im := range r.staged {
			err = errors.Join(err, removeStagingTag(cctx, opts.Engine, im.Staging, im.ID))
		}
	}()
	if err := r.stage(ctx, held); err != nil {
		return nil, err
	}
	var kept []Imported
	for _, im := range r.out {
		if im.InNode {
			kept = append(kept, im)
		}
	}
	r.emit(kept, "already in the node as verified: nothing moved (0 B)", true)
	if len(r.staged) == 0 {
		return r.out, nil
	}
	r.emit(r.staged, "importing", false)
	if err := r.importStaged(ctx); err != nil {
		return nil, err
	}
	return r.out, nil
}

// importRun is one Import: the images in the order given, and those of them staged to move.
type importRun struct {
	opts ImportOptions
	// cluster names the staging tags.
	cluster string
	// out are the images, each held by the node already or staged; staged are those that move,
	// each under the staging tag it has, or is about to have, in the engine.
	out, staged []Imported
}

// stage records each image's import and, unless the node holds it already (held, by index),
// tags its checked image ID with its staging tag.
func (r *importRun) stage(ctx context.Context, held []bool) error {
	for i, l := range r.opts.Images {
		if err := CheckRepoDigest(l); err != nil {
			return err
		}
		if err := r.opts.Recorder.Record(clusterRecord(l.Pin, "")); err != nil {
			return fmt.Errorf("record the import of %s before staging it: %w", l.Pin, err)
		}
		if held[i] {
			r.out = append(r.out, Imported{Local: l, InNode: true})
			continue
		}
		im := Imported{Local: l, Staging: StagingTag(l.Pin, r.cluster)}
		r.staged = append(r.staged, im)
		// Tagging the image ID, not a name, stages exactly the image that was checked.
		if err := r.opts.Engine.Tag(ctx, l.ID, im.Staging); err != nil {
			return fmt.Errorf("tag %s (%s) as %s for the import: %w", l.Pin, l.ID, im.Staging, err)
		}
		r.out = append(r.out, im)
	}
	return nil
}

// emit reports status for each of ims, done or not, when Import has a Progress.
func (r *importRun) emit(ims []Imported, status string, done bool) {
	if r.opts.Progress == nil {
		return
	}
	for _, im := range ims {
		ev := Event{Image: im.Pin.String(), Status: status, Total: im.Size}
		if done {
			ev.Current = im.Size
		}
		r.opts.Progress(ev)
	}
}

// importStaged imports the staged images until the node holds every one, importing again what
// it lacks, up to importAttempts imports in all.
func (r *importRun) importStaged(ctx context.Context) error {
	node := r.opts.Importer.NodeContainer()
	pending := r.staged
	for attempt := 1; ; attempt++ {
		ierr := importPasses(ctx, r.opts.Importer, pending)
		// The node is the authority, whatever the importer says: an importer can report a
		// failure for an import that happened (a stream that broke after ctr had what it
		// needed), or success for one that did not (k3d's own direct mode does both).
		lacking, lerr := nodeLacks(ctx, r.opts.Engine, node, pending)
		if lerr != nil {
			return errors.Join(ierr, lerr)
		}
		if len(lacking) == 0 {
			if ierr != nil || attempt > 1 {
				r.emit(r.staged, fmt.Sprintf("imported (on attempt %d; the node holds every image)", attempt), true)
			} else {
				r.emit(r.staged, "imported", true)
			}
			return nil
		}
		if attempt == importAttempts || ctx.Err() != nil {
			var names []string
			for _, im := range lacking {
				names = append(names, im.Staging+" ("+im.Pin.String()+")")
			}
			return errors.Join(ierr, ctx.Err(), fmt.Errorf("after %d imports the node %s lacks %s", attempt, node, strings.Join(names, ", ")))
		}
		pending = lacking
	}
}

// importPasses hands the images to the importer, one pass per platform in the order the images
// come, and reports every pass's failure.
func importPasses(ctx context.Context, importer Importer, ims []Imported) error {
	var keys []string
	passes, refs := map[string]Pass{}, map[string][]string{}
	for _, im := range ims {
		p := passOf(im.Local)
		k := p.key()
		if _, ok := passes[k]; !ok {
			keys = append(keys, k)
			passes[k] = p
		}
		refs[k] = append(refs[k], im.Staging)
	}
	var errs []error
	for _, k := range keys {
		errs = append(errs, importer.ImportImages(ctx, refs[k], passes[k]))
	}
	return errors.Join(errs...)
}

// holding reports, for each image, whether the node holds it already under the chart's name as
// this local image (Local.Holds). A node that cannot be read yet holds nothing: the import then
// moves every image, and its own checks report the node.
func (n nodeContainerd) holding(ctx context.Context, ls []Local) ([]bool, error) {
	held := make([]bool, len(ls))
	list, err := n.list(ctx)
	if err != nil {
		return held, nil
	}
	rows := map[int]string{}
	var targets []string
	for i, l := range ls {
		row, found, err := n.find(list, l.Pin.DigestReference())
		if err != nil || !found {
			continue
		}
		rows[i] = row.Digest
		targets = append(targets, row.Digest)
	}
	if len(targets) == 0 {
		return held, nil
	}
	contents, _, err := n.follow(ctx, targets)
	if err != nil {
		return nil, fmt.Errorf("read the images node %s holds: %w", n.node, err)
	}
	for i, target := range rows {
		if c, ok := contents[target]; ok {
			held[i], _ = ls[i].Holds(c)
		}
	}
	return held, nil
}

// importAttempts bounds the imports of one step: enough to ride out k3d's exec race, few enough
// that a node that never takes an image fails the step promptly.
const importAttempts = 3

// nodeLacks returns the staged images the node does not list under their staging names. Whether
// the listed content is the checked content is VerifyInNode's question.
func nodeLacks(ctx context.Context, eng engine.Engine, node string, staged []Imported) ([]Imported, error) {
	list, err := nodeContainerd{eng: eng, node: node}.list(ctx)
	if err != nil {
		return nil, fmt.Errorf("list images in node %s: %w", node, err)
	}
	names := map[string]bool{}
	for _, row := range list {
		names[row.Name] = true
	}
	var lacking []Imported
	for _, im := range staged {
		if !names[im.Staging] {
			lacking = append(lacking, im)
		}
	}
	return lacking, nil
}
