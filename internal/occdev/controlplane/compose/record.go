package compose

import (
	"fmt"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/state"
)

// The record types of what the Compose control plane creates in the engine.
const (
	// TypeNetwork is a Docker network occ created: name, engine ID and labels.
	TypeNetwork state.Type = "docker-network"
	// TypeVolume is a Docker volume occ created: name and labels.
	TypeVolume state.Type = "docker-volume"
	// TypePodmanNetwork and TypePodmanVolume are the same records of a project on Podman.
	TypePodmanNetwork state.Type = "podman-network"
	TypePodmanVolume  state.Type = "podman-volume"
	// TypeProject is a Compose project occ started: its project name.
	TypeProject state.Type = "compose-project"
	// TypeServices are the long-running services of a recorded Compose project that act on the
	// cluster (the OCE API and worker): its project name. Recorded before they start, so
	// `down` stops them before anything else is removed.
	TypeServices state.Type = "compose-services"
)

func init() {
	for _, engine := range []struct {
		name            string
		network, volume state.Type
	}{{"Docker", TypeNetwork, TypeVolume}, {"Podman", TypePodmanNetwork, TypePodmanVolume}} {
		state.Register(state.Kind{Type: engine.network, Fields: state.Fields{ID: true, Labels: true}, Check: checkEngineName,
			Describe: func(o state.Object) string { return engine.name + " network " + o.Name },
			Remover:  func(c *state.Connections) state.Remover { return NetworkRemover(docker.RecordedEngine(c)) }})
		state.Register(state.Kind{Type: engine.volume, Fields: state.Fields{Labels: true}, Check: checkEngineName,
			Describe: func(o state.Object) string { return engine.name + " volume " + o.Name },
			Remover:  func(c *state.Connections) state.Remover { return VolumeRemover(docker.RecordedEngine(c)) }})
	}
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

// IsNetwork and IsVolume report whether t records a project's network or volume, on either
// engine.
func IsNetwork(t state.Type) bool { return t == TypeNetwork || t == TypePodmanNetwork }
func IsVolume(t state.Type) bool  { return t == TypeVolume || t == TypePodmanVolume }

// networkType and volumeType are the record types of the model's engine.
func (m *Model) networkType() state.Type {
	if m.podman {
		return TypePodmanNetwork
	}
	return TypeNetwork
}

func (m *Model) volumeType() state.Type {
	if m.podman {
		return TypePodmanVolume
	}
	return TypeVolume
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
