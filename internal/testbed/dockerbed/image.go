package dockerbed

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/distribution/reference"
	"github.com/docker/docker/pkg/jsonmessage"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// ImageSpec describes a one-layer image built from scratch: there is no base image anywhere
// on these machines, so every bed image carries all it needs in its own layer.
type ImageSpec struct {
	// Repo is the repository part of the local tag the image is loaded under ("occ-bed/busybox").
	Repo string
	// Files make up the image's single layer.
	Files []File
	// Config is the runtime configuration: entrypoint, command, environment, labels.
	Config v1.Config
	// Served is how Registry.Push serves the image: a single manifest (the zero value), or a
	// multi-platform index in one of the shapes registries serve. It is not part of the
	// image's content: the image loaded into an engine is the same for every shape.
	Served Shape
}

// Key is a content hash of the spec: the files' bytes and modes and the configuration. Images
// built from specs with equal keys are identical, so the key names cached builds and tags.
func (s ImageSpec) Key() (string, error) {
	h := sha256.New()
	for _, f := range s.Files {
		if err := fileDigestInput(h, f); err != nil {
			return "", fmt.Errorf("hash image %s file %s: %w", s.Repo, f.Path, err)
		}
	}
	cfg, err := json.Marshal(s.Config)
	if err != nil {
		return "", err
	}
	h.Write(cfg)
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// Build assembles the image. Its creation time is left at zero so that the image digest depends
// on the content only.
func (s ImageSpec) Build() (v1.Image, error) {
	layer, err := layerFromFiles(s.Files)
	if err != nil {
		return nil, fmt.Errorf("build image %s: %w", s.Repo, err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, fmt.Errorf("build image %s: %w", s.Repo, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("build image %s: %w", s.Repo, err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	cf.Config = s.Config
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("build image %s: %w", s.Repo, err)
	}
	return img, nil
}

// Tag is the local tag of the spec's image: Repo:Key.
func (s ImageSpec) Tag() (string, error) {
	key, err := s.Key()
	if err != nil {
		return "", err
	}
	return s.Repo + ":" + key, nil
}

// Tarball returns the spec's image as a docker-save tarball in the bed's cache (the format the
// Debian 20.10 engine loads; it refuses OCI layouts), building it on first use. The file is named
// by the content key, so a second run, or another test binary, reuses it; concurrent builders
// serialise on a lock file.
func (s ImageSpec) Tarball() (path, tag string, err error) {
	tag, err = s.Tag()
	if err != nil {
		return "", "", err
	}
	path = tarballPath(tag)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", "", err
	}
	if touch(path) {
		return path, tag, nil
	}
	unlock, err := lockFile(path + ".lock")
	if err != nil {
		return "", "", err
	}
	defer unlock()
	if _, err := os.Stat(path); err == nil {
		return path, tag, nil
	}
	img, err := s.Build()
	if err != nil {
		return "", "", err
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return "", "", fmt.Errorf("image %s: tag %q: %w", s.Repo, tag, err)
	}
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	defer os.Remove(tmp)
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		return "", "", fmt.Errorf("write image %s tarball: %w", tag, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", "", err
	}
	return path, tag, nil
}

// tarballPath is where the tarball of the image tagged tag is cached.
func tarballPath(tag string) string {
	return filepath.Join(cacheDir(), "images", strings.ReplaceAll(strings.ReplaceAll(tag, "/", "_"), ":", "-")+".tar")
}

// layoutSuffix ends the name of an image's cached layout tarball (see layoutTarball), beside
// its docker-save tarball.
const layoutSuffix = ".layout.tar"

// layoutTarballPath is where the layout tarball of the image tagged tag is cached.
func layoutTarballPath(tag string) string {
	return strings.TrimSuffix(tarballPath(tag), ".tar") + layoutSuffix
}

// layoutTarball returns the spec's image as the archive `docker save` writes since Docker 25: an
// OCI image layout (oci-layout, index.json naming the image's manifest, blobs/sha256/…) that also
// carries the legacy manifest.json. An engine on the containerd image store imports index.json's
// manifest as it is, so the loaded image's ID is the manifest digest the bed computed; from a
// docker-save tarball (manifest.json only) containerd would write a manifest of its own instead.
// Cached like Tarball, next to it.
func (s ImageSpec) layoutTarball() (path, tag string, err error) {
	tag, err = s.Tag()
	if err != nil {
		return "", "", err
	}
	path = layoutTarballPath(tag)
	if touch(path) {
		return path, tag, nil
	}
	img, err := s.Image()
	if err != nil {
		return "", "", err
	}
	unlock, err := lockFile(path + ".lock")
	if err != nil {
		return "", "", err
	}
	defer unlock()
	if _, err := os.Stat(path); err == nil {
		return path, tag, nil
	}
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	defer os.Remove(tmp)
	if err := writeLayoutTarball(tmp, tag, img); err != nil {
		return "", "", fmt.Errorf("write image %s layout tarball: %w", tag, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", "", err
	}
	return path, tag, nil
}

// writeLayoutTarball writes img, named tag, as an OCI layout plus manifest.json into path. The
// names in index.json are the ones `docker save` writes: io.containerd.image.name (the full
// name, which the containerd store's load takes as the image's name) and the OCI ref name (the
// tag alone).
func writeLayoutTarball(path, tag string, img v1.Image) error {
	// The engine's own spelling of the name (docker.io/…): containerd keeps names as they are
	// written, and the engine finds only canonical ones.
	ref, err := reference.ParseNormalizedNamed(tag)
	if err != nil {
		return err
	}
	tagged, ok := ref.(reference.Tagged)
	if !ok {
		return fmt.Errorf("image name %q has no tag", tag)
	}
	rawManifest, err := img.RawManifest()
	if err != nil {
		return err
	}
	rawConfig, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	desc, err := partial.Descriptor(img)
	if err != nil {
		return err
	}
	cfgName, err := img.ConfigName()
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	blob := func(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }
	put := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: "blobs/", Mode: 0o755, Typeflag: tar.TypeDir}); err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Name: "blobs/sha256/", Mode: 0o755, Typeflag: tar.TypeDir}); err != nil {
		return err
	}
	var layerPaths []string
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return err
		}
		size, err := l.Size()
		if err != nil {
			return err
		}
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: blob(d), Mode: 0o644, Size: size, Typeflag: tar.TypeReg}); err != nil {
			rc.Close()
			return err
		}
		_, err = io.Copy(tw, rc)
		rc.Close()
		if err != nil {
			return err
		}
		layerPaths = append(layerPaths, blob(d))
	}
	if err := put(blob(cfgName), rawConfig); err != nil {
		return err
	}
	if err := put(blob(desc.Digest), rawManifest); err != nil {
		return err
	}
	desc.Annotations = map[string]string{
		"io.containerd.image.name":          ref.String(),
		"org.opencontainers.image.ref.name": tagged.Tag(),
	}
	index, err := json.Marshal(v1.IndexManifest{SchemaVersion: 2, MediaType: types.OCIImageIndex, Manifests: []v1.Descriptor{*desc}})
	if err != nil {
		return err
	}
	legacy, err := json.Marshal([]tarball.Descriptor{{Config: blob(cfgName), RepoTags: []string{tag}, Layers: layerPaths}})
	if err != nil {
		return err
	}
	for _, e := range []struct {
		name string
		data []byte
	}{{"index.json", index}, {"manifest.json", legacy}, {"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)}} {
		if err := put(e.name, e.data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return f.Close()
}

// touch marks a cached tarball as used now (pruneStale reads it) and reports whether it exists.
func touch(path string) bool {
	now := time.Now()
	return os.Chtimes(path, now, now) == nil
}

// Image returns the spec's image, read from its cached tarball (built on first use).
func (s ImageSpec) Image() (v1.Image, error) {
	path, tag, err := s.Tarball()
	if err != nil {
		return nil, err
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return nil, err
	}
	img, err := tarball.ImageFromPath(path, &ref)
	if err != nil {
		return nil, fmt.Errorf("read image %s from %s: %w", tag, path, err)
	}
	return img, nil
}

func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// loadTarball loads an image archive into the engine and checks that the engine now holds the
// image under tag with the ID the engine's store gives it (see LocalImage.ID).
func (e *Engine) loadTarball(ctx context.Context, r io.Reader, wantID, tag string) error {
	resp, err := e.API.ImageLoad(ctx, r)
	if err != nil {
		return fmt.Errorf("load image %s: %w", tag, err)
	}
	defer resp.Body.Close()
	// The engine reports a failed load inside the JSON stream, not as an HTTP error.
	if err := jsonmessage.DisplayJSONMessagesStream(resp.Body, io.Discard, 0, false, nil); err != nil {
		return fmt.Errorf("load image %s: %w", tag, err)
	}
	got, err := e.API.ImageInspect(ctx, tag)
	if err != nil {
		return fmt.Errorf("load image %s: inspect after load: %w", tag, err)
	}
	if got.ID != wantID {
		return fmt.Errorf("load image %s: engine holds image ID %s, want %s", tag, got.ID, wantID)
	}
	return nil
}

// LocalImage is an image present in the engine.
type LocalImage struct {
	// Tag is the local reference it was loaded under (Repo:Key).
	Tag string
	// ID is the engine's image ID. On the classic image store and on Podman it is the image's
	// config digest; on Docker's containerd image store it is the digest of the image manifest
	// that was loaded (the bed loads every image as one manifest, never as an index).
	ID string
}

// EnsureImage makes the spec's image present in the engine under the tag Repo:Key (loading
// its cached archive: a docker-save tarball, or on the containerd image store an OCI layout) and
// returns it. An image already loaded under that tag is reused: the tag
// is a content hash, so it can only name this content.
func (e *Engine) EnsureImage(ctx context.Context, spec ImageSpec) (LocalImage, error) {
	tag, err := spec.Tag()
	if err != nil {
		return LocalImage{}, err
	}
	store, err := e.ImageStore(ctx)
	if err != nil {
		return LocalImage{}, err
	}
	cached := tarballPath(tag)
	if store == ContainerdStore {
		cached = layoutTarballPath(tag)
	}
	if ins, err := e.API.ImageInspect(ctx, tag); err == nil && touch(cached) {
		// The layout is made from the docker-save tarball, which stays in use with it.
		touch(tarballPath(tag))
		return LocalImage{Tag: tag, ID: ins.ID}, nil
	}
	img, err := spec.Image()
	if err != nil {
		return LocalImage{}, err
	}
	// The identity the store keeps: the config digest on the classic store, the manifest digest
	// of the loaded layout on the containerd store.
	var id v1.Hash
	var path string
	if store == ContainerdStore {
		id, err = img.Digest()
		if err == nil {
			path, _, err = spec.layoutTarball()
		}
	} else {
		id, err = img.ConfigName()
		if err == nil {
			path, _, err = spec.Tarball()
		}
	}
	if err != nil {
		return LocalImage{}, err
	}
	f, err := os.Open(path)
	if err != nil {
		return LocalImage{}, err
	}
	defer f.Close()
	if err := e.loadTarball(ctx, f, id.String(), tag); err != nil {
		return LocalImage{}, err
	}
	return LocalImage{Tag: tag, ID: id.String()}, nil
}

// BusyboxImage is a one-layer image holding only a static busybox and its applet links, with
// sh as its command.
func BusyboxImage() (ImageSpec, error) {
	files, err := BusyboxFiles()
	if err != nil {
		return ImageSpec{}, err
	}
	return ImageSpec{
		Repo:   "occ-bed/busybox",
		Files:  files,
		Config: v1.Config{Cmd: []string{"/bin/sh"}, Env: []string{"PATH=/bin"}},
	}, nil
}
