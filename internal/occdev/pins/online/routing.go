package online

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/openclaw/occ/internal/fsutil"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/pins"
)

// maxRoutingManifest bounds a routing manifest download (Envoy Gateway's is a few MB).
const maxRoutingManifest = 32 << 20

// RoutingResolved is a pin set whose routing controllers' images were resolved now.
type RoutingResolved struct {
	Set *pins.Set `json:"-"`
	// Manifests are the two manifests as downloaded and checked against their pins.
	Manifests []ResolvedArtifact `json:"manifests"`
	// Images are the images the manifests name, each resolved to its multi-platform index.
	Images []ResolvedImage `json:"images"`
	// DroppedNotes are the base's notes about the routing pins: they described the old values.
	DroppedNotes []pins.Note `json:"droppedNotes,omitempty"`
	Base         string      `json:"base"`
}

// ResolveRouting records in base's routing section the images its two release manifests name:
// each manifest is downloaded and must have its pinned sha256; every image it names (in a
// container, a flag, the environment or configuration; see images.FindImages) is taken as the
// manifest writes it (repository and tag) and resolved to the digest of its multi-platform index,
// which must hold every Required platform. A manifest image already named by digest is checked
// and kept. Every problem is refused at once.
func ResolveRouting(ctx context.Context, base *pins.Set, deps Deps) (*RoutingResolved, error) {
	if base.Routing == nil {
		return nil, fmt.Errorf("the pins (%s) have no routing section: add one (docs/pins.md shows its shape) to resolve its images", base.Source)
	}
	reg, err := newRegistry(deps)
	if err != nil {
		return nil, err
	}
	dl := downloader{transport: deps.transport()}
	set := *base
	routing := *base.Routing
	set.Routing = &routing
	res := &RoutingResolved{Base: base.Source}
	var refusals []error
	for _, c := range set.Routing.Controllers() {
		var buf bytes.Buffer
		sum, n, err := dl.hash(ctx, c.Manifest.URL, &fsutil.LimitWriter{W: &buf, Left: maxRoutingManifest, TooLarge: fmt.Errorf("the manifest is larger than %d bytes", maxRoutingManifest)})
		if err != nil {
			refusals = append(refusals, fmt.Errorf("%s.manifest: %w", c.Key, err))
			continue
		}
		if sum != c.Manifest.SHA256 {
			refusals = append(refusals, fmt.Errorf("%s.manifest %s has sha256 %s, not the pinned %s: the release changed its manifest, or the pin is of another release; pin the manifest you mean first", c.Key, redactURL(c.Manifest.URL), sum, c.Manifest.SHA256))
			continue
		}
		res.Manifests = append(res.Manifests, ResolvedArtifact{URL: redactURL(c.Manifest.URL), SHA256: sum, Size: n})
		found, err := images.FindImages(&buf)
		if err != nil {
			refusals = append(refusals, fmt.Errorf("%s.manifest: %w", c.Key, err))
			continue
		}
		var resolved []pins.Image
		for _, f := range found {
			img, err := pins.ParseImage(f.Image)
			if err != nil {
				refusals = append(refusals, fmt.Errorf("%s: %s: %w", c.Key, f, err))
				continue
			}
			if img.Tag == "" {
				refusals = append(refusals, fmt.Errorf("%s: %s names no tag; occ pins a routing image by the tag its manifest names, so this manifest cannot be pinned", c.Key, f))
				continue
			}
			if slices.ContainsFunc(resolved, func(r pins.Image) bool { return r.Name() == img.Name() && r.Tag == img.Tag }) {
				continue
			}
			got, err := pinIndex(ctx, reg, c.Key+".images", img, "check the manifest's image names")
			if err != nil {
				refusals = append(refusals, err)
				continue
			}
			resolved = append(resolved, got.image)
			res.Images = append(res.Images, ResolvedImage{Pin: c.Key + ".images", Reference: got.image.String(), Platforms: got.platforms})
		}
		if len(resolved) == 0 && len(found) == 0 {
			refusals = append(refusals, fmt.Errorf("%s.manifest names no image: it is not a controller's release manifest", c.Key))
		}
		c.Images = resolved
	}
	if len(refusals) > 0 {
		return nil, fmt.Errorf("cannot pin the routing controllers' images: %w", errors.Join(refusals...))
	}
	set.Notes = nil
	for _, n := range base.Notes {
		if n.Pin == pins.KeyRouting || strings.HasPrefix(n.Pin, pins.KeyRouting+".") {
			res.DroppedNotes = append(res.DroppedNotes, n)
			continue
		}
		set.Notes = append(set.Notes, n)
	}
	set.Source = ""
	res.Set = &set
	return res, nil
}

// Encode writes the set as a pin file, with a header saying how it was made.
func (r *RoutingResolved) Encode(now time.Time) ([]byte, error) {
	header := fmt.Sprintf(`Pinned artifacts for occ dev up, the routing controllers' images resolved.
Written by occ dev pins resolve --routing on %s from %s.
Use it with --pin-file or OCC_DEVELOPMENT_PIN_FILE; check it with occ dev pins verify --pin-file FILE.`,
		now.UTC().Format(time.DateOnly), r.Base)
	return pins.Encode(r.Set, header)
}
