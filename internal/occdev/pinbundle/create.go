package pinbundle

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/openclaw/occ/internal/fsutil"
	"github.com/openclaw/occ/internal/occdev/artifacts"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/pins/online"
	"github.com/openclaw/occ/internal/progress"
)

// CreateOptions are the inputs of Create.
type CreateOptions struct {
	// Pins is the pin set to bundle.
	Pins *pins.Set
	// Platforms are the platforms whose image content the bundle holds; at least one.
	Platforms []v1.Platform
	// Out is the bundle file. Its partial directory, Out+".partial", keeps what was fetched
	// and verified across interrupted runs and is removed once the file is written.
	Out string
	// Force replaces an existing Out (atomically); without it an existing Out is refused.
	Force bool
	// Deps carry the registry and download requests.
	Deps online.Deps
	// Progress receives a step per artifact with the bytes it moves.
	Progress progress.Sink
}

// ExistsError is a bundle file that is already there and was not to be replaced.
type ExistsError struct{ Path string }

func (e *ExistsError) Error() string {
	return fmt.Sprintf("bundle %s already exists; choose another --out, or pass --force to replace it", e.Path)
}

// PartialDir is where Create keeps the verified blobs of the bundle out until it is written.
func PartialDir(out string) string { return out + ".partial" }

// Create fetches every artifact of the pin set, verifies each against its pin and writes the
// bundle file. The whole plan is checked first — every pinned image is a multi-platform index
// holding every chosen platform — before any layer is downloaded. What a run fetched and
// verified stays in the partial directory, so a run after an interruption fetches only the rest.
func Create(ctx context.Context, opts CreateOptions) (*Contents, error) {
	if len(opts.Platforms) == 0 {
		return nil, errors.New("no platform chosen; pass --platform, for example linux/amd64")
	}
	if !opts.Force {
		if _, err := os.Lstat(opts.Out); err == nil {
			return nil, &ExistsError{Path: opts.Out}
		}
	}
	pinDigest, err := opts.Pins.Digest()
	if err != nil {
		return nil, err
	}
	dir := layoutDir{root: PartialDir(opts.Out)}
	if err := os.MkdirAll(filepath.Join(dir.root, filepath.FromSlash(blobsDir)), 0o755); err != nil {
		return nil, fmt.Errorf("create the partial bundle directory: %w", err)
	}
	puller, err := opts.Deps.Puller()
	if err != nil {
		return nil, err
	}
	c := &creator{opts: opts, dir: dir, puller: puller}
	contents, err := c.create(ctx, pinDigest)
	if err != nil && ctx.Err() != nil {
		// Whatever failed, the cause is the interruption, and the fix is to run again.
		return nil, fmt.Errorf("bundle %s: interrupted (%w); run the same create again to resume: %s keeps what was fetched and verified", opts.Out, context.Cause(ctx), dir.root)
	}
	return contents, err
}

// create fetches, verifies and packs; Create has checked the options.
func (c *creator) create(ctx context.Context, pinDigest string) (*Contents, error) {
	opts, dir := c.opts, c.dir
	contents := &Contents{SchemaVersion: SchemaVersion, Pins: PinSet{Digest: pinDigest, Source: opts.Pins.SourceName()}}
	for _, p := range opts.Platforms {
		contents.Platforms = append(contents.Platforms, platformString(p))
	}

	want := wantedOf(opts.Pins)
	var plans []*imagePlan
	err := opts.Progress.Step("read the pinned indexes", "", func(rep progress.Reporter) error {
		var errs []error
		for _, w := range want {
			if w.image == nil {
				continue
			}
			p, err := c.planImage(ctx, w)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			plans = append(plans, p)
		}
		return errors.Join(errs...)
	})
	if err != nil {
		return nil, err
	}
	next := 0
	for _, w := range want {
		var a Artifact
		if w.file != nil {
			a, err = c.fetchFile(ctx, w)
		} else {
			a, err = c.fetchImage(ctx, plans[next])
			next++
		}
		if err != nil {
			return nil, err
		}
		contents.Artifacts = append(contents.Artifacts, a)
	}

	canonical, err := opts.Pins.Canonical()
	if err != nil {
		return nil, err
	}
	if err := dir.put("sha256:"+pinDigest, int64(len(canonical)), bytes.NewReader(canonical), "the pin set"); err != nil {
		return nil, err
	}
	// The pin set goes first, right after the table of contents: a bundle cut short can still
	// be checked against its pins.
	c.blobs = append([]string{"sha256:" + pinDigest}, c.blobs...)
	if err := c.writeLayout(contents, plans); err != nil {
		return nil, err
	}
	err = opts.Progress.Step("write "+opts.Out, "", func(rep progress.Reporter) error {
		return pack(dir, c.blobs, opts.Out, rep)
	})
	if err != nil {
		return nil, err
	}
	if err := os.RemoveAll(dir.root); err != nil {
		return nil, fmt.Errorf("bundle %s is written; removing its partial directory failed: %w", opts.Out, err)
	}
	return contents, nil
}

