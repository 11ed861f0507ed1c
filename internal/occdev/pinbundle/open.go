package pinbundle

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/openclaw/occ/internal/fsutil"
)

// Opened is a bundle opened to take artifacts from (`occ dev up --bundle`): its table of
// contents, and where in the file each blob's bytes are. Open hashes nothing; a caller that has
// not run Verify on the same file trusts its bytes to the engine's and the node's own digest
// checks only.
type Opened struct {
	Path     string
	Contents *Contents
	f        *os.File
	blobs    map[string]blobAt
}

// blobAt is where a blob's bytes are in the tar.
type blobAt struct{ offset, size int64 }

// Open reads the bundle's tar headers and its table of contents.
func Open(path string) (*Opened, error) {
	f, err := fsutil.OpenRegular(path)
	if err != nil {
		return nil, fmt.Errorf("open bundle: %w", err)
	}
	o := &Opened{Path: path, f: f, blobs: map[string]blobAt{}}
	if err := o.index(); err != nil {
		f.Close()
		return nil, err
	}
	return o, nil
}

// index walks the tar's headers. The tar reader reads a header's blocks and nothing more, and
// skips an entry's data by seeking, so the file's position after each header is where that
// entry's bytes begin.
func (o *Opened) index() error {
	tr := tar.NewReader(o.f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("bundle %s: read the tar: %w; it is not a bundle, or it is damaged: create it again", o.Path, err)
		}
		switch {
		case h.Name == ContentsFile:
			if o.Contents, err = decodeContents(tr, o.Path); err != nil {
				return err
			}
		case path.Dir(h.Name) == blobsDir && h.Typeflag == tar.TypeReg:
			at, err := o.f.Seek(0, io.SeekCurrent)
			if err != nil {
				return fmt.Errorf("bundle %s: %w", o.Path, err)
			}
			o.blobs["sha256:"+path.Base(h.Name)] = blobAt{offset: at, size: h.Size}
		}
	}
	if o.Contents == nil {
		return fmt.Errorf("bundle %s has no %s: it is not a bundle occ dev bundle create wrote (or it is cut short); create it again", o.Path, ContentsFile)
	}
	return nil
}

// Close closes the file.
func (o *Opened) Close() error { return o.f.Close() }

// Has reports whether the bundle holds the blob digest (sha256:<hex>).
func (o *Opened) Has(digest string) bool {
	_, ok := o.blobs[digest]
	return ok
}

// Blob is the bytes of the blob digest (sha256:<hex>) and their size.
func (o *Opened) Blob(digest string) (*io.SectionReader, error) {
	at, ok := o.blobs[digest]
	if !ok {
		return nil, fmt.Errorf("bundle %s holds no blob %s", o.Path, digest)
	}
	return io.NewSectionReader(o.f, at.offset, at.size), nil
}

// readJSON decodes a blob that is a JSON document (an index, a manifest).
func (o *Opened) readJSON(digest string, v any) error {
	r, err := o.Blob(digest)
	if err != nil {
		return err
	}
	if r.Size() > keepLimit {
		return fmt.Errorf("bundle %s: blob %s is %d bytes, too large for a manifest", o.Path, digest, r.Size())
	}
	if err := json.NewDecoder(r).Decode(v); err != nil {
		return fmt.Errorf("bundle %s: blob %s: %w", o.Path, digest, err)
	}
	return nil
}

// Image is one pinned image of the bundle as one platform's content: the chain from the pinned
// index to the manifest of that platform, its config and layers, each a blob of the bundle.
type Image struct {
	// Name is the pinned repository (docker.io/rancher/k3s) and Index the pinned digest.
	Name  string
	Index v1.Descriptor
	// Manifest is the index's entry of the platform; Config and Layers are its manifest's.
	Manifest v1.Descriptor
	Config   v1.Descriptor
	Layers   []v1.Descriptor
}

// Size is the bytes of the image's one platform: its index, manifest, config and layers.
func (i Image) Size() int64 {
	n := i.Index.Size + i.Manifest.Size + i.Config.Size
	for _, l := range i.Layers {
		n += l.Size
	}
	return n
}

// MissingError is a bundle that lacks what an image or file of the pins needs: Digest is the
// first missing digest, What says what it is.
type MissingError struct {
	Path   string
	Digest string
	What   string
}

func (e *MissingError) Error() string {
	return fmt.Sprintf("bundle %s lacks %s (%s): it was made from other pins or for other platforms; create it for these pins and this platform with occ dev bundle create (--pin-file, --platform), or leave --bundle unset",
		e.Path, e.Digest, e.What)
}

