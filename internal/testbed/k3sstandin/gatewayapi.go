package main

import (
	"fmt"
	"path/filepath"
	"strings"
)

// gatewayAPIFile is where the stand-in writes the Gateway API CRDs among the auto-deploy
// manifests. k3s installs them through its traefik-crd Helm chart (a helm-install Job of its
// helm controller); the stand-in has no helm controller and writes the CRDs themselves, which
// its deploy loop applies as it applies any manifest there.
const gatewayAPIFile = "gateway-api-crds.yaml"

// gatewayAPIKinds are the Gateway API kinds k3s serves (the standard channel's core kinds),
// each with the versions its CRD serves; the first is the storage version.
var gatewayAPIKinds = []struct {
	kind, plural string
	namespaced   bool
	versions     []string
}{
	{"GatewayClass", "gatewayclasses", false, []string{"v1", "v1beta1"}},
	{"Gateway", "gateways", true, []string{"v1", "v1beta1"}},
	{"HTTPRoute", "httproutes", true, []string{"v1", "v1beta1"}},
	{"GRPCRoute", "grpcroutes", true, []string{"v1"}},
	{"ReferenceGrant", "referencegrants", true, []string{"v1beta1"}},
}

// writeGatewayAPI writes the Gateway API CRDs (schemas left open: the stand-in checks no field)
// with their status subresource, as controllers write their conditions there.
func (a *addons) writeGatewayAPI() error {
	var b strings.Builder
	for _, k := range gatewayAPIKinds {
		scope := "Cluster"
		if k.namespaced {
			scope = "Namespaced"
		}
		fmt.Fprintf(&b, "---\napiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: %s.gateway.networking.k8s.io\n  annotations:\n    api-approved.kubernetes.io: https://github.com/kubernetes-sigs/gateway-api/pull/2466\n    gateway.networking.k8s.io/bundle-version: v1.3.0\n    gateway.networking.k8s.io/channel: standard\nspec:\n  group: gateway.networking.k8s.io\n  names:\n    kind: %s\n    listKind: %sList\n    plural: %s\n    singular: %s\n  scope: %s\n  versions:\n",
			k.plural, k.kind, k.kind, k.plural, strings.ToLower(k.kind), scope)
		for i, v := range k.versions {
			fmt.Fprintf(&b, "  - name: %s\n    served: true\n    storage: %t\n    subresources:\n      status: {}\n    schema:\n      openAPIV3Schema:\n        type: object\n        x-kubernetes-preserve-unknown-fields: true\n", v, i == 0)
		}
	}
	return writeFileAtomic(filepath.Join(a.dir, gatewayAPIFile), []byte(b.String()), 0o644)
}
