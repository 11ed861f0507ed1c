package images

import (
	"errors"
	"fmt"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/state"
)

// The record types of the images occ makes present.
const (
	// TypePulledImage is an image occ pulled into the recorded engine: repository, pinned
	// digest and the local image ID the pull produced. Earlier releases wrote it as
	// "docker-image" or "podman-image", by engine; those names still read as this type.
	TypePulledImage state.Type = "pulled-image"
	// TypeClusterImage is an image occ imported into the recorded cluster's node: repository,
	// pinned digest and the config digest found in the node.
	TypeClusterImage state.Type = "cluster-image"
)

func init() {
	state.Register(state.Kind{Type: TypePulledImage, Aliases: []state.Type{"docker-image", "podman-image"},
		Fields: state.Fields{ID: true, Digest: true, Engine: true}, Check: checkRecord,
		Describe: func(o state.Object) string { return docker.EngineNameOf(o) + " image " + o.Name + "@" + o.Digest },
		Order:    state.SideBySide,
		Remover: func(c *state.Connections) state.Remover {
			return PulledImageRemover(docker.VerbsOf(docker.RecordedEngine(c)))
		}})
	state.Register(state.Kind{Type: TypeClusterImage, Fields: state.Fields{ID: true, Digest: true}, Check: checkRecord,
		Describe: func(o state.Object) string { return "cluster image " + o.Name + "@" + o.Digest },
		Order:    state.SideBySide,
		Remover: func(c *state.Connections) state.Remover {
			return ClusterImageRemover(c.State().Cluster, docker.VerbsOf(docker.RecordedEngine(c)))
		}})
}

func checkRecord(o state.Object) error {
	var errs []error
	if !state.IsRepository(o.Name) {
		errs = append(errs, fmt.Errorf("image repository %q must be a repository name without tag or digest", o.Name))
	}
	if !state.IsDigest(o.Digest) {
		errs = append(errs, fmt.Errorf("image digest %q must be sha256: and 64 lower-case hex digits", o.Digest))
	}
	return errors.Join(errs...)
}
