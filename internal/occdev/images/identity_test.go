package images

import (
	"encoding/json"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/openclaw/occ/internal/occdev/engine"
)

const (
	digestIndex    = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	digestAmd64    = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	digestArm64    = "sha256:3333333333333333333333333333333333333333333333333333333333333333"
	digestAttest   = "sha256:4444444444444444444444444444444444444444444444444444444444444444"
	digestConfig   = "sha256:5555555555555555555555555555555555555555555555555555555555555555"
	digestEngineMf = "sha256:6666666666666666666666666666666666666666666666666666666666666666"
)

var (
	linuxAmd64 = Platform{OS: "linux", Architecture: "amd64"}
	linuxArm64 = Platform{OS: "linux", Architecture: "arm64"}
)

// Each store keeps its own identity of an image, and the node's image is judged by it: on the
// classic store the config digest (docker save writes a manifest of the engine's own), on the
// containerd store the pinned index or its platform manifest (the registry's own digests). A
// config digest that equals nothing the containerd store names is refused, naming the link.
func TestLocalHoldsByTheIdentityOfItsStore(t *testing.T) {
	plat := &ocispec.Platform{OS: "linux", Architecture: "amd64"}
	classic := Local{ID: digestConfig, Store: StoreClassic}
	indexWithManifest := Local{ID: digestIndex, Store: StoreContainerd, Manifest: digestAmd64, ManifestPlatform: plat}
	indexOldAPI := Local{ID: digestIndex, Store: StoreContainerd}
	cases := []struct {
		name    string
		local   Local
		content nodeContent
		ok      bool
		why     string
	}{
		{"classic: the config survives an engine-written manifest", classic, nodeContent{Target: digestEngineMf, Manifest: digestEngineMf, Config: digestConfig}, true, ""},
		{"classic: another config", classic, nodeContent{Target: digestEngineMf, Manifest: digestEngineMf, Config: digestArm64}, false, "config digest is " + digestArm64},
		{"containerd: the platform manifest the engine saved", indexWithManifest, nodeContent{Target: digestAmd64, Manifest: digestAmd64, Config: digestConfig}, true, ""},
		{"containerd: the whole index, followed in the node", indexWithManifest, nodeContent{Target: digestIndex, Manifest: digestAmd64, Config: digestConfig}, true, ""},
		{"containerd: the other platform's manifest", indexWithManifest, nodeContent{Target: digestArm64, Manifest: digestArm64, Config: digestConfig}, false, "lists manifest " + digestAmd64 + " for linux/amd64"},
		{"containerd: a config equal to nothing it names", indexWithManifest, nodeContent{Target: digestEngineMf, Manifest: digestEngineMf, Config: digestIndex}, false, "it holds manifest " + digestEngineMf},
		{"containerd before API 1.48: the index itself", indexOldAPI, nodeContent{Target: digestIndex, Manifest: digestAmd64, Config: digestConfig}, true, ""},
		{"containerd before API 1.48: anything else", indexOldAPI, nodeContent{Target: digestAmd64, Manifest: digestAmd64, Config: digestConfig}, false, "its target is " + digestAmd64},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ok, why := c.local.Holds(c.content)
			if ok != c.ok || !strings.Contains(why, c.why) || (ok && why != "") {
				t.Errorf("Holds = %v, %q; want %v and a reason containing %q", ok, why, c.ok, c.why)
			}
		})
	}
}

// The engine lists, under a multi-platform image on its containerd store, every entry of the
// index: the foreign platform (never pulled, so unavailable), BuildKit's attestation manifests,
// variants. The manifest the node runs is the available image of the engine's platform, its
// exact variant first, and never an attestation.
func TestManifestForPicksTheEnginesAvailableImage(t *testing.T) {
	entry := func(id string, kind string, avail bool, os, arch, variant string) engine.Manifest {
		m := engine.Manifest{ID: id, Kind: kind, Available: avail}
		if kind == engine.ManifestImage {
			m.Platform = &ocispec.Platform{OS: os, Architecture: arch, Variant: variant}
		}
		return m
	}
	list := []engine.Manifest{
		entry(digestArm64, engine.ManifestImage, false, "linux", "arm64", "v8"),
		entry(digestAmd64, engine.ManifestImage, true, "linux", "amd64", ""),
		entry(digestAttest, "attestation", true, "", "", ""),
	}
	if m, ok := manifestFor(list, linuxAmd64); !ok || m.ID != digestAmd64 {
		t.Errorf("amd64 engine: %v %v, want %s", m.ID, ok, digestAmd64)
	}
	if m, ok := manifestFor(list, linuxArm64); ok {
		t.Errorf("arm64 engine picked %s, an entry whose content the engine never pulled", m.ID)
	}
	list[0].Available = true
	if m, ok := manifestFor(list, linuxArm64); !ok || m.ID != digestArm64 {
		t.Errorf("arm64 engine: %v %v, want %s (arm64/v8 is arm64)", m.ID, ok, digestArm64)
	}
	v7 := []engine.Manifest{
		entry(digestArm64, engine.ManifestImage, true, "linux", "arm", "v6"),
		entry(digestAmd64, engine.ManifestImage, true, "linux", "arm", "v7"),
	}
	if m, ok := manifestFor(v7, Platform{OS: "linux", Architecture: "arm", Variant: "v7"}); !ok || m.ID != digestAmd64 {
		t.Errorf("arm/v7 engine: %v %v, want the v7 entry", m.ID, ok)
	}
}

