package online

import (
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/openclaw/occ/internal/occdev/pins"
)

// Check is one verified fact about one pin: that a digest resolves, that a tag serves it, that a
// platform is served, that a download has its checksum.
type Check struct {
	// Pin is the pin's key in the pin file (openshell.images.gateway).
	Pin string `json:"pin"`
	// Subject is the pinned image reference or the artifact's URL (userinfo and query redacted).
	Subject string `json:"subject"`
	// Check names what was checked: "digest", "tag <tag>", a platform ("linux/arm64") or
	// "sha256".
	Check string `json:"check"`
	OK    bool   `json:"ok"`
	// Detail is what the registry or server answered, and for a miss what to do.
	Detail string `json:"detail"`
}

// Report is the outcome of Verify, its checks in pin file order.
type Report struct {
	// Source names the verified set (a pin file's path, or the embedded set).
	Source string  `json:"source"`
	Checks []Check `json:"checks"`
}

// Misses counts the checks that failed.
func (r *Report) Misses() int {
	n := 0
	for _, c := range r.Checks {
		if !c.OK {
			n++
		}
	}
	return n
}

// parallel is how many pins are checked at once: enough to overlap the registries' round
// trips, few enough not to look like a crawl.
const parallel = 4

// Verify checks every pin of set where it is served: each image's digest resolves at its
// registry, its tag (when it has one) serves that digest, and the digest is a multi-platform
// index holding every Required platform (a single-platform manifest is named with its platform,
// and misses the others); each downloaded artifact streams through SHA-256 and must match.
// Nothing is stored. A miss is a Check with OK false; the error is only for a Verify that could
// not start.
func Verify(ctx context.Context, set *pins.Set, deps Deps) (*Report, error) {
	reg, err := newRegistry(deps)
	if err != nil {
		return nil, err
	}
	v := &verifier{reg: reg, dl: downloader{transport: deps.transport()}}
	entries := set.Entries()
	results := make([][]Check, len(entries))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, e := range entries {
		if e.Image == nil && e.Artifact == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if e.Image != nil {
				results[i] = v.image(ctx, e.Key, *e.Image)
			} else {
				results[i] = []Check{v.artifact(ctx, e.Key, *e.Artifact)}
			}
		}()
	}
	wg.Wait()
	r := &Report{Source: set.Source}
	for _, checks := range results {
		r.Checks = append(r.Checks, checks...)
	}
	return r, nil
}

type verifier struct {
	reg *registry
	dl  downloader
}

func (v *verifier) image(ctx context.Context, key string, img pins.Image) []Check {
	subject := img.String()
	var out []Check
	add := func(check string, ok bool, detail string) {
		out = append(out, Check{Pin: key, Subject: subject, Check: check, OK: ok, Detail: detail})
	}
	digestRef, tagRef, err := references(img)
	if err != nil {
		add("digest", false, err.Error())
		return out
	}
	m, err := v.reg.describe(ctx, digestRef)
	switch {
	case err == nil:
		add("digest", true, "resolves to "+m.kind())
	case notFound(err):
		add("digest", false, fmt.Sprintf("the registry serves no manifest %s in %s: the digest is wrong or was deleted; fix the pin (occ dev pins resolve writes a new set)", img.Digest, img.Name()))
	default:
		add("digest", false, registryProblem(ctx, img.Registry, err))
	}
	if tagRef != nil {
		ok, detail := v.tag(ctx, img, *tagRef, m)
		add("tag "+img.Tag, ok, detail)
	}
	if m == nil {
		return out
	}
	for _, want := range Required {
		ok, detail := v.platform(ctx, img, digestRef.Context(), m, want)
		add(platformString(want), ok, detail)
	}
	return out
}

// tag checks that the pin's tag serves the pinned digest. When it serves another one, the tag's
// manifest is read too: a tag that serves an index whose entry is the pinned single-platform
// manifest is the usual cause, and its fix is to pin the index.
func (v *verifier) tag(ctx context.Context, img pins.Image, tag name.Tag, pinned *manifest) (bool, string) {
	desc, err := v.reg.puller.Head(ctx, tag)
	if err != nil {
		if notFound(err) {
			return false, fmt.Sprintf("the registry has no tag %s in %s: fix the tag in the pin, or remove it and keep the digest", img.Tag, img.Name())
		}
		return false, registryProblem(ctx, img.Registry, err)
	}
	got := desc.Digest.String()
	if got == img.Digest {
		return true, "serves the pinned digest"
	}
	detail := fmt.Sprintf("serves %s, not the pinned %s", got, img.Digest)
	if tm, err := v.reg.describe(ctx, tag); err == nil && tm.Index && pinned != nil && !pinned.Index {
		for _, e := range tm.Platforms {
			if e.Digest == img.Digest {
				return false, fmt.Sprintf("%s: %s, whose %s entry is the pinned manifest; pin the index instead: %s:%s@%s", detail, tm.kind(), platformString(e.Platform), img.Name(), img.Tag, got)
			}
		}
		return false, fmt.Sprintf("%s (%s): the tag was moved or the pin is wrong; decide which digest is meant and fix the pin", detail, tm.kind())
	}
	return false, detail + ": the tag was moved or the pin is wrong; decide which digest is meant and fix the pin"
}

// platform checks that m serves want: an index must hold an entry for it that the registry
// serves; a single manifest serves only its own platform.
func (v *verifier) platform(ctx context.Context, img pins.Image, repo name.Repository, m *manifest, want v1.Platform) (bool, string) {
	who := engineOn(want)
	if !m.Index {
		if _, ok := m.entry(want); ok {
			return true, "the pinned manifest itself (single-platform)"
		}
		return false, fmt.Sprintf("the pin is a single-platform %s manifest: %s cannot run it; pin a multi-platform index that holds %s and the other platforms (the digest its tag serves, or occ dev pins resolve)", m.platformList(), who, platformString(want))
	}
	e, ok := m.entry(want)
	if !ok {
		return false, fmt.Sprintf("the index has no %s entry (it holds %s): %s cannot run this image; pin an index that holds it", platformString(want), m.platformList(), who)
	}
	if err := v.reg.exists(ctx, repo, e.Digest); err != nil {
		if notFound(err) {
			return false, fmt.Sprintf("the index lists %s for %s, but the registry does not serve it: the image cannot be pulled there; pin another index", e.Digest, platformString(want))
		}
		return false, registryProblem(ctx, img.Registry, err)
	}
	return true, e.Digest
}

// engineOn names who needs a platform, for messages.
func engineOn(p v1.Platform) string {
	switch p.Architecture {
	case "arm64":
		return "an engine on linux/arm64 (Docker Desktop on Apple Silicon)"
	case "amd64":
		return "an engine on linux/amd64 (most laptops and CI hosts)"
	}
	return "an engine on " + platformString(p)
}

func (v *verifier) artifact(ctx context.Context, key string, a pins.Artifact) Check {
	c := Check{Pin: key, Subject: redactURL(a.URL), Check: "sha256"}
	sum, n, err := v.dl.hash(ctx, a.URL, io.Discard)
	switch {
	case err != nil:
		c.Detail = err.Error()
	case sum != a.SHA256:
		c.Detail = fmt.Sprintf("the download (%d bytes) has sha256 %s, the pin says %s: the file was replaced or the pin is wrong; fix the pin", n, sum, a.SHA256)
	default:
		c.OK = true
		c.Detail = fmt.Sprintf("matches (%d bytes)", n)
	}
	return c
}
