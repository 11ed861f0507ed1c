package k3d

import (
	"fmt"

	"github.com/openclaw/occ/internal/occdev/state"
)

// Identity is what the state knows about a cluster, and all Inspect and Delete trust: its name,
// the owner value written on server-0, and the kube-system UID (empty when creation never got
// as far as the API answering).
type Identity struct {
	Name  string
	Owner string
	UID   string
}

// Object is the state record of the cluster.
func (id Identity) Object() state.Object {
	return state.Object{Kind: KindCluster, Name: id.Name, UID: id.UID}
}

// IdentityOf reads a recorded cluster back. owner is the same value Create was given (the state
// directory path).
func IdentityOf(obj state.Object, owner string) (Identity, error) {
	if obj.Kind != KindCluster {
		return Identity{}, fmt.Errorf("state entry %s is not a %s", obj, KindCluster)
	}
	// A historical or hand-edited name is not re-validated against today's rule: down must be
	// able to remove what an older up created. It is only used as a Docker label value and
	// name filter, never interpreted.
	if obj.Name == "" {
		return Identity{}, fmt.Errorf("state entry %s has no cluster name", obj)
	}
	return Identity{Name: obj.Name, Owner: owner, UID: obj.UID}, nil
}

// Cluster is a created (or adopted) cluster and how to reach it.
type Cluster struct {
	Name string
	// Context is the kubeconfig context in both kubeconfigs ("k3d-<name>").
	Context string
	// Kubeconfig is <state>/kubeconfig (0600); its server is https://127.0.0.1:<API port>.
	Kubeconfig string
	// ContainerKubeconfig is <state>/container-kubeconfig (0644, for bind mounts into non-root
	// containers on the cluster's network); its server is ContainerServer.
	ContainerKubeconfig string
	Server              string
	ContainerServer     string
	// Network is the Docker network the node is on (its own, or the joined one).
	Network string
	// NodeContainer is server-0's container name, also its host name on Network.
	NodeContainer string
	// UID is the kube-system namespace UID, recorded as the cluster's identity.
	UID string
}
