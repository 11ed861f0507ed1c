package docker

import (
	"context"
	"fmt"
	"strings"
)

// ImagesInUse lists the IDs of the images some container of the engine (running or not) was
// created from, each without its "sha256:" prefix, which Docker writes and Podman omits.
func (e *Engine) ImagesInUse(ctx context.Context) (map[string]bool, error) {
	used, err := e.Verbs().ImagesInUse(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the engine's containers: %w", err)
	}
	return used, nil
}

// BareImageID is an image ID without its "sha256:" prefix.
func BareImageID(id string) string { return strings.TrimPrefix(id, "sha256:") }
