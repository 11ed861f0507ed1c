package controlplane

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/pins"
)

// The settings that select prebuilt control-plane images instead of a build from the checkout
// (reference settings table), and the Node base override of the controller build.
const (
	EnvControllerImage = "OCC_DEVELOPMENT_CONTROLLER_IMAGE"
	EnvRuntimeImage    = "OCC_KUBERNETES_RUNTIME_IMAGE"
	EnvNodeBaseImage   = "OCC_DEVELOPMENT_NODE_BASE_IMAGE"
)

// RevisionLabel is the OCI label OCE's CI stamps with the source commit. A local build carries
// none (the Dockerfiles set it only from a build argument occ does not pass), so the label is
// checked on selected images only.
const RevisionLabel = "org.opencontainers.image.revision"

// The reference's own wording for the selection rules, kept verbatim so that people who know
// the reference launcher recognise them; each error adds the value and the fix.
const (
	msgSelectTogether  = "OCC_DEVELOPMENT_CONTROLLER_IMAGE and OCC_KUBERNETES_RUNTIME_IMAGE must be selected together"
	msgDigestsOnly     = "selected controller and runtime images must use immutable sha256 digest references"
	msgRevisionMissing = "selected image revision does not match checkout %s: %s"
)

// ImageSelection is the developer's choice of prebuilt controller and Agent runtime images.
// Both empty means "build them from the checkout".
type ImageSelection struct {
	// Controller is OCC_DEVELOPMENT_CONTROLLER_IMAGE.
	Controller string
	// Runtime is OCC_KUBERNETES_RUNTIME_IMAGE.
	Runtime string
}

// Selected reports whether any image is selected.
func (s ImageSelection) Selected() bool { return s.Controller != "" || s.Runtime != "" }

// Validate applies the rules that need no engine: both or neither, and digest references only
// (a tag can be moved to other content between the check and the import; a digest cannot). It
// runs before anything is created.
func (s ImageSelection) Validate() error {
	if !s.Selected() {
		return nil
	}
	if s.Controller == "" || s.Runtime == "" {
		setKey, setValue, unsetKey := EnvControllerImage, s.Controller, EnvRuntimeImage
		if s.Controller == "" {
			setKey, setValue, unsetKey = EnvRuntimeImage, s.Runtime, EnvControllerImage
		}
		return fmt.Errorf("%s: %s is %q but %s is unset; set both to <repository>@sha256:<64 hex> references of images built from this checkout, or unset both to build them from the checkout",
			msgSelectTogether, setKey, setValue, unsetKey)
	}
	var bad []string
	for _, c := range []struct{ key, ref string }{{EnvControllerImage, s.Controller}, {EnvRuntimeImage, s.Runtime}} {
		if err := requireDigestReference(c.ref); err != nil {
			bad = append(bad, fmt.Sprintf("%s=%q (%v)", c.key, c.ref, err))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s: %s; use <repository>@sha256:<64 hex> (`docker image inspect --format '{{index .RepoDigests 0}}' <image>` prints it)",
			msgDigestsOnly, strings.Join(bad, ", "))
	}
	return nil
}

// requireDigestReference accepts [registry/]repository[:tag]@sha256:<64 hex>.
func requireDigestReference(ref string) error {
	img, err := pins.ParseImage(ref)
	if err != nil {
		return err
	}
	if img.Digest == "" {
		return errors.New("no @sha256 digest")
	}
	return nil
}

// LocalImage is an image in the local engine.
type LocalImage struct {
	// Reference names the image in the engine: the selected digest reference, or the build tag.
	Reference string `json:"reference"`
	// ID is the engine's image ID, the digest of the image configuration ("sha256:…"). The
	// import into the cluster node verifies the node holds exactly this configuration.
	ID string `json:"id"`
}

// ControlPlaneImages are the controller and Agent runtime images the Kubernetes-only profile
// imports into the cluster.
type ControlPlaneImages struct {
	Controller LocalImage `json:"controller"`
	Runtime    LocalImage `json:"runtime"`
	// Selected is true when the images were selected by digest rather than built.
	Selected bool `json:"selected"`
}

// ImageInspector is the engine's verb the selected-image check uses (engine.Engine has it).
type ImageInspector interface {
	Image(ctx context.Context, ref string) (engine.Image, error)
}

