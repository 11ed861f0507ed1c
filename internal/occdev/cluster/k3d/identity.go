package k3d

import (
	"fmt"

	k3dtypes "github.com/k3d-io/k3d/v5/pkg/types"

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

// Object is the state record of the cluster: its name and the labels that identify it (k3d's
// and the owner label). The kube-system UID is not part of the record; the flow records it with
// the cluster's access (state.Cluster.UID) once Create returns.
func (id Identity) Object() state.Object {
	return state.Object{Type: TypeCluster, Name: id.Name, Labels: map[string]string{
		"app":                     "k3d",
		k3dtypes.LabelClusterName: id.Name,
		OwnerLabel:                id.Owner,
	}}
}

// IdentityOf reads a recorded cluster back: name and owner from the record, uid from the
// recorded access (empty when creation never got as far as the API answering).
func IdentityOf(obj state.Object, uid string) (Identity, error) {
	if obj.Type != TypeCluster {
		return Identity{}, fmt.Errorf("state entry %s is not a %s record", obj, TypeCluster)
	}
	owner := obj.Labels[OwnerLabel]
	if obj.Name == "" || owner == "" || obj.Labels[k3dtypes.LabelClusterName] != obj.Name {
		return Identity{}, fmt.Errorf("state entry %s lacks the name and owner label that identify the cluster", obj)
	}
	return Identity{Name: obj.Name, Owner: owner, UID: uid}, nil
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
	// DNS is the node's resolver (Docker Desktop's bridge resolver read, when it was the
	// choice), and DNSCheck what the node's lookup through it showed. An adopted cluster's are
	// not known.
	DNS      NodeDNS
	DNSCheck DNSReport
}
