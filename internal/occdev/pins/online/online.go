// Package online checks a pin set against the registries and download sites its pins name, and
// derives the pin set of another OpenShell release from the release itself: `occ dev pins
// verify` and `occ dev pins resolve`. It needs the network and no container engine; registry
// credentials come from the user's docker config and its credential helpers, as docker reads
// them.
package online

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/openclaw/occ/internal/occdev/pins"
)

// Deps are the outside parts the checks use. The zero value is what occ runs with.
type Deps struct {
	// Transport carries every request, to registries and download sites; nil is a transport
	// that honours the proxy environment (HTTPS_PROXY, NO_PROXY).
	Transport http.RoundTripper
	// Keychain supplies registry credentials; nil is the user's docker config
	// ($DOCKER_CONFIG/config.json or ~/.docker/config.json) with its credential helpers.
	Keychain authn.Keychain
}

// headerTimeout bounds the wait for a server's first response line; a body may then take as
// long as it needs (a source archive is tens of megabytes).
const headerTimeout = time.Minute

func (d Deps) transport() http.RoundTripper {
	if d.Transport != nil {
		return d.Transport
	}
	t := remote.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = headerTimeout
	return t
}

func (d Deps) keychain() authn.Keychain {
	if d.Keychain != nil {
		return d.Keychain
	}
	return authn.DefaultKeychain
}

// Required are the platforms every pinned image must serve: Linux engines on x86-64 (most
// laptops, CI) and on ARM64 (Docker Desktop on Apple Silicon).
var Required = []v1.Platform{{OS: "linux", Architecture: "amd64"}, {OS: "linux", Architecture: "arm64"}}

// registry reads manifests through one puller, so a registry's token is fetched once per
// repository for a whole run.
type registry struct {
	puller *remote.Puller
}

func newRegistry(d Deps) (*registry, error) {
	p, err := d.Puller()
	if err != nil {
		return nil, err
	}
	return &registry{puller: p}, nil
}

// Puller is a registry client with d's transport and credentials, for the packages that copy
// what the pins name (occ dev bundle create).
func (d Deps) Puller() (*remote.Puller, error) {
	p, err := remote.NewPuller(remote.WithTransport(d.transport()), remote.WithAuthFromKeychain(d.keychain()), remote.WithUserAgent("occ"))
	if err != nil {
		return nil, fmt.Errorf("registry client: %w", err)
	}
	return p, nil
}

// HTTPClient is a client over d's transport, for the pinned downloads.
func (d Deps) HTTPClient() *http.Client { return &http.Client{Transport: d.transport()} }

// manifest is what a registry serves under a reference.
type manifest struct {
	Digest    string
	MediaType types.MediaType
	// Index is set for a multi-platform index (OCI image index or Docker manifest list).
	Index bool
	// Platforms are the index's image entries (attestations and entries without a platform
	// left out), or for a single manifest the one platform its config names.
	Platforms []platformEntry
}

type platformEntry struct {
	Platform v1.Platform
	Digest   string
}

// describe fetches ref's manifest and the platforms it serves.
func (r *registry) describe(ctx context.Context, ref name.Reference) (*manifest, error) {
	desc, err := r.puller.Get(ctx, ref)
	if err != nil {
		return nil, err
	}
	m := &manifest{Digest: desc.Digest.String(), MediaType: desc.MediaType}
	switch desc.MediaType {
	case types.OCIImageIndex, types.DockerManifestList:
		m.Index = true
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, err
		}
		im, err := idx.IndexManifest()
		if err != nil {
			return nil, fmt.Errorf("read index %s: %w", ref, err)
		}
		for _, c := range im.Manifests {
			if c.Platform == nil || c.Platform.OS == "unknown" || c.Annotations["vnd.docker.reference.type"] == "attestation-manifest" {
				continue
			}
			m.Platforms = append(m.Platforms, platformEntry{Platform: *c.Platform, Digest: c.Digest.String()})
		}
	case types.OCIManifestSchema1, types.DockerManifestSchema2:
		img, err := desc.Image()
		if err != nil {
			return nil, err
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return nil, fmt.Errorf("read the config of %s: %w", ref, err)
		}
		m.Platforms = []platformEntry{{Platform: v1.Platform{OS: cf.OS, Architecture: cf.Architecture, Variant: cf.Variant}, Digest: m.Digest}}
	default:
		return nil, fmt.Errorf("%s is a %s, neither an image manifest nor a multi-platform index", ref, desc.MediaType)
	}
	return m, nil
}

