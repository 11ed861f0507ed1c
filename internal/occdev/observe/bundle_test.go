package observe

import (
	"slices"
	"testing"

	"github.com/openclaw/occ/internal/occdev/cluster/k3d"
	"github.com/openclaw/occ/internal/occdev/helmrelease"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/state"
)

// A bundle holds every namespace of a cluster occ created (its cluster record is there), and
// only the environment's own namespaces of a cluster occ merely used: the platform namespace,
// the recorded Namespaces and the namespaces of recorded objects, sorted, each once.
func TestBundleNamespaces(t *testing.T) {
	objects := []state.Object{
		{Type: kubeobj.TypeObject, APIVersion: "v1", Kind: "Namespace", Name: "oce-system"},
		{Type: kubeobj.TypeObject, APIVersion: "apps/v1", Kind: "Deployment", Namespace: "oce-system", Name: "controller"},
		{Type: helmrelease.TypeRelease, Namespace: "agent-sandbox-system", Name: "agent-sandbox"},
	}
	used := state.State{Cluster: state.Cluster{Provider: "existing"}, PlatformNamespace: "openshell", Objects: objects}
	if got, want := bundleNamespaces(used), []string{"agent-sandbox-system", "oce-system", "openshell"}; !slices.Equal(got, want) {
		t.Errorf("existing cluster: %q, want %q", got, want)
	}
	created := state.State{Cluster: state.Cluster{Provider: k3d.Name}, PlatformNamespace: "openshell",
		Objects: append([]state.Object{{Type: k3d.TypeCluster, Name: "occ-dev"}}, objects...)}
	if got := bundleNamespaces(created); got != nil {
		t.Errorf("a cluster occ created: %q, want every namespace (nil)", got)
	}
	// A k3d cluster occ did not record (it stopped before creating one) is not one it created.
	created.Objects = objects
	if got := bundleNamespaces(created); got == nil {
		t.Error("k3d without a cluster record: every namespace, want the environment's own")
	}
}
