package dockerbed

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/pkg/jsonmessage"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Registry is an in-process OCI registry on 127.0.0.1 (go-containerregistry's pkg/registry).
// Docker treats registries on 127.0.0.0/8 as insecure by default, so the bed's engine pulls
// from it over plain HTTP exactly as it pulls a pinned image from a real registry: it fetches the
// manifest by digest, verifies it, and records the digest in RepoDigests.
type Registry struct {
	// Host is "127.0.0.1:PORT".
	Host string
	srv  *httptest.Server
	// requests counts every request the registry was sent (a pull's manifest and blob fetches
	// alike), so a test can prove that nothing asked it.
	requests atomic.Int64
}

// Requests is how many requests the registry has been sent.
func (r *Registry) Requests() int64 { return r.requests.Load() }

// StartRegistry starts a registry for the test and stops it when the test ends. Manifests live
// in the registry (so each test's registry knows only what the test pushed); blobs go to a
// content-addressed store in the bed's cache shared by all registries, written atomically, so a
// push of an image whose layers were pushed before (by any test run) uploads only the manifest.
func StartRegistry(t testing.TB) *Registry {
	t.Helper()
	blobs := filepath.Join(cacheDir(), "registry-blobs")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		t.Fatalf("dockerbed: registry blob store: %v", err)
	}
	h := registry.New(
		registry.Logger(log.New(io.Discard, "", 0)),
		registry.WithBlobHandler(registry.NewDiskBlobHandler(blobs)),
	)
	r := &Registry{}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		h.ServeHTTP(w, req)
	}))
	t.Cleanup(r.srv.Close)
	r.Host = strings.TrimPrefix(r.srv.URL, "http://")
	return r
}

// Pinned is an image in the registry, referred to the way occ pins images: by digest.
type Pinned struct {
	// Ref is "127.0.0.1:PORT/REPO@sha256:…", the digest-pinned reference.
	Ref string
	// Repo is "127.0.0.1:PORT/REPO".
	Repo string
	// Digest is what the pin names ("sha256:…"): the digest of what the registry serves under
	// Ref, the multi-platform index (or Docker manifest list) for an image served as one, the
	// image manifest otherwise. On the containerd image store it is also the engine's image ID
	// after a pull of Ref.
	Digest string
	// MediaType is the media type of what Digest names.
	MediaType string
	// ManifestDigest is the digest of the image manifest for the bed's own platform: the index
	// entry an engine here pulls and runs (Digest itself for a single manifest). A node that
	// imports only its platform's image holds this manifest.
	ManifestDigest string
	// ConfigDigest is the config digest of that image: the engine's image ID after a pull on
	// the classic image store and on Podman, and what survives docker save → ctr import.
	ConfigDigest string
}

// LocalID is the image ID an engine that keeps images in store reports for the image after
// pulling Ref: the config digest on the classic store (and Podman), the pinned digest on the
// containerd store.
func (p Pinned) LocalID(store ImageStore) string {
	if store == ContainerdStore {
		return p.Digest
	}
	return p.ConfigDigest
}

// Push uploads the spec's image (from its cached tarball) as REPO:KEY, shaped as spec.Served
// says, and returns its pin.
func (r *Registry) Push(ctx context.Context, spec ImageSpec) (Pinned, error) {
	img, err := spec.Image()
	if err != nil {
		return Pinned{}, err
	}
	key, err := spec.Key()
	if err != nil {
		return Pinned{}, err
	}
	repo := r.Host + "/" + spec.Repo
	tag, err := name.NewTag(repo+":"+key, name.Insecure)
	if err != nil {
		return Pinned{}, err
	}
	if spec.Served == SingleManifest {
		if err := remote.Write(tag, img, remote.WithContext(ctx)); err != nil {
			return Pinned{}, fmt.Errorf("push %s: %w", tag, err)
		}
		return pinnedImage(repo, img)
	}
	idx, native, err := servedIndex(img, spec.Served, spec.Repo+":"+key)
	if err != nil {
		return Pinned{}, fmt.Errorf("push %s: %w", tag, err)
	}
	if err := remote.WriteIndex(tag, idx, remote.WithContext(ctx)); err != nil {
		return Pinned{}, fmt.Errorf("push %s: %w", tag, err)
	}
	p, err := pinnedImage(repo, native)
	if err != nil {
		return Pinned{}, err
	}
	digest, err := idx.Digest()
	if err != nil {
		return Pinned{}, err
	}
	mt, err := idx.MediaType()
	if err != nil {
		return Pinned{}, err
	}
	p.Ref, p.Digest, p.MediaType = repo+"@"+digest.String(), digest.String(), string(mt)
	return p, nil
}

// pinnedImage is the pin of img served as a single manifest in repo.
func pinnedImage(repo string, img v1.Image) (Pinned, error) {
	digest, err := img.Digest()
	if err != nil {
		return Pinned{}, err
	}
	cfg, err := img.ConfigName()
	if err != nil {
		return Pinned{}, err
	}
	mt, err := img.MediaType()
	if err != nil {
		return Pinned{}, err
	}
	return Pinned{
		Ref: repo + "@" + digest.String(), Repo: repo, Digest: digest.String(), MediaType: string(mt),
		ManifestDigest: digest.String(), ConfigDigest: cfg.String(),
	}, nil
}

// Pull makes the engine pull ref (normally a Pinned.Ref) and checks what a pinned pull promises:
// the engine lists ref among the image's RepoDigests. It returns the engine's image ID.
func (e *Engine) Pull(ctx context.Context, ref string) (string, error) {
	rc, err := e.API.ImagePull(ctx, ref, image.PullOptions{})
	if err != nil {
		return "", fmt.Errorf("pull %s: %w", ref, err)
	}
	defer rc.Close()
	if err := jsonmessage.DisplayJSONMessagesStream(rc, io.Discard, 0, false, nil); err != nil {
		return "", fmt.Errorf("pull %s: %w", ref, err)
	}
	ins, err := e.API.ImageInspect(ctx, ref)
	if err != nil {
		return "", fmt.Errorf("pull %s: inspect: %w", ref, err)
	}
	if strings.Contains(ref, "@") && !slices.Contains(ins.RepoDigests, ref) {
		return "", fmt.Errorf("pull %s: the engine's RepoDigests %v do not list the pinned reference", ref, ins.RepoDigests)
	}
	return ins.ID, nil
}

// PushForPlatform uploads the spec's image with its config naming os/arch instead of the bed's
// own platform, as REPO-os-arch:KEY, and returns its pin: a single-platform manifest of another
// architecture, as some registries serve for one platform only, whatever spec.Served says. Its
// layer is the spec's, so an engine of any architecture can pull and store it (nothing in it is
// ever run).
func (r *Registry) PushForPlatform(ctx context.Context, spec ImageSpec, os, arch string) (Pinned, error) {
	img, err := spec.Image()
	if err != nil {
		return Pinned{}, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return Pinned{}, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = os, arch, ""
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return Pinned{}, err
	}
	key, err := spec.Key()
	if err != nil {
		return Pinned{}, err
	}
	repo := r.Host + "/" + spec.Repo + "-" + os + "-" + arch
	tag, err := name.NewTag(repo+":"+key, name.Insecure)
	if err != nil {
		return Pinned{}, err
	}
	if err := remote.Write(tag, img, remote.WithContext(ctx)); err != nil {
		return Pinned{}, fmt.Errorf("push %s: %w", tag, err)
	}
	return pinnedImage(repo, img)
}
