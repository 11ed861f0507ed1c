package pinbundle

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/openclaw/occ/internal/fsutil"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/progress"
)

// Inspection is what a bundle says about itself, read from its table of contents alone.
type Inspection struct {
	Contents
	// BuiltIn is set when the bundle's pin set is the one built into this occ (same digest).
	BuiltIn bool `json:"builtIn"`
	// BuiltInDigest is the digest of the pins built into this occ.
	BuiltInDigest string `json:"builtInDigest"`
}

// Inspect reads the table of contents of the bundle at path (nothing is hashed: Verify does
// that) and compares its pin set with the pins built into occ.
func Inspect(path string) (*Inspection, error) {
	f, err := fsutil.OpenRegular(path)
	if err != nil {
		return nil, fmt.Errorf("open bundle: %w", err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil, fmt.Errorf("bundle %s has no %s: it is not a bundle occ dev bundle create wrote (or it is cut short); create it again", path, ContentsFile)
		}
		if err != nil {
			return nil, fmt.Errorf("bundle %s: read the tar: %w; it is not a bundle, or it is damaged: create it again", path, err)
		}
		if h.Name != ContentsFile {
			continue
		}
		c, err := decodeContents(tr, path)
		if err != nil {
			return nil, err
		}
		builtIn, err := pins.Default()
		if err != nil {
			return nil, err
		}
		d, err := builtIn.Digest()
		if err != nil {
			return nil, err
		}
		return &Inspection{Contents: *c, BuiltIn: c.Pins.Digest == d, BuiltInDigest: d}, nil
	}
}

func decodeContents(r io.Reader, path string) (*Contents, error) {
	var c Contents
	dec := json.NewDecoder(io.LimitReader(r, 16<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("bundle %s: %s: %w; it is damaged or not a bundle: create it again", path, ContentsFile, err)
	}
	if c.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("bundle %s: %s has schemaVersion %d; this occ reads schemaVersion %d: use the occ that created it, or create it again", path, ContentsFile, c.SchemaVersion, SchemaVersion)
	}
	return &c, nil
}

// keepLimit bounds the blobs Verify keeps in memory to read them: indexes, manifests, configs
// and the pin set are JSON documents far below it.
const keepLimit = 4 << 20

// blobState is what reading the tar found about one blob.
type blobState struct {
	size int64
	// sum is the SHA-256 the bytes hash to, sha256:<hex>.
	sum  string
	data []byte
	// truncated, when not 0, is the size the tar header announced for a blob the file ends
	// inside of.
	truncated int64
}

// ProblemError lists what Verify found wrong, each naming the artifact (pin key and digest).
type ProblemError struct {
	Path     string
	Problems []string
}

func (e *ProblemError) Error() string {
	return fmt.Sprintf("bundle %s is not intact (%d problem(s)):\n  %s\nCreate it again with occ dev bundle create (or copy the whole file again)", e.Path, len(e.Problems), strings.Join(e.Problems, "\n  "))
}

// Verify re-hashes every blob of the bundle at path and checks that it holds what it claims:
// every image's index, and for each of its platforms the manifest, config and layers, each
// blob with the digest and size its parent names; every file; the pin set, and every artifact
// that pin set puts into a bundle. A truncated, tampered or incomplete bundle is refused with a
// *ProblemError naming each artifact by pin key and digest.
func Verify(ctx context.Context, path string, sink progress.Sink) (*Contents, error) {
	s := &bundleScan{path: path, blobs: map[string]*blobState{}}
	err := sink.Step("hash every blob of "+path, "", func(rep progress.Reporter) error { return s.scan(ctx, rep) })
	if err != nil {
		return nil, err
	}
	if s.contents == nil {
		return nil, fmt.Errorf("bundle %s has no %s: it is not a bundle occ dev bundle create wrote, or it is cut short; create it again", path, ContentsFile)
	}
	v := &verifier{contents: s.contents, blobs: s.blobs}
	v.problems = s.problems
	if !s.layout {
		v.add("%s is missing: the bundle is not an OCI image layout", LayoutFile)
	}
	if !s.indexSeen {
		v.add("%s is missing: the bundle is not an OCI image layout", IndexFile)
	}
	v.checkPins()
	for _, a := range s.contents.Artifacts {
		v.checkArtifact(a, s.index)
	}
	for d, b := range s.blobs {
		if b.truncated > 0 {
			v.problems = append([]string{fmt.Sprintf("blob %s: the file ends inside it (%d of its %d bytes): the bundle is truncated", d, b.size, b.truncated)}, v.problems...)
		}
	}
	if len(v.problems) > 0 {
		return s.contents, &ProblemError{Path: path, Problems: v.problems}
	}
	return s.contents, nil
}

