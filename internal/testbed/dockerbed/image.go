package dockerbed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"runtime"

	"github.com/docker/docker/pkg/jsonmessage"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
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

// LoadImage loads img into the engine under tag, the way `docker load` does, from a docker-save
// tarball (the format the Debian 20.10 engine accepts; it refuses OCI layouts). It returns the
// engine's image ID, which is the image's config digest.
func (e *Engine) LoadImage(ctx context.Context, img v1.Image, tag string) (string, error) {
	ref, err := name.NewTag(tag)
	if err != nil {
		return "", fmt.Errorf("load image: tag %q: %w", tag, err)
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(tarball.Write(ref, img, pw)) }()
	return e.loadTarball(ctx, pr, img, tag)
}

func (e *Engine) loadTarball(ctx context.Context, r io.Reader, img v1.Image, tag string) (string, error) {
	resp, err := e.API.ImageLoad(ctx, r)
	if err != nil {
		return "", fmt.Errorf("load image %s: %w", tag, err)
	}
	defer resp.Body.Close()
	// The engine reports a failed load inside the JSON stream, not as an HTTP error.
	if err := jsonmessage.DisplayJSONMessagesStream(resp.Body, io.Discard, 0, false, nil); err != nil {
		return "", fmt.Errorf("load image %s: %w", tag, err)
	}
	want, err := img.ConfigName()
	if err != nil {
		return "", err
	}
	got, err := e.API.ImageInspect(ctx, tag)
	if err != nil {
		return "", fmt.Errorf("load image %s: inspect after load: %w", tag, err)
	}
	if got.ID != want.String() {
		return "", fmt.Errorf("load image %s: engine holds image ID %s, the loaded config digest is %s", tag, got.ID, want)
	}
	return got.ID, nil
}

// LocalImage is an image present in the engine.
type LocalImage struct {
	// Tag is the local reference it was loaded under (Repo:Key).
	Tag string
	// ID is the engine's image ID, the sha256 config digest.
	ID string
}

// EnsureImage makes the spec's image present in the engine under the tag Repo:Key and returns
// it. An image already loaded under that tag is reused: the tag is a content hash, so it can
// only name this content.
func (e *Engine) EnsureImage(ctx context.Context, spec ImageSpec) (LocalImage, error) {
	key, err := spec.Key()
	if err != nil {
		return LocalImage{}, err
	}
	tag := spec.Repo + ":" + key
	if ins, err := e.API.ImageInspect(ctx, tag); err == nil {
		return LocalImage{Tag: tag, ID: ins.ID}, nil
	}
	img, err := spec.Build()
	if err != nil {
		return LocalImage{}, err
	}
	id, err := e.LoadImage(ctx, img, tag)
	if err != nil {
		return LocalImage{}, err
	}
	return LocalImage{Tag: tag, ID: id}, nil
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
