package images

import (
	"errors"
	"fmt"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/state"
)

// The record types of the images occ makes present.
const (
	// TypeDockerImage is an image occ pulled into the Docker engine: repository, pinned digest
	// and the local image ID the pull produced.
	TypeDockerImage state.Type = "docker-image"
	// TypePodmanImage is the same record of an image occ pulled into a Podman engine.
	TypePodmanImage state.Type = "podman-image"
	// TypeClusterImage is an image occ imported into the recorded cluster's node: repository,
	// pinned digest and the config digest found in the node.
	TypeClusterImage state.Type = "cluster-image"
)

func init() {
	fields := state.Fields{ID: true, Digest: true}
	for typ, engine := range map[state.Type]string{TypeDockerImage: "Docker", TypePodmanImage: "Podman"} {
		state.Register(state.Kind{Type: typ, Fields: fields, Check: checkRecord,
			Describe: func(o state.Object) string { return engine + " image " + o.Name + "@" + o.Digest },
			Order:    state.SideBySide,
			Remover:  func(c *state.Connections) state.Remover { return DockerImageRemover(docker.RecordedEngine(c)) }})
	}
	state.Register(state.Kind{Type: TypeClusterImage, Fields: fields, Check: checkRecord,
		Describe: func(o state.Object) string { return "cluster image " + o.Name + "@" + o.Digest },
		Order:    state.SideBySide,
		Remover: func(c *state.Connections) state.Remover {
			return ClusterImageRemover(c.State().Cluster, docker.RecordedEngine(c))
		}})
}

// PulledType is the record type of a pull into the engine messages call engineName: Podman's
// own, else Docker's (the type records written before Podman was supported carry).
func PulledType(engineName string) state.Type {
	if engineName == "Podman" {
		return TypePodmanImage
	}
	return TypeDockerImage
}

// IsPulled reports whether t is the record type of a pull into an engine.
func IsPulled(t state.Type) bool { return t == TypeDockerImage || t == TypePodmanImage }

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
