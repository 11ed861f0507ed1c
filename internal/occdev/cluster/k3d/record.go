package k3d

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/state"
)

// TypeCluster is the record type of a k3d cluster occ created: its name and the k3d labels
// that identify it.
const TypeCluster state.Type = "k3d-cluster"

func init() {
	state.Register(state.Kind{
		Type:     TypeCluster,
		Fields:   state.Fields{Labels: true},
		Check:    checkRecord,
		Describe: func(o state.Object) string { return "k3d cluster " + o.Name },
		Order:    state.TheCluster,
		Remover: func(c *state.Connections) state.Remover {
			return Remover(c.State().Cluster, docker.RecordedEngine(c))
		},
	})
}

// recordNamePattern is the shape of a recorded cluster name. k3d cluster names become container
// and network names; the cluster layer refuses longer names up front, and the record never
// holds one it could not have created.
var recordNamePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$`)

func checkRecord(o state.Object) error {
	var errs []error
	if !recordNamePattern.MatchString(o.Name) {
		errs = append(errs, fmt.Errorf("k3d cluster name %q must be 1 to 32 lower-case letters, digits and '-', starting and ending with a letter or digit", o.Name))
	}
	if len(o.Labels) == 0 {
		errs = append(errs, errors.New("a k3d cluster record needs the labels that identify the cluster"))
	}
	return errors.Join(errs...)
}
