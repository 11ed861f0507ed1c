package kubernetes

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/step"
)

// The manifests each step applies, built from the control plane's Config, ownership and what
// earlier steps found. A step's Run applies them and its Describe lists the very same ones,
// built on a control plane for the dry run (describing), so the dry run cannot name an object
// the run does not create or miss one it does.

func (cp *ControlPlane) bootstrapSecretManifests() []runtime.Object {
	return []runtime.Object{PostgresBootstrapSecretObject(cp.cfg.Namespace, cp.own, cp.credentials)}
}

func (cp *ControlPlane) volumeManifests() []runtime.Object {
	return typed(VolumeClaims(cp.cfg.Namespace, cp.own))
}

func (cp *ControlPlane) preparePodManifests() []runtime.Object {
	return []runtime.Object{PreparePodObject(cp.cfg.Namespace, cp.own, cp.cfg.ControllerImage)}
}

func (cp *ControlPlane) postgresManifests() []runtime.Object {
	return []runtime.Object{PostgresStatefulSet(cp.cfg.Namespace, cp.own, cp.cfg.PostgresImage), PostgresService(cp.cfg.Namespace, cp.own)}
}

func (cp *ControlPlane) restartEgressManifests() []runtime.Object {
	return typed(RestartEgressPolicies(cp.cfg.Namespace, cp.own, cp.nodeSubnet, int32(cp.apiEndpoint.Port())))
}

func (cp *ControlPlane) controlPlaneSecretManifests(installation []byte) []runtime.Object {
	return typed(ControlPlaneSecretObjects(cp.cfg.Namespace, cp.own, cp.credentials, installation))
}

func (cp *ControlPlane) tenantBindingManifests() []runtime.Object {
	return typed(TenantBindings(cp.cfg.Namespace, cp.own))
}

func (cp *ControlPlane) proxyManifests() []runtime.Object {
	return []runtime.Object{ProxyDeploymentObject(cp.cfg.Namespace, cp.own, cp.cfg.ControllerImage), ProxyServiceObject(cp.cfg.Namespace, cp.own)}
}

func typed[T runtime.Object](objs []T) []runtime.Object {
	out := make([]runtime.Object, 0, len(objs))
	for _, o := range objs {
		out = append(out, o)
	}
	return out
}

// describing is the control plane a dry run builds the manifests on: cfg with its defaults, no
// ownership yet (labels are not described), empty credentials (a Secret is described by its
// keys, never its values), and no addresses (they are resolved against the cluster).
func describing(cfg Config) *ControlPlane {
	cfg.defaults()
	return &ControlPlane{cfg: cfg, credentials: &Credentials{}}
}

// describeObjects describes a step by the manifests its Run applies: each is named as its
// record in the state names it (kubeobj.RefOf), with what the manifest itself says (a Secret's
// keys, a claim's class and size, a Service's node port) and then the step's own words about
// it from extra, keyed "Kind name" (what the step waits for, what a value will be).
func describeObjects(objs []runtime.Object, extra map[string]string) step.Description {
	out := make([]step.Object, 0, len(objs))
	used := 0
	for _, o := range objs {
		ref, err := kubeobj.RefOf(o)
		if err != nil {
			// Every manifest above is a client-go type, which RefOf knows; the unit test
			// describes every step.
			panic(fmt.Sprintf("describe the control plane's manifests: %v", err))
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
		panic(fmt.Sprintf("describe the control plane's manifests: notes %v name objects the step does not apply", extra))
	}
	return step.Objects(out...)
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