// bundleScan is what one read of a bundle's tar found: its table of contents, its index, every
// blob with what it hashes to, and what is wrong with the tar itself.
type bundleScan struct {
	path     string
	contents *Contents
	blobs    map[string]*blobState
	problems []string
	index    *v1.IndexManifest
	// layout and indexSeen say the tar has the OCI layout file and the index.
	layout, indexSeen bool
	// read counts the bytes of blobs read so far, of size, the file's.
	read, size int64
}

// scan reads the bundle's tar to its end, or to where the file is cut short, reporting the
// bytes of blobs read to rep.
func (s *bundleScan) scan(ctx context.Context, rep progress.Reporter) error {
	f, err := fsutil.OpenRegular(s.path)
	if err != nil {
		return fmt.Errorf("open bundle: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	s.size = fi.Size()
	tr := tar.NewReader(f)
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			s.problems = append(s.problems, fmt.Sprintf("the file ends inside a tar header after %d bytes: it is truncated", s.read))
			return nil
		}
		if whole, err := s.entry(tr, h, rep); err != nil || !whole {
			return err
		}
	}
}

// entry takes in one entry of the tar: the layout file, the table of contents, the index or a
// blob. whole is false when the file ends inside it.
func (s *bundleScan) entry(tr *tar.Reader, h *tar.Header, rep progress.Reporter) (whole bool, err error) {
	switch {
	case h.Name == LayoutFile:
		s.layout = true
	case h.Name == ContentsFile:
		if s.contents, err = decodeContents(tr, s.path); err != nil {
			return false, err
		}
	case h.Name == IndexFile:
		s.indexSeen = true
		s.index, err = v1.ParseIndexManifest(io.LimitReader(tr, 16<<20))
		if err != nil {
			s.problems = append(s.problems, fmt.Sprintf("%s does not parse: %v", IndexFile, err))
		}
	case strings.HasPrefix(h.Name, blobsDir+"/"):
		return s.hashBlob(tr, h, rep), nil
	}
	return true, nil
}

// hashBlob hashes one blob, keeping its bytes when it is small enough to be a document Verify
// reads. It reports false when the file ends inside the blob.
func (s *bundleScan) hashBlob(tr *tar.Reader, h *tar.Header, rep progress.Reporter) bool {
	digest := "sha256:" + strings.TrimPrefix(h.Name, blobsDir+"/")
	hash := sha256.New()
	var keep bytes.Buffer
	w := io.Writer(hash)
	if h.Size <= keepLimit {
		w = io.MultiWriter(hash, &keep)
	}
	n, err := io.CopyBuffer(w, tr, make([]byte, 1<<20))
	s.read += n
	rep.Transfer(s.read, s.size)
	if err != nil {
		s.blobs[digest] = &blobState{size: n, truncated: h.Size}
		return false
	}
	s.blobs[digest] = &blobState{size: n, sum: "sha256:" + hex.EncodeToString(hash.Sum(nil)), data: keep.Bytes()}
	return true
}

type verifier struct {
	contents *Contents
	blobs    map[string]*blobState
	problems []string
}

func (v *verifier) add(format string, args ...any) {
	v.problems = append(v.problems, fmt.Sprintf(format, args...))
}

