package compose

import (
	"fmt"

	"github.com/openclaw/occ/internal/occdev/state"
)

// The record types of what the Compose control plane creates in the engine.
const (
	// TypeNetwork is a Docker network occ created: name, engine ID and labels.
	TypeNetwork state.Type = "docker-network"
	// TypeVolume is a Docker volume occ created: name and labels.
	TypeVolume state.Type = "docker-volume"
	// TypeProject is a Compose project occ started: its project name.
	TypeProject state.Type = "compose-project"
	// TypeServices are the long-running services of a recorded Compose project that act on the
	// cluster (the OCE API and worker): its project name. Recorded before they start, so
	// `down` stops them before anything else is removed.
	TypeServices state.Type = "compose-services"
)

func init() {
	state.Register(state.Kind{Type: TypeNetwork, Fields: state.Fields{ID: true, Labels: true}, Check: checkEngineName,
		Describe: func(o state.Object) string { return "Docker network " + o.Name }})
	state.Register(state.Kind{Type: TypeVolume, Fields: state.Fields{Labels: true}, Check: checkEngineName,
		Describe: func(o state.Object) string { return "Docker volume " + o.Name }})
	state.Register(state.Kind{Type: TypeProject, Fields: state.Fields{Labels: true}, Check: checkProjectName,
		Describe: func(o state.Object) string { return "Compose project " + o.Name }})
	state.Register(state.Kind{Type: TypeServices, Check: checkProjectName,
		Describe: func(o state.Object) string { return "Compose services of " + o.Name }})
}

func checkEngineName(o state.Object) error {
	if !state.IsEngineName(o.Name) {
		return fmt.Errorf("Docker object name %q must be letters, digits, '_', '.' and '-', at most 128", o.Name)
	}
	return nil
}

func checkProjectName(o state.Object) error {
	if !state.IsComposeProjectName(o.Name) {
		return fmt.Errorf("Compose project name %q must be lower-case letters, digits, '_' and '-', starting with a letter or digit", o.Name)
	}
	return nil
}