// In the node an index is followed to the entry for the node's platform, as the CRI runs it:
// a whole multi-platform index (with attestations, and its foreign entry's content absent), and
// the one-entry index docker save writes around a single manifest, which names no platform.
func TestEntryForFollowsTheNodesPlatform(t *testing.T) {
	index := func(entries ...indexEntry) manifestOrIndex { return manifestOrIndex{Manifests: entries} }
	plat := func(digest, os, arch, variant string) indexEntry {
		e := indexEntry{Digest: digest}
		e.Platform = &struct {
			OS           string `json:"os"`
			Architecture string `json:"architecture"`
			Variant      string `json:"variant"`
		}{os, arch, variant}
		return e
	}
	full := index(plat(digestAmd64, "linux", "amd64", ""), plat(digestArm64, "linux", "arm64", "v8"), plat(digestAttest, "unknown", "unknown", ""))
	for _, c := range []struct {
		platform Platform
		want     string
	}{{linuxAmd64, digestAmd64}, {linuxArm64, digestArm64}} {
		if got, err := full.entryFor(&c.platform, "node", digestIndex); err != nil || got != c.want {
			t.Errorf("%s: %s, %v; want %s", c.platform, got, err, c.want)
		}
	}
	s390 := Platform{OS: "linux", Architecture: "s390x"}
	if _, err := full.entryFor(&s390, "node", digestIndex); err == nil || !strings.Contains(err.Error(), "none of them for the node's platform linux/s390x") {
		t.Errorf("s390x: %v, want a refusal naming the platform", err)
	}
	saved := index(indexEntry{Digest: digestEngineMf})
	if got, err := saved.entryFor(&linuxAmd64, "node", digestIndex); err != nil || got != digestEngineMf {
		t.Errorf("one entry without a platform: %s, %v", got, err)
	}
	if got, err := saved.entryFor(nil, "node", digestIndex); err != nil || got != digestEngineMf {
		t.Errorf("one entry, no platform asked: %s, %v", got, err)
	}
	// What ctr content get prints for BuildKit's attestation entry carries annotations beside
	// its platform; the decoder reads it as an entry that never matches.
	var m manifestOrIndex
	raw := `{"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"digest":"` + digestAttest + `","platform":{"architecture":"unknown","os":"unknown"},"annotations":{"vnd.docker.reference.type":"attestation-manifest"}}]}`
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatal(err)
	}
	if got, err := m.entryFor(&linuxAmd64, "node", digestIndex); err == nil {
		t.Errorf("an attestation-only index gave %s", got)
	}
}

// An image travels in the pass of its platform: the engine saves only the manifest it listed
// (containerd store), and ctr keeps only that platform; images of one pass share a stream.
func TestPassOf(t *testing.T) {
	arm := &ocispec.Platform{OS: "linux", Architecture: "arm64", Variant: "v8"}
	cases := []struct {
		l        Local
		platform string
		save     bool
	}{
		{Local{Store: StoreClassic, Platform: linuxAmd64}, "linux/amd64", false},
		{Local{Store: StoreContainerd, Platform: linuxArm64, Manifest: digestArm64, ManifestPlatform: arm}, "linux/arm64/v8", true},
		{Local{Store: StoreContainerd, Platform: linuxAmd64}, "linux/amd64", false},
		{Local{Store: StoreClassic}, "", false},
	}
	for _, c := range cases {
		p := passOf(c.l)
		if p.Platform != c.platform || (p.Save != nil) != c.save {
			t.Errorf("passOf(%+v) = %+v, want platform %q, save %v", c.l, p, c.platform, c.save)
		}
	}
	if passOf(cases[0].l).key() == passOf(cases[1].l).key() || passOf(cases[0].l).key() != passOf(Local{Platform: linuxAmd64}).key() {
		t.Errorf("pass keys do not tell passes apart")
	}
}
