package dockerbed

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// A pinned image as registries serve it: the pin names the index, whose entry for the bed's
// platform is the bed image (same config), whose other platform is real content with one more
// layer, and whose attestation manifests (BuildKit's shape) name the manifest they attest.
func TestRegistryServesEachShapeWithTheLinksPinnedNames(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r := StartRegistry(t)
	for _, shape := range []Shape{SingleManifest, OCIIndex, OCIIndexWithAttestations, DockerManifestList} {
		t.Run(shape.String(), func(t *testing.T) {
			spec := ImageSpec{Repo: "occ-bed/shape-test", Files: []File{{Path: "occ-test", Data: []byte("shapes\n")}}, Served: shape}
			local, err := spec.Image()
			if err != nil {
				t.Fatal(err)
			}
			localConfig, err := local.ConfigName()
			if err != nil {
				t.Fatal(err)
			}
			p, err := r.Push(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			if p.ConfigDigest != localConfig.String() {
				t.Errorf("ConfigDigest %s, want the bed image's config %s", p.ConfigDigest, localConfig)
			}
			if p.Ref != p.Repo+"@"+p.Digest {
				t.Errorf("Ref %s does not name Digest %s in %s", p.Ref, p.Digest, p.Repo)
			}
			ref, err := name.NewDigest(p.Ref, name.Insecure)
			if err != nil {
				t.Fatal(err)
			}
			desc, err := remote.Get(ref, remote.WithContext(ctx))
			if err != nil {
				t.Fatal(err)
			}
			if desc.Digest.String() != p.Digest || string(desc.MediaType) != p.MediaType {
				t.Fatalf("registry serves %s (%s) for the pin, Pinned says %s (%s)", desc.Digest, desc.MediaType, p.Digest, p.MediaType)
			}
			if shape == SingleManifest {
				if p.ManifestDigest != p.Digest || desc.MediaType != types.DockerManifestSchema2 {
					t.Errorf("single manifest: ManifestDigest %s, Digest %s, media type %s", p.ManifestDigest, p.Digest, desc.MediaType)
				}
				return
			}
			wantIndex, wantManifest := types.OCIImageIndex, types.OCIManifestSchema1
			if shape == DockerManifestList {
				wantIndex, wantManifest = types.DockerManifestList, types.DockerManifestSchema2
			}
			if desc.MediaType != wantIndex {
				t.Fatalf("served media type %s, want %s", desc.MediaType, wantIndex)
			}
			idx, err := desc.ImageIndex()
			if err != nil {
				t.Fatal(err)
			}
			im, err := idx.IndexManifest()
			if err != nil {
				t.Fatal(err)
			}
			byPlatform := map[string]v1.Descriptor{}
			var attestations []v1.Descriptor
			for _, m := range im.Manifests {
				if m.Platform == nil {
					t.Fatalf("index entry %s has no platform", m.Digest)
				}
				if m.Annotations[annotationReferenceType] == referenceTypeAttestation {
					attestations = append(attestations, m)
					continue
				}
				if m.MediaType != wantManifest {
					t.Errorf("entry %s has media type %s, want %s", m.Platform, m.MediaType, wantManifest)
				}
				byPlatform[m.Platform.String()] = m
			}
			native, foreign := byPlatform[nativePlatform().String()], byPlatform[foreignPlatform().String()]
			if len(byPlatform) != 2 || native.Digest.String() != p.ManifestDigest || foreign.Digest == (v1.Hash{}) {
				t.Fatalf("image entries %v; want %s at ManifestDigest %s and %s", byPlatform, nativePlatform(), p.ManifestDigest, foreignPlatform())
			}
			img, err := idx.Image(native.Digest)
			if err != nil {
				t.Fatal(err)
			}
			if cfg, err := img.ConfigName(); err != nil || cfg.String() != p.ConfigDigest {
				t.Errorf("native entry's config %s (%v), want ConfigDigest %s", cfg, err, p.ConfigDigest)
			}
			other, err := idx.Image(foreign.Digest)
			if err != nil {
				t.Fatal(err)
			}
			cf, err := other.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			layers, err := other.Layers()
			if err != nil {
				t.Fatal(err)
			}
			if cf.Architecture != foreignPlatform().Architecture || len(layers) != 2 {
				t.Errorf("foreign entry: architecture %s with %d layers, want %s with the bed image's layer and one more", cf.Architecture, len(layers), foreignPlatform().Architecture)
			}
			if shape != OCIIndexWithAttestations {
				if len(attestations) != 0 {
					t.Errorf("%s carries attestation manifests %v", shape, attestations)
				}
				return
			}
			if len(attestations) != 2 || im.Manifests[2].Digest != attestations[0].Digest {
				t.Fatalf("attestations %v; want one per platform, after the images", attestations)
			}
			attested := map[string]bool{}
			for _, a := range attestations {
				if a.Platform.OS != "unknown" || a.Platform.Architecture != "unknown" || a.MediaType != types.OCIManifestSchema1 {
					t.Errorf("attestation %s: platform %s, media type %s", a.Digest, a.Platform, a.MediaType)
				}
				attested[a.Annotations[annotationReferenceDigest]] = true
				att, err := idx.Image(a.Digest)
				if err != nil {
					t.Fatal(err)
				}
				m, err := att.Manifest()
				if err != nil {
					t.Fatal(err)
				}
				if len(m.Layers) != 1 || m.Layers[0].MediaType != mediaTypeInToto || m.Layers[0].Annotations[annotationPredicateType] != slsaProvenancePredicateType {
					t.Errorf("attestation %s layers %+v, want one in-toto statement", a.Digest, m.Layers)
				}
			}
			if !attested[native.Digest.String()] || !attested[foreign.Digest.String()] {
				t.Errorf("attestations name %v, want both image manifests", attested)
			}
		})
	}
}
