package kubeobj

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/openclaw/occ/internal/occdev/step"
)

// Describe is the dry run's account of the manifests a step applies: each object named as its
// record in the state names it (RefOf), with what the manifest itself says (a Secret's
// keys, a claim's class and size, a Service's node port) and then the step's own words about
// it from extra, keyed "Kind name" (what the step waits for, what a value will be).
func Describe(objs []runtime.Object, extra map[string]string) []step.Object {
	out := make([]step.Object, 0, len(objs))
	used := 0
	for _, o := range objs {
		ref, err := RefOf(o)
		if err != nil {
			// Every manifest a step describes is a client-go type, which RefOf knows;
			// the callers' unit tests describe every step.
			panic(fmt.Sprintf("describe the manifests: %v", err))
		}
		notes := []string{}
		if n := manifestNote(o); n != "" {
			notes = append(notes, n)
		}
		if n, ok := extra[ref.Kind+" "+ref.Name]; ok {
			notes = append(notes, n)
			used++
		}
		out = append(out, step.Object{Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name, Note: strings.Join(notes, "; ")})
	}
	if used != len(extra) {
		// A note for an object the step does not apply is a step list that names the wrong
		// object; the unit test describes every step.
		panic(fmt.Sprintf("describe the manifests: notes %v name objects the step does not apply", extra))
	}
	return out
}

// manifestNote is what a dry run says of a manifest from its own content.
func manifestNote(o runtime.Object) string {
	switch m := o.(type) {
	case *corev1.Secret:
		keys := slices.Sorted(maps.Keys(m.Data))
		if len(keys) == 1 {
			return "key " + keys[0]
		}
		return "keys " + strings.Join(keys, ", ")
	case *corev1.PersistentVolumeClaim:
		class := ""
		if m.Spec.StorageClassName != nil {
			class = *m.Spec.StorageClassName + ", "
		}
		size := m.Spec.Resources.Requests[corev1.ResourceStorage]
		return class + size.String()
	case *corev1.Service:
		if m.Spec.Type != corev1.ServiceTypeNodePort {
			return ""
		}
		ports := make([]string, 0, len(m.Spec.Ports))
		for _, p := range m.Spec.Ports {
			ports = append(ports, fmt.Sprint(p.NodePort))
		}
		return "NodePort " + strings.Join(ports, ", ")
	}
	return ""
}