// exists asks whether the registry serves digest in repo (a HEAD request).
func (r *registry) exists(ctx context.Context, repo name.Repository, digest string) error {
	_, err := r.puller.Head(ctx, repo.Digest(digest))
	return err
}

// PlatformMatches reports whether an index entry for have serves want: the same OS and
// architecture, and the same variant when want names one (so linux/arm64 matches the
// linux/arm64/v8 entries real indexes write).
func PlatformMatches(have, want v1.Platform) bool {
	return have.OS == want.OS && have.Architecture == want.Architecture && (want.Variant == "" || have.Variant == want.Variant)
}

// entry finds the entry of m for want.
func (m *manifest) entry(want v1.Platform) (platformEntry, bool) {
	for _, p := range m.Platforms {
		if PlatformMatches(p.Platform, want) {
			return p, true
		}
	}
	return platformEntry{}, false
}

func (m *manifest) platformList() string {
	var s []string
	for _, p := range m.Platforms {
		s = append(s, platformString(p.Platform))
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func platformString(p v1.Platform) string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// kind says in words what m is.
func (m *manifest) kind() string {
	if m.Index {
		return fmt.Sprintf("a multi-platform index (%s) for %s", m.MediaType, m.platformList())
	}
	return fmt.Sprintf("a single-platform manifest (%s) for %s", m.MediaType, m.platformList())
}

// registryProblem explains a failed registry request with its fix. Errors from the registry
// client carry the request URL without credentials and the registry's own error code; no
// credential is ever part of them.
func registryProblem(ctx context.Context, host string, err error) string {
	if ctx.Err() != nil {
		return "not checked: " + context.Cause(ctx).Error()
	}
	var terr *transport.Error
	if errors.As(err, &terr) {
		switch terr.StatusCode {
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Sprintf("the registry %s refused access (%d %s): log in with `docker login %s` (occ uses the credentials of your docker config and its credential helpers, as docker does), or check that the account may read the repository", host, terr.StatusCode, http.StatusText(terr.StatusCode), host)
		case http.StatusNotFound:
			return "not found at the registry (" + terr.Error() + ")"
		}
	}
	return fmt.Sprintf("the registry %s did not answer: %v; check the network, the proxy settings (HTTPS_PROXY) and the registry's name", host, err)
}

// notFound reports a registry's answer that the manifest does not exist.
func notFound(err error) bool {
	var terr *transport.Error
	if !errors.As(err, &terr) {
		return false
	}
	if terr.StatusCode == http.StatusNotFound {
		return true
	}
	for _, d := range terr.Errors {
		if d.Code == transport.ManifestUnknownErrorCode || d.Code == transport.NameUnknownErrorCode {
			return true
		}
	}
	return false
}

// references are the registry names of a pinned image: by digest, and by tag when it has one.
func references(img pins.Image) (name.Digest, *name.Tag, error) {
	d, err := name.NewDigest(img.Name() + "@" + img.Digest)
	if err != nil {
		return name.Digest{}, nil, fmt.Errorf("image %s: %w", img, err)
	}
	if img.Tag == "" {
		return d, nil, nil
	}
	t, err := name.NewTag(img.Name() + ":" + img.Tag)
	if err != nil {
		return name.Digest{}, nil, fmt.Errorf("image %s: %w", img, err)
	}
	return d, &t, nil
}
