package kubernetes

import (
	"k8s.io/apimachinery/pkg/runtime"
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
	objs := typed(ControlPlaneSecretObjects(cp.cfg.Namespace, cp.own, cp.credentials, installation))
	if cp.cfg.Routing {
		objs = append(objs, GatewayKeySecretObject(cp.cfg.Namespace, cp.own, cp.credentials))
	}
	return objs
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
