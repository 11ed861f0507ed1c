package k3d

import (
	"strconv"
	"strings"

	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/pins"
)

// EnvK3sImage selects the node image of the cluster occ creates instead of the pinned one, as
// the reference's setting of that name does.
const EnvK3sImage = "OCC_DEVELOPMENT_K3S_IMAGE"

// MinKubernetesMinor is the oldest Kubernetes minor release (1.x) a selected node image may run:
// the reference's floor for the setting.
const MinKubernetesMinor = 35

// NodeImageSelection is a node image selected with EnvK3sImage instead of the pinned one, as the
// plan document shows it.
type NodeImageSelection struct {
	// Image is the reference as given.
	Image string `json:"image"`
	// Tag is true when it carries no digest: the pull resolves the tag at its registry first.
	Tag bool `json:"tag,omitempty"`
}

// SelectNodeImage applies EnvK3sImage (value) to the pins of a plan whose cluster provider is
// provider: the selected image replaces the pinned k3s image in a copy of set (set itself is
// unchanged), so the cluster, the pull, the Gateway chart's render and the dry run all use it.
// An empty value keeps set and selects nothing; another provider, which creates no k3d node,
// refuses it.
func SelectNodeImage(provider, value string, set *pins.Set) (*pins.Set, *NodeImageSelection, error) {
	if value == "" {
		return set, nil, nil
	}
	if provider != Name {
		return nil, nil, &option.Error{Option: EnvK3sImage, Value: value, Rule: "selects the node image of the k3d cluster occ creates, and --cluster-provider " + provider + " creates none",
			Fix: "unset it, or use --cluster-provider " + Name}
	}
	img, err := checkNodeImage(value)
	if err != nil {
		return nil, nil, err
	}
	selected := *set
	selected.K3s.Image = img
	return &selected, &NodeImageSelection{Image: value, Tag: img.Digest == ""}, nil
}

// checkNodeImage checks a node image selected with EnvK3sImage: a k3s image whose tag names a
// k3s release (the Gateway chart is rendered for that Kubernetes version before the cluster
// exists) of Kubernetes 1.35 or newer, by digest or by tag alone. A tag is resolved to the digest
// its registry serves when up pulls it; the node runs that digest. A release channel such as
// "+v1.35" or "stable" is refused: looking it up is the network call a digest avoids.
func checkNodeImage(value string) (pins.Image, error) {
	const fix = "name a k3s release image, e.g. docker.io/rancher/k3s:v1.35.8-k3s1 (resolved to a digest at its registry) or docker.io/rancher/k3s:v1.35.8-k3s1@sha256:<digest>; unset it for the pinned image"
	bad := func(rule string) error { return &option.Error{Option: EnvK3sImage, Value: value, Rule: rule, Fix: fix} }
	if strings.HasPrefix(value, "+") || value == "stable" || value == "latest" {
		return pins.Image{}, bad("is a k3s release channel; occ does not look channels up")
	}
	img, err := pins.ParseImage(value)
	if err != nil {
		return pins.Image{}, bad("is not an image reference (" + err.Error() + ")")
	}
	release, ok := pins.K3sRelease(img)
	if !ok {
		return pins.Image{}, bad("has no k3s release tag (vMAJOR.MINOR.PATCH-k3sN); the Gateway chart is rendered for the Kubernetes version the tag names")
	}
	parts := strings.SplitN(strings.TrimPrefix(release, "v"), ".", 3)
	major, _ := strconv.Atoi(parts[0])
	minor, _ := strconv.Atoi(parts[1])
	if major < 1 || (major == 1 && minor < MinKubernetesMinor) {
		return pins.Image{}, bad("runs Kubernetes " + release + "; the cluster needs Kubernetes 1." + strconv.Itoa(MinKubernetesMinor) + " or newer")
	}
	return img, nil
}
