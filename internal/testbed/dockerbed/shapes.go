package dockerbed

import (
	"encoding/json"
	"fmt"
	"runtime"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Shape is how the bed's registry serves an image. Registries serve the images occ pins as
// multi-platform indexes, in the shapes below, and an engine treats each differently (the
// containerd image store keeps the whole index as the image, pulling only its own platform's
// content), so the bed serves its images the same ways.
type Shape int

const (
	// SingleManifest serves the bed image as one image manifest (Docker schema 2 types), as
	// `docker push` of a locally built image does.
	SingleManifest Shape = iota
	// OCIIndex serves an OCI image index of two images with OCI media types: the bed image for
	// the bed's platform, and an image for the other architecture of linux/amd64 and
	// linux/arm64 (the same files plus one small layer naming its platform, and a config naming
	// that architecture), which is real, pullable content that nothing here ever pulls.
	OCIIndex
	// OCIIndexWithAttestations is OCIIndex as BuildKit publishes it with provenance (buildx's
	// default since 0.10, and Docker Official Images): after the image entries, one attestation
	// manifest per platform, with platform unknown/unknown, the annotations
	// vnd.docker.reference.type=attestation-manifest and vnd.docker.reference.digest=<that
	// platform's manifest digest>, and one in-toto statement layer (SLSA provenance).
	OCIIndexWithAttestations
	// DockerManifestList serves a Docker manifest list (schema 2 media types throughout) of the
	// same two images, as `docker manifest` and manifest-tool publish them.
	DockerManifestList
)

func (s Shape) String() string {
	switch s {
	case OCIIndex:
		return "OCI image index"
	case OCIIndexWithAttestations:
		return "OCI image index with attestation manifests"
	case DockerManifestList:
		return "Docker manifest list"
	}
	return "single image manifest"
}

// BuildKit's names for its attestation manifests (moby/buildkit util/attestation/types.go) and
// the in-toto statement layers in them.
const (
	annotationReferenceType     = "vnd.docker.reference.type"
	annotationReferenceDigest   = "vnd.docker.reference.digest"
	referenceTypeAttestation    = "attestation-manifest"
	annotationPredicateType     = "in-toto.io/predicate-type"
	mediaTypeInToto             = types.MediaType("application/vnd.in-toto+json")
	inTotoStatementType         = "https://in-toto.io/Statement/v0.1"
	slsaProvenancePredicateType = "https://slsa.dev/provenance/v0.2"
)

// Platforms of the bed's indexes: the bed's own and the other of the two that occ's pins must
// hold.
func nativePlatform() v1.Platform { return v1.Platform{OS: "linux", Architecture: runtime.GOARCH} }

func foreignPlatform() v1.Platform {
	if runtime.GOARCH == "arm64" {
		return v1.Platform{OS: "linux", Architecture: "amd64"}
	}
	return v1.Platform{OS: "linux", Architecture: "arm64"}
}

// servedIndex builds the index of shape for img, the bed image, named name in attestation
// subjects. It returns the index and the image of its native entry (img itself in a Docker
// manifest list; img with OCI media types, and the same config, in an OCI index).
func servedIndex(img v1.Image, shape Shape, name string) (v1.ImageIndex, v1.Image, error) {
	foreign, err := foreignImage(img, foreignPlatform())
	if err != nil {
		return nil, nil, err
	}
	native := img
	idx := mutate.IndexMediaType(empty.Index, types.DockerManifestList)
	if shape != DockerManifestList {
		idx = mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
		if native, err = withOCITypes(img); err != nil {
			return nil, nil, err
		}
		if foreign, err = withOCITypes(foreign); err != nil {
			return nil, nil, err
		}
	}
	entries := []struct {
		img      v1.Image
		platform v1.Platform
	}{{native, nativePlatform()}, {foreign, foreignPlatform()}}
	var adds []mutate.IndexAddendum
	for _, e := range entries {
		p := e.platform
		adds = append(adds, mutate.IndexAddendum{Add: e.img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	// BuildKit writes the attestation manifests after all the platforms' images.
	if shape == OCIIndexWithAttestations {
		for _, e := range entries {
			digest, err := e.img.Digest()
			if err != nil {
				return nil, nil, err
			}
			att, err := attestationImage(name, e.platform, digest)
			if err != nil {
				return nil, nil, err
			}
			adds = append(adds, mutate.IndexAddendum{Add: att, Descriptor: v1.Descriptor{
				Platform: &v1.Platform{OS: "unknown", Architecture: "unknown"},
				Annotations: map[string]string{
					annotationReferenceType:   referenceTypeAttestation,
					annotationReferenceDigest: digest.String(),
				},
			}})
		}
	}
	return mutate.AppendManifests(idx, adds...), native, nil
}

// foreignImage is img for platform p: its layers plus one small layer holding
// /etc/occ-bed/platform, and its config naming p's architecture.
func foreignImage(img v1.Image, p v1.Platform) (v1.Image, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	out, err := mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	layer, err := layerFromFiles([]File{{Path: "etc/occ-bed/platform", Data: []byte(p.OS + "/" + p.Architecture + "\n")}})
	if err != nil {
		return nil, err
	}
	return mutate.AppendLayers(out, layer)
}

// withOCITypes is img with OCI media types for its manifest, config and layers, and the same
// config and layer bytes.
func withOCITypes(img v1.Image) (v1.Image, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	adds := make([]mutate.Addendum, len(layers))
	for i, l := range layers {
		adds[i] = mutate.Addendum{Layer: l, MediaType: types.OCILayer}
	}
	out, err := mutate.Append(base, adds...)
	if err != nil {
		return nil, err
	}
	// The original config, whole: Append added history entries of its own.
	return mutate.ConfigFile(out, cf)
}

// attestationImage is a BuildKit-style attestation manifest for the image of platform p whose
// manifest digest is subject: an OCI manifest whose config names platform unknown/unknown and
// whose one layer is an in-toto statement of SLSA provenance about the subject.
func attestationImage(name string, p v1.Platform, subject v1.Hash) (v1.Image, error) {
	statement, err := json.Marshal(map[string]any{
		"_type":         inTotoStatementType,
		"predicateType": slsaProvenancePredicateType,
		"subject": []map[string]any{{
			"name":   fmt.Sprintf("pkg:docker/%s?platform=%s%%2F%s", name, p.OS, p.Architecture),
			"digest": map[string]string{subject.Algorithm: subject.Hex},
		}},
		"predicate": map[string]any{
			"builder":   map[string]string{"id": ""},
			"buildType": "https://mobyproject.org/buildkit@v1",
			"metadata":  map[string]any{"buildInvocationID": "occ-bed", "completeness": map[string]bool{"parameters": false, "environment": true, "materials": false}, "reproducible": false},
		},
	})
	if err != nil {
		return nil, err
	}
	layer := static.NewLayer(statement, mediaTypeInToto)
	diffID, err := layer.DiffID()
	if err != nil {
		return nil, err
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	att, err := mutate.Append(base, mutate.Addendum{
		Layer: layer, MediaType: mediaTypeInToto,
		Annotations: map[string]string{annotationPredicateType: slsaProvenancePredicateType},
	})
	if err != nil {
		return nil, err
	}
	return mutate.ConfigFile(att, &v1.ConfigFile{
		OS: "unknown", Architecture: "unknown",
		RootFS: v1.RootFS{Type: "layers", DiffIDs: []v1.Hash{diffID}},
	})
}
