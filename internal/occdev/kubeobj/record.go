package kubeobj

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/openclaw/occ/internal/occdev/state"
)

// TypeObject is the record type of one Kubernetes object: apiVersion, kind, namespace, name
// and the UID at creation, which `down` deletes with as a precondition.
const TypeObject state.Type = "kubernetes"

func init() {
	state.Register(state.Kind{
		Type:     TypeObject,
		Fields:   state.Fields{APIVersionKind: true, Namespace: true, UID: true},
		Check:    checkRecord,
		Describe: describeRecord,
		Order:    state.InsideCluster,
		Remover:  func(c *state.Connections) state.Remover { return Remover(RecordedConn(c)) },
	})
}

var kindPattern = regexp.MustCompile(`^[A-Z][A-Za-z0-9]{0,62}$`)

func checkRecord(o state.Object) error {
	var errs []error
	if _, err := schema.ParseGroupVersion(o.APIVersion); err != nil || o.APIVersion == "" {
		errs = append(errs, fmt.Errorf("apiVersion %q must be a Kubernetes group/version such as v1 or apps/v1", o.APIVersion))
	}
	if !kindPattern.MatchString(o.Kind) {
		errs = append(errs, fmt.Errorf("kind %q must be a Kubernetes kind such as Namespace", o.Kind))
	}
	if strings.ContainsAny(o.Name, "/ ") {
		errs = append(errs, fmt.Errorf("name %q is not a Kubernetes object name", o.Name))
	}
	return errors.Join(errs...)
}

// describeRecord names an object as "v1 Namespace oce-system" or
// "apps/v1 Deployment oce-system/controller".
func describeRecord(o state.Object) string {
	s := o.APIVersion + " " + o.Kind
	if o.Namespace != "" {
		return s + " " + o.Namespace + "/" + o.Name
	}
	return s + " " + o.Name
}

// RefOf makes the record of a live or typed Kubernetes object: its kind, apiVersion,
// namespace, name and UID, and nothing else. Only metadata is read, so recording a Secret can
// never copy its data into state.json. Typed objects returned by client-go carry no
// apiVersion/kind, so those come from the client-go scheme when the object does not say.
func RefOf(obj runtime.Object) (state.Object, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return state.Object{}, fmt.Errorf("record object: %w", err)
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Empty() {
		kinds, _, err := scheme.Scheme.ObjectKinds(obj)
		if err != nil || len(kinds) == 0 {
			return state.Object{}, fmt.Errorf("record %T %q: unknown kind; set apiVersion and kind on the object", obj, m.GetName())
		}
		gvk = kinds[0]
	}
	apiVersion, kind := gvk.ToAPIVersionAndKind()
	return state.Object{
		Type:       TypeObject,
		Kind:       kind,
		APIVersion: apiVersion,
		Namespace:  m.GetNamespace(),
		Name:       m.GetName(),
		UID:        string(m.GetUID()),
	}, nil
}
