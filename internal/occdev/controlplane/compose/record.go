package compose

import (
	"fmt"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/state"
)

// The record types of what the Compose control plane creates in the engine.
const (
	// TypeNetwork is a network occ created in the recorded engine: name, engine ID and labels.
	// Earlier releases wrote it as "docker-network" or "podman-network", by engine; those
	// names still read as this type.
	TypeNetwork state.Type = "network"
	// TypeVolume is a volume occ created in the recorded engine: name and labels. Earlier
	// releases wrote it as "docker-volume" or "podman-volume".
	TypeVolume state.Type = "volume"
	// TypeProject is a Compose project occ started: its project name.
	TypeProject state.Type = "compose-project"
	// TypeServices are the long-running services of a recorded Compose project that act on the
	// cluster (the OCE API and worker): its project name. Recorded before they start, so
	// `down` stops them before anything else is removed.
	TypeServices state.Type = "compose-services"
)

func init() {
	state.Register(state.Kind{Type: TypeNetwork, Aliases: []state.Type{"docker-network", "podman-network"},
		Fields: state.Fields{ID: true, Labels: true, Engine: true}, Check: checkEngineName,
		Describe: func(o state.Object) string { return docker.EngineNameOf(o) + " network " + o.Name },
		Remover: func(c *state.Connections) state.Remover {
			return NetworkRemover(docker.VerbsOf(docker.RecordedEngine(c)))
		}})
	state.Register(state.Kind{Type: TypeVolume, Aliases: []state.Type{"docker-volume", "podman-volume"},
		Fields: state.Fields{Labels: true, Engine: true}, Check: checkEngineName,
		Describe: func(o state.Object) string { return docker.EngineNameOf(o) + " volume " + o.Name },
		Remover: func(c *state.Connections) state.Remover {
			return VolumeRemover(docker.VerbsOf(docker.RecordedEngine(c)))
		}})
	state.Register(state.Kind{Type: TypeProject, Fields: state.Fields{Labels: true}, Check: checkProjectName,
		Describe: func(o state.Object) string { return "Compose project " + o.Name },
		Remover:  func(c *state.Connections) state.Remover { return ProjectRemover(recordedProject(c)) }})
	state.Register(state.Kind{Type: TypeServices, Check: checkProjectName,
		Describe: func(o state.Object) string { return "Compose services of " + o.Name },
		Order:    state.QuiescedFirst,
		Remover:  func(c *state.Connections) state.Remover { return ServicesRemover(recordedProject(c)) }})
}

// projectKey keeps the recorded Compose project among a state's Connections.
type projectKey struct{}

// recordedProject is the recorded project over the recorded engine, one for every record of it.
func recordedProject(c *state.Connections) *Recorded {
	return state.Shared(c, projectKey{}, func(c *state.Connections) *Recorded {
		p := &Recorded{Engine: docker.RecordedEngine(c)}
		if cp := c.State().ControlPlane; cp != nil {
			p.Project = cp.Compose
		}
		return p
	})
}

func checkEngineName(o state.Object) error {
	if !state.IsEngineName(o.Name) {
		return fmt.Errorf("network or volume name %q must be letters, digits, '_', '.' and '-', at most 128", o.Name)
	}
	return nil
}

func checkProjectName(o state.Object) error {
	if !state.IsComposeProjectName(o.Name) {
		return fmt.Errorf("Compose project name %q must be lower-case letters, digits, '_' and '-', starting with a letter or digit", o.Name)
	}
	return nil
}
