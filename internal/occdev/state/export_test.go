package state

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
)

// The record types of the layers that make records, by the names their records carry on disk.
// Their kinds (fields, rules, descriptions) are registered by those layers: this package's
// external tests (kinds_test.go) import them, which registers the kinds in this test binary,
// so the store's tests here run against the real rules of every type.
const (
	TypeKubernetes      Type = "kubernetes"
	TypeHelmRelease     Type = "helm-release"
	TypeK3dCluster      Type = "k3d-cluster"
	TypePulledImage     Type = "pulled-image"
	TypeClusterImage    Type = "cluster-image"
	TypeNetwork         Type = "network"
	TypeVolume          Type = "volume"
	TypeComposeProject  Type = "compose-project"
	TypeComposeServices Type = "compose-services"
)

// refOf is kubeobj.RefOf, the Kubernetes layer's record of a typed object, set by the external
// tests (which may import kubeobj) through SetRefOf.
var refOf func(runtime.Object) (Object, error)

// SetRefOf hands the internal tests the Kubernetes layer's record maker.
func SetRefOf(f func(runtime.Object) (Object, error)) { refOf = f }

// Kinds returns the registered record types, sorted.
func Kinds() []Type {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	return slices.Sorted(maps.Keys(kinds))
}
