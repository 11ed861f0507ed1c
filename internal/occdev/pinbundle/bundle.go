// Package pinbundle writes and reads the offline bundle of a pin set (`occ dev bundle`): one tar
// file holding every artifact the pins name, each verified against its pin, so `occ dev up` can
// later install from the file alone (Take). It is not the failure bundle `occ dev up` writes for
// a report (occdev/observe's bundle.go).
//
// The tar holds an OCI image layout — oci-layout, index.json, blobs/sha256/<hex> — and
// occ-bundle.json, the bundle's own table of contents. Each pinned image's index is a blob with
// the registry's bytes, so its digest is the pinned one; of its entries only the chosen
// platforms' manifests, configs and layers are blobs (other platforms and attestations stay
// named in the index, without content). The downloaded files (the source archive, the Agent
// Sandbox and routing manifests) and the pin set's canonical encoding are blobs by their
// SHA-256 too; the pin set's blob name is the pin set's digest.
package pinbundle

import (
	"fmt"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/occdev/pins"
)

// SchemaVersion is the occ-bundle.json format this occ writes and reads.
const SchemaVersion = 1

// The names of the bundle's files, inside the tar and inside the partial directory.
const (
	LayoutFile   = "oci-layout"
	IndexFile    = "index.json"
	ContentsFile = "occ-bundle.json"
	blobsDir     = "blobs/sha256"
)

// Annotations on index.json's entries: the image's reference (with its tag, for tools that
// import an OCI layout) and the pin it belongs to.
const (
	AnnotationRefName = "org.opencontainers.image.ref.name"
	AnnotationPin     = "dev.openclaw.occ.pin"
)

// Contents is occ-bundle.json: what the bundle holds and for which pins.
type Contents struct {
	SchemaVersion int `json:"schemaVersion"`
	// Pins is the pin set the bundle was made from.
	Pins PinSet `json:"pins"`
	// Platforms are the platforms whose image content the bundle holds (os/arch[/variant]).
	Platforms []string `json:"platforms"`
	// Artifacts are the pinned artifacts, in the order create fetched them.
	Artifacts []Artifact `json:"artifacts"`
}

// PinSet names the bundle's pin set.
type PinSet struct {
	// Digest is the hex SHA-256 of the set's canonical encoding (occ dev pins digest); the blob
	// blobs/sha256/<Digest> is that encoding.
	Digest string `json:"digest"`
	// Source is where the set came from when the bundle was made ("built in" or a file path).
	Source string `json:"source"`
}

// Artifact is one pinned artifact in the bundle.
type Artifact struct {
	// Pin is the key of its pin (for example k3s.image).
	Pin string `json:"pin"`
	// Kind is "image" or "file".
	Kind string `json:"kind"`
	// Reference is the pinned image reference, or the file's URL as messages show it (no
	// userinfo, no query).
	Reference string `json:"reference"`
	// Digest is the pinned digest: sha256:<hex> of the image's index or of the file.
	Digest string `json:"digest"`
	// MediaType is an image index's media type (OCI image index or Docker manifest list).
	MediaType string `json:"mediaType,omitempty"`
	// Size is the bytes the bundle holds for the artifact: the file, or the image's index with
	// the manifests, configs and layers of its platforms (a blob two images share counts in
	// both).
	Size int64 `json:"size"`
	// Platforms are an image's platforms in the bundle, each as its index entry states it, with
	// its manifest's digest.
	Platforms []Platform `json:"platforms,omitempty"`
}

// Platform is one platform of an image in the bundle.
type Platform struct {
	Platform string `json:"platform"`
	Manifest string `json:"manifest"`
}

// Kinds of artifact.
const (
	KindImage = "image"
	KindFile  = "file"
)

// wanted is one artifact a pin set puts into a bundle: an image or a file, which what names in
// messages.
type wanted struct {
	key   string
	image *pins.Image
	file  *pins.Artifact
	what  string
}

func (w wanted) digest() string {
	if w.image != nil {
		return w.image.Digest
	}
	return "sha256:" + w.file.SHA256
}

func (w wanted) reference() string {
	if w.image != nil {
		return w.image.String()
	}
	return contract.RedactURL(w.file.URL)
}

// wantedOf lists what a bundle of set holds: every artifact `occ dev up` downloads for the
// pins. The OCE control plane's PostgreSQL and Node base images are not among them: up takes
// them from the checkout's build, not from these pins' own use.
func wantedOf(set *pins.Set) []wanted {
	var out []wanted
	out = append(out, wanted{key: pins.KeySourceArchive, file: &set.OpenShell.SourceArchive.Artifact, what: "OpenShell source archive"})
	images := append(set.GatewayImages(), set.ClusterImages()...)
	for _, img := range images {
		out = append(out, wanted{key: img.Key, image: &img.Image})
	}
	out = append(out, wanted{key: pins.KeyAgentSandbox, file: &set.AgentSandbox.Manifest, what: "Agent Sandbox manifest"})
	// Routing controllers whose images the pins do not record are not installed by up (its plan
	// says why), so their manifests are not among what it downloads.
	if set.Routing != nil && set.Routing.Resolved() {
		for _, c := range set.Routing.Controllers() {
			out = append(out, wanted{key: c.Key + ".manifest", file: &c.Manifest, what: c.Name + " manifest"})
		}
		for _, img := range set.RoutingImages() {
			out = append(out, wanted{key: img.Key, image: &img.Image})
		}
	}
	return out
}

// DefaultPlatform is the platform of the machine occ runs on, linux/<arch>: the engine a bundle
// is most often made for is this machine's, and one platform halves the bundle.
func DefaultPlatform() string { return "linux/" + runtime.GOARCH }

// ParsePlatforms reads a comma-separated list of os/arch[/variant].
func ParsePlatforms(s string) ([]v1.Platform, error) {
	var out []v1.Platform
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		p, err := v1.ParsePlatform(part)
		if err != nil || part == "" || p.OS == "" || p.Architecture == "" || strings.Count(part, "/") > 2 || strings.Contains(part, ":") {
			return nil, fmt.Errorf("--platform %q: %q is not os/arch[/variant]; give a comma-separated list such as linux/amd64,linux/arm64", s, part)
		}
		out = append(out, *p)
	}
	return out, nil
}

// platformString is p as os/arch[/variant].
func platformString(p v1.Platform) string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}

// isAttestation reports an index entry that is no platform's image: BuildKit's attestation
// manifests (platform unknown/unknown) and entries without a platform.
func isAttestation(d v1.Descriptor) bool {
	return d.Platform == nil || d.Platform.OS == "unknown" || d.Annotations["vnd.docker.reference.type"] == "attestation-manifest"
}
