package images

import (
	"context"
	"fmt"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/pins"
)

// Built is an image occ built in the engine from the checkout (the Kubernetes-only profile's
// controller and Agent runtime). It was never pulled, so no registry digest names it: its image
// ID (the config digest on the classic store, its manifest's digest on the containerd store)
// stands in for the pin. Import and VerifyInNode then treat it like a pinned image: the node
// must hold exactly that image (Local.Holds), and the cluster names it <repository>@<image ID>
// (a name in the node's containerd, which is what pullPolicy Never looks up), so the chart's
// immutable-digest rule holds and a rebuilt image can never be confused with this one.
//
// ref is the build's tag and id the image ID the build reported. The image is looked up by that
// ID, never by the tag: another build on the same engine may move the tag meanwhile, and the
// import must carry what this build made.
func Built(ctx context.Context, eng engine.Engine, ref, id string) (Local, error) {
	pin, err := pins.ParseImage(ref)
	if err != nil {
		return Local{}, fmt.Errorf("built image %s: %w", ref, err)
	}
	if pin.Digest != "" {
		return Local{}, fmt.Errorf("built image %s names a digest: a built image is named by its tag, and a digest reference is a pinned or selected image", ref)
	}
	if !digestPattern.MatchString(id) {
		return Local{}, fmt.Errorf("built image %s has image ID %q, not a sha256 digest", ref, id)
	}
	ins, err := eng.Image(ctx, id)
	if err != nil {
		return Local{}, fmt.Errorf("inspect built image %s (%s): %w", ref, id, err)
	}
	if ins.ID != id {
		return Local{}, fmt.Errorf("built image %s: the engine answers image %s for ID %s", ref, ins.ID, id)
	}
	l, err := describe(ctx, eng, pin, id, ins, Platform{})
	if err != nil {
		return Local{}, fmt.Errorf("built image %s: %w", ref, err)
	}
	l.Pin.Digest, l.Built = ins.ID, true
	return l, nil
}
