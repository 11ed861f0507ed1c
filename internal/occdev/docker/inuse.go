package docker

import (
	"context"
	"fmt"
	"strings"

	"github.com/docker/docker/api/types/container"
)

// ImagesInUse lists the IDs of the images some container of the engine (running or not) was
// created from, each without its "sha256:" prefix, which Docker writes and Podman omits.
func (e *Engine) ImagesInUse(ctx context.Context) (map[string]bool, error) {
	list, err := e.API.ContainerList(ctx, container.ListOptions{All: true})
	if err != nil {
		return nil, fmt.Errorf("list the engine's containers: %w", err)
	}
	used := make(map[string]bool, len(list))
	for _, c := range list {
		used[BareImageID(c.ImageID)] = true
	}
	return used, nil
}

// BareImageID is an image ID without its "sha256:" prefix.
func BareImageID(id string) string { return strings.TrimPrefix(id, "sha256:") }
