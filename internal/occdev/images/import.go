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

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/state"
)

// Importer loads local images into a cluster's nodes; the k3d provider's Importer implements it.
type Importer interface {
	ClusterName() string
	// NodeContainer is the container whose containerd receives the images.
	NodeContainer() string
	// ImportImages loads the named local images (tags in the engine) in one pass.
	ImportImages(ctx context.Context, refs []string) error
}

// ImportOptions are the inputs of Import.
type ImportOptions struct {
	API      docker.API
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

// Import loads all images into the cluster in one pass (the k3d provider's importer). Each
// image first gets a staging tag on its verified image ID, recorded before it exists; the tags
// are removed from the engine afterwards, whatever happened, on a fresh bounded context. The
// result still has to pass VerifyInNode: k3d's success alone proves nothing about content.
func Import(ctx context.Context, opts ImportOptions) (_ []Imported, err error) {
	if len(opts.Images) == 0 {
		return nil, errors.New("import images: none given")
	}
	if opts.Recorder == nil {
		return nil, errors.New("import images: no Recorder; staging tags must be recorded before they exist")
	}
	cluster := opts.Importer.ClusterName()
	var staged []Imported
	defer func() {
		// Staging tags are removed whatever happened; a tag whose removal fails stays findable
		// from its cluster image record, whose remover tries again.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		for _, im := range staged {
			err = errors.Join(err, removeStagingTag(cctx, opts.API, im.Staging, im.ID))
		}
	}()
	var refs []string
	for _, l := range opts.Images {
		if err := CheckRepoDigest(l); err != nil {
			return nil, err
		}
		im := Imported{Local: l, Staging: StagingTag(l.Pin, cluster)}
		if err := opts.Recorder.Record(clusterRecord(l.Pin, "")); err != nil {
			return nil, fmt.Errorf("record the import of %s before staging it: %w", l.Pin, err)
		}
		staged = append(staged, im)
		// Tagging the image ID, not a name, stages exactly the image that was checked.
		if err := opts.API.ImageTag(ctx, l.ID, im.Staging); err != nil {
			return nil, fmt.Errorf("tag %s (%s) as %s for the import: %w", l.Pin, l.ID, im.Staging, err)
		}
		refs = append(refs, im.Staging)
	}
	emit := func(status string, done bool) {
		if opts.Progress == nil {
			return
		}
		for _, im := range staged {
			ev := Event{Image: im.Pin.String(), Status: status, Total: im.Size}
			if done {
				ev.Current = im.Size
			}
			opts.Progress(ev)
		}
	}
	emit("importing", false)
	pending := staged
	for attempt := 1; ; attempt++ {
		refs := make([]string, 0, len(pending))
		for _, im := range pending {
			refs = append(refs, im.Staging)
		}
		ierr := opts.Importer.ImportImages(ctx, refs)
		// The node is the authority, whatever the importer says: an importer can report a
		// failure for an import that happened (a stream that broke after ctr had what it
		// needed), or success for one that did not (k3d's own direct mode does both).
		lacking, lerr := nodeLacks(ctx, opts.API, opts.Importer.NodeContainer(), pending)
		if lerr != nil {
			return nil, errors.Join(ierr, lerr)
		}
		if len(lacking) == 0 {
			if ierr != nil || attempt > 1 {
				emit(fmt.Sprintf("imported (on attempt %d; the node holds every image)", attempt), true)
			} else {
				emit("imported", true)
			}
			return staged, nil
		}
		if attempt == importAttempts || ctx.Err() != nil {
			var names []string
			for _, im := range lacking {
				names = append(names, im.Staging+" ("+im.Pin.String()+")")
			}
			return nil, errors.Join(ierr, ctx.Err(), fmt.Errorf("after %d imports the node %s lacks %s", attempt, opts.Importer.NodeContainer(), strings.Join(names, ", ")))
		}
		pending = lacking
	}
}

// importAttempts bounds the imports of one step: enough to ride out k3d's exec race, few enough
// that a node that never takes an image fails the step promptly.
const importAttempts = 3

// nodeLacks returns the staged images the node does not list under their staging names. Whether
// the listed content is the checked content is VerifyInNode's question.
func nodeLacks(ctx context.Context, api docker.API, node string, staged []Imported) ([]Imported, error) {
	list, err := nodeContainerd{api: api, node: node}.list(ctx)
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
