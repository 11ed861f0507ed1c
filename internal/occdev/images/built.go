package images

import (
	"context"
	"fmt"

	"github.com/docker/docker/client"

	"github.com/openclaw/occ/internal/occdev/pins"
)

// Built returns a locally built image (the Agent runtime occ builds from the OCE checkout) as a
// Local that Import and VerifyInNode take like a pinned one. Such an image has no registry
// manifest, so its pin is its repository at its image ID: the config digest is the one content
// address it has before the import, and the one VerifyInNode compares with the node. The
// cluster then runs it as <repository>@<image ID>, an immutable digest reference (the
// reference's launcher uses the manifest digest the import happens to write, a name occ could
// only learn after recording the import). ref is the engine's name of the image (its build
// tag); repository is the name it gets in the cluster.
func Built(ctx context.Context, api client.APIClient, ref, repository string) (Local, error) {
	ins, err := api.ImageInspect(ctx, ref)
	if err != nil {
		return Local{}, fmt.Errorf("inspect built image %s: %w", ref, err)
	}
	pin, err := pins.ParseImage(repository + "@" + ins.ID)
	if err != nil {
		return Local{}, fmt.Errorf("built image %s: %w", ref, err)
	}
	if pin.Tag != "" {
		return Local{}, fmt.Errorf("built image %s: the cluster repository %q must not carry a tag", ref, repository)
	}
	return Local{Pin: pin, ID: ins.ID, RepoDigests: ins.RepoDigests, Size: ins.Size, Built: true}, nil
}
