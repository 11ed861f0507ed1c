package kubernetes

import (
	"context"
	"maps"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/openclaw/occ/internal/occdev/state"
)

// Objects creates and removes the launcher's objects. The dev lifecycle's recorded-object
// client implements it: Ensure records obj in the private state before creating it, adopts an
// existing object of the same name only when it carries this state's ownership labels (anything
// else is refused, never taken over), and converges an adopted object to obj by server-side
// apply. Remove deletes obj only if it is still this state's.
type Objects interface {
	Ensure(ctx context.Context, obj runtime.Object) error
	Remove(ctx context.Context, obj runtime.Object) error
}

// Recorder receives what is created outside Objects (the Helm release) before it is created.
type Recorder interface {
	Record(o state.Object) error
}

// Ownership is how this state marks what it creates: app.kubernetes.io/managed-by and occ's
// ownership label with the state's id. The labels go on every object and every Pod template,
// so Pods are recognisable as well as their owners.
type Ownership struct {
	Labels map[string]string
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