type creator struct {
	opts   CreateOptions
	dir    layoutDir
	puller *remote.Puller
	// blobs are the blobs the bundle holds, each once, in the order they were fetched.
	blobs []string
	held  map[string]bool
}

func (c *creator) hold(digest string) {
	if c.held == nil {
		c.held = map[string]bool{}
	}
	if !c.held[digest] {
		c.held[digest] = true
		c.blobs = append(c.blobs, digest)
	}
}

// imagePlan is a pinned image with its index read and its chosen platforms' entries found.
type imagePlan struct {
	w         wanted
	repo      name.Repository
	mediaType types.MediaType
	indexSize int64
	entries   []v1.Descriptor
}

// manifestBytes is the manifest digest of repo: the verified blob when the partial directory
// holds it, else fetched from the registry, checked against digest and stored.
func (c *creator) manifestBytes(ctx context.Context, repo name.Repository, digest, what string) ([]byte, error) {
	ok, err := c.dir.has(digest)
	if err != nil {
		return nil, err
	}
	if !ok {
		desc, err := c.puller.Get(ctx, repo.Digest(digest))
		if err != nil {
			return nil, registryError(what, repo, err)
		}
		if err := c.dir.put(digest, int64(len(desc.Manifest)), bytes.NewReader(desc.Manifest), what); err != nil {
			return nil, err
		}
	}
	c.hold(digest)
	return c.dir.read(digest)
}

// registryError is a failed request for what, with the fix. The registry client's errors name
// the request URL without credentials.
func registryError(what string, repo name.Repository, err error) error {
	return fmt.Errorf("%s: %w; check the network and the registry's name, or `docker login %s` if it refuses access (occ reads your docker config's credentials)", what, err, repo.RegistryStr())
}

// planImage reads the pinned index of w and finds the entry of each chosen platform.
func (c *creator) planImage(ctx context.Context, w wanted) (*imagePlan, error) {
	ref, err := name.NewDigest(w.image.DigestReference())
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", w.key, w.image, err)
	}
	raw, err := c.manifestBytes(ctx, ref.Context(), w.image.Digest, w.key+" "+w.image.String())
	if err != nil {
		return nil, err
	}
	mt := mediaTypeOf(raw)
	if mt != types.OCIImageIndex && mt != types.DockerManifestList {
		return nil, fmt.Errorf("%s %s is a %s, not a multi-platform index: a bundle holds each image as its pinned index (the pins require indexes); pin the digest of the index its tag serves (occ dev pins verify names it)", w.key, w.image, mt)
	}
	idx, err := v1.ParseIndexManifest(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%s %s: read its index: %w", w.key, w.image, err)
	}
	p := &imagePlan{w: w, repo: ref.Context(), mediaType: mt, indexSize: int64(len(raw))}
	var missing []string
	for _, want := range c.opts.Platforms {
		e, ok := entryFor(idx, want)
		if !ok {
			missing = append(missing, platformString(want))
			continue
		}
		p.entries = append(p.entries, e)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s %s has no %s image (its index holds %s); choose the platforms it has with --platform, or pin an index that holds %s", w.key, w.image, strings.Join(missing, ", "), indexPlatforms(idx), strings.Join(missing, ", "))
	}
	return p, nil
}