// Image follows the pinned index digest of repository name to the entry that runs on platform
// (picked by pick from the index's entries; -1 when none does) and checks that the bundle holds
// every blob of it.
func (o *Opened) Image(name, digest string, pick func([]v1.Descriptor) int) (Image, error) {
	what := "the pinned index of " + name
	if !o.Has(digest) {
		return Image{}, &MissingError{Path: o.Path, Digest: digest, What: what}
	}
	var idx v1.IndexManifest
	if err := o.readJSON(digest, &idx); err != nil {
		return Image{}, err
	}
	h, err := v1.NewHash(digest)
	if err != nil {
		return Image{}, err
	}
	r, _ := o.Blob(digest)
	img := Image{Name: name, Index: v1.Descriptor{MediaType: mediaTypeOfIndex(idx), Digest: h, Size: r.Size()}}
	i := pick(idx.Manifests)
	if i < 0 {
		return Image{}, &MissingError{Path: o.Path, Digest: digest, What: "an entry of the index of " + name + " for this engine's platform (it lists " + indexPlatforms(&idx) + ")"}
	}
	img.Manifest = idx.Manifests[i]
	if !o.Has(img.Manifest.Digest.String()) {
		return Image{}, &MissingError{Path: o.Path, Digest: img.Manifest.Digest.String(), What: "the " + platformOfDescriptor(img.Manifest) + " manifest of " + name}
	}
	var m v1.Manifest
	if err := o.readJSON(img.Manifest.Digest.String(), &m); err != nil {
		return Image{}, err
	}
	img.Config, img.Layers = m.Config, m.Layers
	for _, d := range append([]v1.Descriptor{m.Config}, m.Layers...) {
		if !o.Has(d.Digest.String()) {
			return Image{}, &MissingError{Path: o.Path, Digest: d.Digest.String(), What: "a blob of the " + platformOfDescriptor(img.Manifest) + " image of " + name}
		}
	}
	return img, nil
}

// platformOfDescriptor is an index entry's platform as os/arch[/variant].
func platformOfDescriptor(d v1.Descriptor) string {
	if d.Platform == nil {
		return "unknown"
	}
	return platformString(*d.Platform)
}

// mediaTypeOfIndex is an index's own media type, OCI's when it states none.
func mediaTypeOfIndex(idx v1.IndexManifest) types.MediaType {
	if idx.MediaType != "" {
		return idx.MediaType
	}
	return types.OCIImageIndex
}

// AnnotationImageName is the annotation containerd names an imported image by.
const AnnotationImageName = "io.containerd.image.name"

// WriteArchive writes img as one image archive an engine loads: an OCI image layout whose
// index.json names the pinned index (annotated with the name name@digest, so an engine on the
// containerd image store names it as a pull by digest does), holding only the one platform's
// content, and beside it a docker-archive manifest.json of the same blobs (without tags), for
// engines that load only that form.
func (o *Opened) WriteArchive(w io.Writer, img Image) error {
	tw := tar.NewWriter(w)
	ref := img.Name + "@" + img.Index.Digest.String()
	index := v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: []v1.Descriptor{img.Index}}
	index.Manifests[0].Annotations = map[string]string{AnnotationImageName: ref}
	blob := func(d v1.Descriptor) string { return blobsDir + "/" + d.Digest.Hex }
	docker := []map[string]any{{"Config": blob(img.Config), "RepoTags": []string{}, "Layers": func() []string {
		var out []string
		for _, l := range img.Layers {
			out = append(out, blob(l))
		}
		return out
	}()}}
	for _, doc := range []struct {
		name string
		v    any
	}{{LayoutFile, map[string]string{"imageLayoutVersion": "1.0.0"}}, {IndexFile, index}, {"manifest.json", docker}} {
		data, err := json.Marshal(doc.v)
		if err != nil {
			return err
		}
		if err := writeEntry(tw, doc.name, int64(len(data)), strings.NewReader(string(data))); err != nil {
			return err
		}
	}
	seen := map[string]bool{}
	for _, d := range append([]v1.Descriptor{img.Index, img.Manifest, img.Config}, img.Layers...) {
		if seen[d.Digest.Hex] {
			continue
		}
		seen[d.Digest.Hex] = true
		r, err := o.Blob(d.Digest.String())
		if err != nil {
			return err
		}
		if err := writeEntry(tw, blob(d), r.Size(), r); err != nil {
			return err
		}
	}
	return tw.Close()
}

func writeEntry(tw *tar.Writer, name string, size int64, r io.Reader) error {
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: size, Typeflag: tar.TypeReg}); err != nil {
		return err
	}
	n, err := io.Copy(tw, r)
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if n != size {
		return fmt.Errorf("write %s: %d of %d bytes", name, n, size)
	}
	return nil
}

// CopyFile copies the file blob of sha256 hex sum to w.
func (o *Opened) CopyFile(w io.Writer, sum string) (int64, error) {
	r, err := o.Blob("sha256:" + sum)
	if err != nil {
		return 0, err
	}
	return io.Copy(w, r)
}

// Name names the bundle in messages.
func (o *Opened) Name() string { return "bundle " + o.Path }
