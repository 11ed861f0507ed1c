package installation

import (
	"fmt"
	"strconv"

	"go.yaml.in/yaml/v3"

	"github.com/openclaw/occ/internal/strictyaml"
)

// The Kubernetes Compute settings occ reads from drivers.compute.configuration, which it
// otherwise carries through untouched for the control plane's worker.
const (
	// DefaultNativeOpenClawSessionCapacity is how many retained native session workers
	// Kubernetes Compute keeps for a native OpenClaw revision when
	// runtime.nativeOpenClawSessionCapacity is omitted.
	DefaultNativeOpenClawSessionCapacity = 8
	MinNativeOpenClawSessionCapacity     = 1
	MaxNativeOpenClawSessionCapacity     = 1024

	pathSessionCapacity = pathCompute + ".configuration.runtime.nativeOpenClawSessionCapacity"
)

// msgSessionCapacity is the specification's sentence on the setting, quoted verbatim.
const msgSessionCapacity = "Kubernetes defaults to eight native workers; runtime.nativeOpenClawSessionCapacity accepts 1 through 1024."

// NativeOpenClawSessionCapacity is drivers.compute.configuration.runtime.nativeOpenClawSessionCapacity,
// the number of retained session workers Kubernetes Compute keeps inside each native OpenClaw
// revision, or DefaultNativeOpenClawSessionCapacity when it is omitted. It is meaningful only
// on an Installation that validated.
func (in *Installation) NativeOpenClawSessionCapacity() int {
	if n, ok := sessionCapacityNode(in); ok {
		if v, err := strconv.ParseInt(n.Value, 0, 64); err == nil {
			return int(v)
		}
	}
	return DefaultNativeOpenClawSessionCapacity
}

func sessionCapacityNode(in *Installation) (*yaml.Node, bool) {
	if in == nil || in.Drivers.Compute == nil || in.Drivers.Compute.Configuration == nil {
		return nil, false
	}
	n := strictyaml.MappingValue(strictyaml.MappingValue(in.Drivers.Compute.Configuration, "runtime"), "nativeOpenClawSessionCapacity")
	return n, n != nil
}

// sessionCapacity checks runtime.nativeOpenClawSessionCapacity: an unquoted whole number from 1
// to 1024, or absent.
func (v *validator) sessionCapacity(in *Installation) {
	n, ok := sessionCapacityNode(in)
	if !ok {
		return
	}
	fix := fmt.Sprintf("Write a whole number from %d to %d without quotes, or omit the key for the default %d.",
		MinNativeOpenClawSessionCapacity, MaxNativeOpenClawSessionCapacity, DefaultNativeOpenClawSessionCapacity)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		v.bad(pathSessionCapacity, strictyaml.NodeValue(n), msgSessionCapacity+" This value is "+strictyaml.AKind(n)+". "+fix)
		return
	}
	c, err := strconv.ParseInt(n.Value, 0, 64)
	if err != nil || c < MinNativeOpenClawSessionCapacity || c > MaxNativeOpenClawSessionCapacity {
		v.bad(pathSessionCapacity, n.Value, msgSessionCapacity+" "+fix)
	}
}