// entryFor is the first image entry of idx that serves want.
func entryFor(idx *v1.IndexManifest, want v1.Platform) (v1.Descriptor, bool) {
	for _, d := range idx.Manifests {
		if !isAttestation(d) && online.PlatformMatches(*d.Platform, want) {
			return d, true
		}
	}
	return v1.Descriptor{}, false
}

func indexPlatforms(idx *v1.IndexManifest) string {
	var s []string
	for _, d := range idx.Manifests {
		if !isAttestation(d) {
			s = append(s, platformString(*d.Platform))
		}
	}
	if len(s) == 0 {
		return "no platform image"
	}
	return strings.Join(s, ", ")
}

// mediaTypeOf reads a manifest's media type from its own mediaType field; an OCI index or
// manifest may leave it out, and is then told by its manifests or layers list.
func mediaTypeOf(raw []byte) types.MediaType {
	var m struct {
		MediaType types.MediaType `json:"mediaType"`
		Manifests json.RawMessage `json:"manifests"`
		Layers    json.RawMessage `json:"layers"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return "document that is not JSON"
	}
	switch {
	case m.MediaType != "":
		return m.MediaType
	case m.Manifests != nil:
		return types.OCIImageIndex
	case m.Layers != nil:
		return types.OCIManifestSchema1
	}
	return "document of no known media type"
}

// fetchImage copies the chosen platforms of a planned image: each platform's manifest, config
// and layers, every blob verified by its digest, blobs already verified in the partial
// directory not fetched again.
func (c *creator) fetchImage(ctx context.Context, p *imagePlan) (Artifact, error) {
	w := p.w
	a := Artifact{Pin: w.key, Kind: KindImage, Reference: w.image.String(), Digest: w.image.Digest, MediaType: string(p.mediaType), Size: p.indexSize}
	// The step names the image without its digest (the line would not fit); the key and the
	// tag tell the routing controllers' images apart.
	err := c.opts.Progress.Step("fetch "+w.key+" "+w.image.Name()+":"+w.image.Tag, "", func(rep progress.Reporter) error {
		type blob struct {
			desc v1.Descriptor
			what string
		}
		var blobs []blob
		for _, e := range p.entries {
			plat := platformString(*e.Platform)
			what := fmt.Sprintf("%s %s (%s manifest %s)", w.key, w.image, plat, e.Digest)
			raw, err := c.manifestBytes(ctx, p.repo, e.Digest.String(), what)
			if err != nil {
				return err
			}
			if mt := mediaTypeOf(raw); mt != types.OCIManifestSchema1 && mt != types.DockerManifestSchema2 {
				return fmt.Errorf("%s is a %s, not an image manifest; the bundle copies one level of index", what, mt)
			}
			m, err := v1.ParseManifest(bytes.NewReader(raw))
			if err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			a.Size += int64(len(raw))
			a.Platforms = append(a.Platforms, Platform{Platform: plat, Manifest: e.Digest.String()})
			blobs = append(blobs, blob{m.Config, fmt.Sprintf("%s %s (%s config %s)", w.key, w.image, plat, m.Config.Digest)})
			for _, l := range m.Layers {
				blobs = append(blobs, blob{l, fmt.Sprintf("%s %s (%s layer %s)", w.key, w.image, plat, l.Digest)})
			}
		}
		var total, done, fetched int64
		for _, b := range blobs {
			total += b.desc.Size
		}
		start := time.Now()
		for _, b := range blobs {
			digest := b.desc.Digest.String()
			a.Size += b.desc.Size
			ok, err := c.dir.has(digest)
			if err != nil {
				return err
			}
			if !ok {
				layer, err := c.puller.Layer(ctx, p.repo.Digest(digest))
				if err != nil {
					return registryError(b.what, p.repo, err)
				}
				rc, err := layer.Compressed()
				if err != nil {
					return registryError(b.what, p.repo, err)
				}
				counter := &transferCounter{rep: rep, base: done, total: total}
				err = c.dir.put(digest, b.desc.Size, io.TeeReader(rc, counter), b.what)
				rc.Close()
				if err != nil {
					return err
				}
				fetched += b.desc.Size
			}
			c.hold(digest)
			done += b.desc.Size
			rep.Transfer(done, total)
		}
		rep.Note(rate(fetched, total-fetched, time.Since(start)))
		return nil
	})
	return a, err
}

// fetchFile downloads a pinned file through artifacts.Fetcher, whose cache is the partial
// directory's blobs: a verified copy there is found again by its pin alone.
func (c *creator) fetchFile(ctx context.Context, w wanted) (Artifact, error) {
	a := Artifact{Pin: w.key, Kind: KindFile, Reference: w.reference(), Digest: w.digest()}
	err := c.opts.Progress.Step("fetch "+w.key, "", func(rep progress.Reporter) error {
		start := time.Now()
		fetched := int64(0)
		f := &artifacts.Fetcher{Client: c.opts.Deps.HTTPClient(), CacheDir: filepath.Join(c.dir.root, "blobs"),
			Progress: func(p artifacts.Progress) { fetched = p.Received; rep.Transfer(p.Received, max(p.Total, 0)) }}
		v, err := f.Fetch(ctx, *w.file)
		if err != nil {
			return fmt.Errorf("%s: %w", w.key, err)
		}
		a.Size = v.Size()
		v.Close()
		c.hold(a.Digest)
		rep.Note(rate(fetched, a.Size-fetched, time.Since(start)))
		return nil
	})
	return a, err
}

// rate says what a step moved: the bytes fetched and their rate, and what was already there.
func rate(fetched, kept int64, elapsed time.Duration) string {
	s := fmt.Sprintf("fetched %s", mb(fetched))
	if secs := elapsed.Seconds(); fetched > 0 && secs > 0 {
		s += fmt.Sprintf(" at %s/s", mb(int64(float64(fetched)/secs)))
	}
	if kept > 0 {
		s += fmt.Sprintf(", %s already verified in the partial bundle", mb(kept))
	}
	return s
}

func mb(n int64) string { return FormatSize(n) }

// FormatSize is n bytes for people: B, kB, MB or GB (decimal, as registries and docker print).
func FormatSize(n int64) string {
	switch {
	case n < 1e3:
		return fmt.Sprintf("%d B", n)
	case n < 1e6:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	case n < 1e9:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.2f GB", float64(n)/1e9)
}

// writeLayout writes the layout's small files into the partial directory: oci-layout,
// index.json (each pinned index, by its pinned digest) and occ-bundle.json.
func (c *creator) writeLayout(contents *Contents, plans []*imagePlan) error {
	index := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: []v1.Descriptor{}}
	seen := map[string]bool{}
	for _, p := range plans {
		if seen[p.w.image.Digest] {
			continue
		}
		seen[p.w.image.Digest] = true
		h, err := v1.NewHash(p.w.image.Digest)
		if err != nil {
			return fmt.Errorf("%s: %w", p.w.key, err)
		}
		index.Manifests = append(index.Manifests, v1.Descriptor{MediaType: p.mediaType, Digest: h, Size: p.indexSize,
			Annotations: map[string]string{AnnotationRefName: p.w.image.String(), AnnotationPin: p.w.key}})
	}
	for name, v := range map[string]any{
		LayoutFile:   map[string]string{"imageLayoutVersion": "1.0.0"},
		IndexFile:    index,
		ContentsFile: contents,
	} {
		data, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return fmt.Errorf("encode %s: %w", name, err)
		}
		if err := fsutil.WriteFileAtomic(filepath.Join(c.dir.root, name), append(data, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}
