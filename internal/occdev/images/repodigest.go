package images

import (
	"fmt"

	"github.com/openclaw/occ/internal/occdev/pins"
)

// RepoDigestError is a local image whose RepoDigests do not include the pinned digest.
type RepoDigestError struct {
	Pin         pins.Image
	ID          string
	RepoDigests []string
}

func (e *RepoDigestError) Error() string {
	return fmt.Sprintf("image %s in the engine (image ID %s) has RepoDigests %s, which do not include the pinned %s: it is not the pinned content (re-tagged or built locally); remove it (docker rmi %s) and let occ pull %s",
		e.Pin, e.ID, listOrNone(e.RepoDigests), e.Pin.Digest, e.ID, e.Pin.DigestReference())
}

// CheckRepoDigest requires the image's RepoDigests to include the pinned digest under the pinned
// name: the engine holds that content under that name. It is content identity (an index or
// manifest digest), not proof of a pull: the classic store sets RepoDigests only on a pull or a
// push, but the containerd store derives them from the image's names, so a tag there adds one.
// That a pull by digest made the image is Present's record. Docker writes
// RepoDigests in its short form (rancher/k3s@…, busybox@…), so both sides are normalised first.
// Podman files a manifest digest under every name of the image; its engine (through the Docker
// API's Podman wrapper) reports the digest reference an image was inspected by as Docker does, so the rule is
// one for both engines.
//
// A built image has no RepoDigests; for it the rule is that its stand-in pin is its own config
// digest, so the import still carries exactly the content that was built.
func CheckRepoDigest(l Local) error {
	if l.Built {
		if l.Pin.Digest != l.ID {
			return fmt.Errorf("built image %s is named by config digest %s but the engine holds image %s: it changed after the build; run occ dev up again", l.Pin.Name(), l.Pin.Digest, l.ID)
		}
		return nil
	}
	for _, rd := range l.RepoDigests {
		got, err := pins.ParseImage(rd)
		if err != nil {
			continue
		}
		if got.Digest == l.Pin.Digest && got.Name() == l.Pin.Name() {
			return nil
		}
	}
	return &RepoDigestError{Pin: l.Pin, ID: l.ID, RepoDigests: l.RepoDigests}
}