var commitPattern = regexp.MustCompile(`^[a-f0-9]{40}$`)

// VerifySelectedImages checks a valid selection against the engine: both images must already
// exist locally (occ never pulls a selected image: the developer vouches for what they built),
// and each image's revision label must equal the checkout commit, so the control plane that runs
// is the one the checkout describes.
func VerifySelectedImages(ctx context.Context, eng ImageInspector, sel ImageSelection, commit string) (ControlPlaneImages, error) {
	if err := sel.Validate(); err != nil {
		return ControlPlaneImages{}, err
	}
	if !sel.Selected() {
		return ControlPlaneImages{}, errors.New("no controller and runtime images are selected; build them from the checkout instead")
	}
	if !commitPattern.MatchString(commit) {
		return ControlPlaneImages{}, fmt.Errorf("checkout commit %q is not 40 lower-case hex digits: cannot compare image revisions with it", commit)
	}
	var errs []error
	verify := func(role, key, ref string) LocalImage {
		info, err := eng.Image(ctx, ref)
		if engine.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("explicitly selected %s image must already exist locally: %s (%s); pull or load it into this engine first, or unset %s and %s to build both from the checkout",
				role, ref, key, EnvControllerImage, EnvRuntimeImage))
			return LocalImage{}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("inspect selected %s image %s (%s): %w", role, ref, key, err))
			return LocalImage{}
		}
		label := info.Labels[RevisionLabel]
		if label != commit {
			found := fmt.Sprintf("its label %s is %q", RevisionLabel, label)
			if label == "" {
				found = "it has no " + RevisionLabel + " label"
			}
			errs = append(errs, fmt.Errorf(msgRevisionMissing+" (%s, %s); select images built from this checkout's commit, or unset %s and %s to build both from the checkout",
				commit, ref, key, found, EnvControllerImage, EnvRuntimeImage))
			return LocalImage{}
		}
		return LocalImage{Reference: ref, ID: info.ID}
	}
	out := ControlPlaneImages{Selected: true}
	out.Controller = verify("controller", EnvControllerImage, sel.Controller)
	out.Runtime = verify("runtime", EnvRuntimeImage, sel.Runtime)
	if len(errs) > 0 {
		return ControlPlaneImages{}, errors.Join(errs...)
	}
	return out, nil
}

// NodeBaseImage is the NODE_BASE_IMAGE build argument of the controller: the override
// (OCC_DEVELOPMENT_NODE_BASE_IMAGE) when set, else the pinned Node base. The root Dockerfile has
// no default and asks for an approved immutable Node 24 image, so an override must be a digest
// reference too.
func NodeBaseImage(override string, pinned pins.Image) (string, error) {
	if override == "" {
		if pinned.Digest == "" {
			return "", fmt.Errorf("the pinned Node base image %s has no digest; fix oce.nodeBaseImage in the pin file", pinned)
		}
		return pinned.String(), nil
	}
	if err := requireDigestReference(override); err != nil {
		return "", fmt.Errorf("%s=%q must be an immutable Node 24 image by digest (<repository>@sha256:<64 hex>): %v; fix or unset it to use the pinned %s",
			EnvNodeBaseImage, override, err, pinned)
	}
	return override, nil
}

// EnvPostgresImage replaces the pinned PostgreSQL of the Kubernetes-only profile.
const EnvPostgresImage = "OCC_DEVELOPMENT_POSTGRES_IMAGE"

// PostgresImage is the PostgreSQL image to pull and import: the override when set, else the
// pinned one. occ accepts the override by digest only, like every image it imports (the
// reference accepts any local reference; a tag could name other content by import time).
func PostgresImage(override string, pinned pins.Image) (string, error) {
	if override == "" {
		if pinned.Digest == "" {
			return "", fmt.Errorf("the pinned PostgreSQL image %s has no digest; fix oce.postgresImage in the pin file", pinned)
		}
		return pinned.String(), nil
	}
	if err := requireDigestReference(override); err != nil {
		return "", fmt.Errorf("%s=%q must be a PostgreSQL 18 image by digest (<repository>@sha256:<64 hex>): %v; fix or unset it to use the pinned %s",
			EnvPostgresImage, override, err, pinned)
	}
	return override, nil
}
