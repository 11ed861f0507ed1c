package pinbundle

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/pins"
)

// Resolve checks the bundle file path the setting named setting selects, before anything runs:
// a regular file, planned by its absolute path (the state records it so), for a cluster occ
// creates (existing: an existing cluster pulls its images in its own nodes), and without a node
// image k3s selected by tag through the setting k3sSetting (a bundle holds images by digest). It
// reads nothing of the file: Take verifies it. An empty path is no bundle.
func Resolve(path, setting string, existing bool, k3s pins.Image, k3sSetting string) (string, error) {
	if path == "" {
		return "", nil
	}
	if err := option.RegularFile(path); err != nil {
		return "", &option.Error{Option: setting, Value: path, Rule: err.Error(), Fix: "name a file occ dev bundle create wrote, or leave it unset to pull and download"}
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", &option.Error{Option: setting, Value: path, Rule: err.Error(), Fix: "name the file by an absolute path"}
	}
	if existing {
		return "", &option.Error{Option: setting, Value: path, Rule: "loads the pinned images into the engine of the cluster occ creates, and --cluster-provider existing pulls them in its own nodes",
			Fix: "unset it, or use --cluster-provider k3d"}
	}
	if k3s.Digest == "" {
		return "", &option.Error{Option: k3sSetting, Value: k3s.String(), Rule: "is a tag, and a bundle holds images by digest",
			Fix: "give it by digest (as the bundle was made with it), or unset it"}
	}
	return abs, nil
}

// TakeOptions are the inputs of Take: what `occ dev up` takes from a bundle.
type TakeOptions struct {
	// Path is the bundle's file; Setting names the setting that gave it, which a refusal names.
	Path, Setting string
	// Docker, when set, is a Docker engine the images are loaded into, at Endpoint: it must keep
	// a loaded image under its registry digest, which only its containerd image store does.
	// Unset for an engine that always keeps it so (Podman), or for none.
	Docker   engine.Engine
	Endpoint string
	// Pins are what is taken from the bundle: every download of the pins but those Local names
	// (the pin keys of downloads a local file replaces), and each image of images.Pinned, for
	// Platform, the engine's.
	Pins     *pins.Set
	Local    []string
	Platform images.Platform
}

// Taken is a bundle that holds everything an `up` takes from it, verified whole and opened
// (Take).
type Taken struct {
	*Opened
	verified *Contents
	// images are the images of images.Pinned, by slot, as the bundle holds them for the engine's
	// platform.
	images []Image
}

// Take readies the bundle of opts before anything is created: the engine must keep a loaded
// image under its registry digest, the whole file is hashed (Verify), and it must hold every
// download and image taken from it, each image for the engine's platform. The first artifact it lacks is named
// with its digest (*MissingError).
func Take(ctx context.Context, opts TakeOptions) (*Taken, error) {
	if opts.Docker != nil {
		store, err := images.EngineStore(ctx, opts.Docker)
		if err != nil {
			return nil, err
		}
		if store == images.StoreClassic {
			return nil, &option.Error{Option: opts.Setting, Value: opts.Path,
				Rule: "loads the pinned images into the engine, and the Docker engine at " + opts.Endpoint + " keeps images in its classic store, which names a loaded image by its config alone, never by the pinned digest the cluster and its verification use",
				Fix:  "switch Docker's containerd image store on (daemon.json \"features\": {\"containerd-snapshotter\": true}; Docker Desktop: Settings, General, Use containerd for pulling and storing images), use Podman, or leave --bundle unset"}
		}
	}
	contents, err := Verify(ctx, opts.Path, nil)
	if err != nil {
		return nil, err
	}
	o, err := Open(opts.Path)
	if err != nil {
		return nil, err
	}
	t := &Taken{Opened: o, verified: contents}
	if err := t.take(opts); err != nil {
		o.Close()
		return nil, err
	}
	return t, nil
}

// take finds every download and image of opts in the bundle.
func (t *Taken) take(opts TakeOptions) error {
	for _, w := range wantedOf(opts.Pins) {
		if w.file != nil && !slices.Contains(opts.Local, w.key) && !t.Has(w.digest()) {
			return &MissingError{Path: t.Path, Digest: w.digest(), What: "the " + w.what + " " + w.reference()}
		}
	}
	pick := pickFor(opts.Platform)
	for _, img := range images.Pinned(opts.Pins) {
		if img.Image.Digest == "" {
			return fmt.Errorf("%s image %s is a tag, and a bundle holds images by digest", img.Title, img.Image)
		}
		bi, err := t.Image(img.Image.Name(), img.Image.Digest, pick)
		if err != nil {
			return fmt.Errorf("%s image: %w", img.Title, err)
		}
		t.images = append(t.images, bi)
	}
	return nil
}

// pickFor picks the index entry an engine of platform runs, as the engine itself would
// (images.BestFor); attestation entries never run anywhere.
func pickFor(platform images.Platform) func([]v1.Descriptor) int {
	return func(ds []v1.Descriptor) int {
		return images.BestFor(len(ds), platform, func(i int) (images.Platform, bool) {
			p := ds[i].Platform
			if p == nil {
				return images.Platform{}, false
			}
			return images.NormalisePlatform(p.OS, p.Architecture, p.Variant), true
		})
	}
}

// Archive is the image of slot as the bundle gives it to the engine (images.PresentOptions); nil
// without a bundle.
func (t *Taken) Archive(slot images.Slot) *images.Archive {
	if t == nil {
		return nil
	}
	img := t.images[slot]
	return &images.Archive{From: t.Name(), Size: img.Size(), Write: func(w io.Writer) error {
		return t.WriteArchive(w, img)
	}}
}

// Summary says what was verified, for the step's line.
func (t *Taken) Summary() string {
	return fmt.Sprintf("bundle %s verified: pins %s, %d artifacts for %v", t.Path, short(t.verified.Pins.Digest), len(t.verified.Artifacts), t.verified.Platforms)
}

// short is the first 12 characters of a hex digest.
func short(hex string) string {
	if len(hex) > 12 {
		return hex[:12]
	}
	return hex
}