// blob checks that the bundle holds digest, whole, with size bytes (size < 0: any), and
// returns its bytes when they were kept. what names it by its artifact.
func (v *verifier) blob(what, digest string, size int64) ([]byte, bool) {
	b, ok := v.blobs[digest]
	switch {
	case !ok:
		v.add("%s: the blob is missing: the bundle is incomplete", what)
	case b.truncated != 0:
		// The cut comes first: every blob after it is missing for the same reason.
		v.problems = append([]string{fmt.Sprintf("%s: the file ends inside this blob (%d of its %d bytes): the bundle is truncated", what, b.size, b.truncated)}, v.problems...)
		b.truncated = -1
	case b.truncated == -1:
		// Named already, where it was cut.
	case b.sum != digest:
		v.add("%s: the blob's bytes hash to %s: the bundle was altered or damaged", what, b.sum)
	case size >= 0 && b.size != size:
		v.add("%s: the blob has %d bytes, its descriptor says %d", what, b.size, size)
	default:
		return b.data, true
	}
	return nil, false
}

// checkPins reads the bundle's pin set and requires every artifact it bundles to be listed.
func (v *verifier) checkPins() {
	d := v.contents.Pins.Digest
	data, ok := v.blob("the pin set sha256:"+d, "sha256:"+d, -1)
	if !ok {
		return
	}
	set, err := pins.Parse(data, "the pin set of the bundle")
	if err != nil {
		v.add("the pin set sha256:%s: %v", d, err)
		return
	}
	for _, w := range wantedOf(set) {
		if !slices.ContainsFunc(v.contents.Artifacts, func(a Artifact) bool { return a.Pin == w.key && a.Digest == w.digest() }) {
			v.add("%s %s (%s): a pin of the bundle's pin set that the bundle does not list: the bundle is incomplete", w.key, w.digest(), w.reference())
		}
	}
}

func (v *verifier) checkArtifact(a Artifact, index *v1.IndexManifest) {
	name := a.Pin + " " + a.Digest
	if a.Kind == KindFile {
		v.blob(name, a.Digest, a.Size)
		return
	}
	if index == nil || !slices.ContainsFunc(index.Manifests, func(d v1.Descriptor) bool { return d.Digest.String() == a.Digest }) {
		v.add("%s: %s does not list the image's index", name, IndexFile)
	}
	raw, ok := v.blob(name+" (its index)", a.Digest, -1)
	if !ok {
		return
	}
	idx, err := v1.ParseIndexManifest(bytes.NewReader(raw))
	if err != nil {
		v.add("%s: its index does not parse: %v", name, err)
		return
	}
	if len(a.Platforms) != len(v.contents.Platforms) {
		v.add("%s: the bundle holds %d of its platforms, the bundle's platforms are %s", name, len(a.Platforms), strings.Join(v.contents.Platforms, ", "))
	}
	for _, p := range a.Platforms {
		var entry *v1.Descriptor
		for i, d := range idx.Manifests {
			if d.Digest.String() == p.Manifest {
				entry = &idx.Manifests[i]
			}
		}
		what := fmt.Sprintf("%s (%s manifest %s)", name, p.Platform, p.Manifest)
		if entry == nil {
			v.add("%s: the index has no such entry", what)
			continue
		}
		raw, ok := v.blob(what, p.Manifest, entry.Size)
		if !ok {
			continue
		}
		m, err := v1.ParseManifest(bytes.NewReader(raw))
		if err != nil {
			v.add("%s: does not parse: %v", what, err)
			continue
		}
		v.blob(fmt.Sprintf("%s (%s config %s)", name, p.Platform, m.Config.Digest), m.Config.Digest.String(), m.Config.Size)
		for _, l := range m.Layers {
			v.blob(fmt.Sprintf("%s (%s layer %s)", name, p.Platform, l.Digest), l.Digest.String(), l.Size)
		}
	}
}
