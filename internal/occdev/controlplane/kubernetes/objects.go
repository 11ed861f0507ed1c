package kubernetes

import (
	"maps"

	"github.com/openclaw/occ/internal/occdev/kubeobj"
)

// Ownership is how this state marks what it creates: app.kubernetes.io/managed-by and occ's
// ownership label with the state's id (kubeobj.OwnerLabels). The recorded-object client puts
// them on every object it creates; the builders here also put them on every Pod template, so
// Pods are recognisable as well as their owners.
type Ownership struct {
	Labels map[string]string
}

// OwnershipOf is the ownership of the state conn acts for.
func OwnershipOf(conn *kubeobj.Conn) Ownership {
	return Ownership{Labels: kubeobj.OwnerLabels(conn.Owner())}
}

// with returns the ownership labels plus extra (extra wins on a clash, which callers avoid).
func (o Ownership) with(extra map[string]string) map[string]string {
	out := make(map[string]string, len(o.Labels)+len(extra))
	maps.Copy(out, o.Labels)
	maps.Copy(out, extra)
	return out
}

// owns reports whether labels carry every ownership label with its value.
func (o Ownership) owns(labels map[string]string) bool {
	if len(o.Labels) == 0 {
		return false
	}
	for k, v := range o.Labels {
		if labels[k] != v {
			return false
		}
	}
	return true
}
