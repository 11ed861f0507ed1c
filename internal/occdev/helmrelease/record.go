package helmrelease

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/state"
)

// TypeRelease is the record type of a Helm release (namespace and name), which Helm tracks
// together with everything it installed.
const TypeRelease state.Type = "helm-release"

func init() {
	state.Register(state.Kind{
		Type:     TypeRelease,
		Fields:   state.Fields{Namespace: true},
		Check:    checkRecord,
		Describe: func(o state.Object) string { return "Helm release " + o.Namespace + "/" + o.Name },
		Order:    state.InsideCluster,
		Remover:  func(c *state.Connections) state.Remover { return Remover(kubeobj.RecordedConn(c)) },
	})
}

// Record returns the record of a Helm release.
func Record(namespace, name string) state.Object {
	return state.Object{Type: TypeRelease, Namespace: namespace, Name: name}
}

func checkRecord(o state.Object) error {
	var errs []error
	if o.Namespace == "" {
		errs = append(errs, errors.New("a Helm release needs its namespace"))
	}
	if msgs := validation.IsDNS1123Subdomain(o.Name); len(msgs) > 0 || len(o.Name) > 53 {
		errs = append(errs, fmt.Errorf("Helm release name %q must be a DNS subdomain of at most 53 characters", o.Name))
	}
	return errors.Join(errs...)
}
