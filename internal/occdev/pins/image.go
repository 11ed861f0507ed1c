package pins

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Image is a container image reference split the way the OpenShell Helm charts consume it:
// registry, repository and digest are separate values, and the tag is informational only
// (a digest always wins, so the chart values drop the tag).
type Image struct {
	// Registry is the host (and optional port) serving the image, for example "ghcr.io".
	Registry string
	// Repository is the path inside the registry, for example "nvidia/openshell/gateway".
	Repository string
	// Tag is the human-readable tag, empty when the reference carried none.
	Tag string
	// Digest is the content digest "sha256:<64 hex>", empty when the reference carried none.
	Digest string
}

// The grammar follows the distribution reference format, narrowed to what occ accepts: lower-case
// path components, sha256 digests only.
var (
	registryPattern  = regexp.MustCompile(`^(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*(?::[0-9]{1,5})?$`)
	componentPattern = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$`)
	tagPattern       = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	digestPattern    = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
)

// dockerHub is the registry implied by references without a registry component, as Docker and
// containerd resolve them.
const dockerHub = "docker.io"

// ParseImage splits ref ("[registry/]repository[:tag][@sha256:<hex>]") into its parts. A first
// path component counts as a registry when it contains a dot or a port, or is "localhost";
// otherwise the registry is docker.io and single-component names gain "library/".
func ParseImage(ref string) (Image, error) {
	if ref == "" {
		return Image{}, fmt.Errorf("image reference is empty; expected [registry/]repository[:tag]@sha256:<64 hex>")
	}
	if strings.TrimSpace(ref) != ref {
		return Image{}, fmt.Errorf("image reference %q has surrounding whitespace; remove it", ref)
	}
	var img Image
	name := ref
	if at := strings.Index(name, "@"); at >= 0 {
		img.Digest = name[at+1:]
		name = name[:at]
		if !digestPattern.MatchString(img.Digest) {
			return Image{}, fmt.Errorf("image reference %q: digest %q must be sha256: followed by 64 lower-case hex digits", ref, img.Digest)
		}
	}
	// A colon after the last slash separates the tag; a colon before it belongs to a registry port.
	if colon := strings.LastIndex(name, ":"); colon > strings.LastIndex(name, "/") {
		img.Tag = name[colon+1:]
		name = name[:colon]
		if !tagPattern.MatchString(img.Tag) {
			return Image{}, fmt.Errorf("image reference %q: tag %q must match [A-Za-z0-9_][A-Za-z0-9_.-]{0,127}", ref, img.Tag)
		}
	}
	parts := strings.Split(name, "/")
	if len(parts) > 1 && (strings.ContainsAny(parts[0], ".:") || parts[0] == "localhost") {
		img.Registry = parts[0]
		parts = parts[1:]
		if !registryPattern.MatchString(img.Registry) {
			return Image{}, fmt.Errorf("image reference %q: registry %q is not a valid host[:port]", ref, img.Registry)
		}
	} else {
		img.Registry = dockerHub
		if len(parts) == 1 {
			parts = append([]string{"library"}, parts...)
		}
	}
	for _, c := range parts {
		if !componentPattern.MatchString(c) {
			return Image{}, fmt.Errorf("image reference %q: repository component %q must be lower-case letters and digits separated by '.', '_', '__' or '-'", ref, c)
		}
	}
	img.Repository = strings.Join(parts, "/")
	return img, nil
}

// Name is registry/repository, the reference without tag or digest.
func (i Image) Name() string { return i.Registry + "/" + i.Repository }

// DigestReference is registry/repository@digest: the immutable reference a runtime pulls.
func (i Image) DigestReference() string {
	if i.Digest == "" {
		return i.Name()
	}
	return i.Name() + "@" + i.Digest
}

// String is the full reference as written in a pin file, tag included.
func (i Image) String() string {
	s := i.Name()
	if i.Tag != "" {
		s += ":" + i.Tag
	}
	if i.Digest != "" {
		s += "@" + i.Digest
	}
	return s
}

// MarshalJSON writes the reference as one string, the form pin files use.
func (i Image) MarshalJSON() ([]byte, error) { return json.Marshal(i.String()) }

// UnmarshalJSON parses a reference string.
func (i *Image) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("image reference must be a string: %w", err)
	}
	img, err := ParseImage(s)
	if err != nil {
		return err
	}
	*i = img
	return nil
}
