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
	return fmt.Sprintf("image %s in the engine (image ID %s) has RepoDigests %s, which do not include the pinned %s: it was not pulled by that digest (re-tagged or built locally); remove it (docker rmi %s) and let occ pull %s",
		e.Pin, e.ID, listOrNone(e.RepoDigests), e.Pin.Digest, e.ID, e.Pin.DigestReference())
}

// CheckRepoDigest requires the engine's record of where the image came from (RepoDigests, set
// only by a pull or push) to include the pinned digest under the pinned name. Docker writes
// RepoDigests in its short form (rancher/k3s@…, busybox@…), so both sides are normalised first.
//
// Podman lists RepoDigests as every repository name of the image crossed with every manifest
// digest it holds for it, so a pin pulled once under one name shows its digest under the image's
// other names too, and an image already holding the pinned digest is used without a pull. An
// engine holds a manifest digest only for a manifest it pulled or pushed, and the digest names the
// content, so on Podman the pinned digest under any of the image's names is the proof.
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
		if got.Digest == l.Pin.Digest && (l.Podman || got.Name() == l.Pin.Name()) {
			return nil
		}
	}
	return &RepoDigestError{Pin: l.Pin, ID: l.ID, RepoDigests: l.RepoDigests}
}
