package occdev

import (
	"github.com/openclaw/occ/internal/occdev/cluster/k3d"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/platform"
)

// Seams returns the test seams of o for a test to set (AfterStep).
func (o *ReloadOptions) Seams() *deps { return &o.deps }

// Seams returns the test seams of o for a test to set (Profiles).
func (o *StatusOptions) Seams() *deps { return &o.deps }

// K3dSettings are the cluster settings of options that give the k3d provider k, for a test's
// UpOptions literal (ClusterSettings), in place of the flags the CLI binds (--cluster-name,
// --api-port, --disk-threshold-percent, --k3d-dns-resolver).
func K3dSettings(k k3d.ClusterOptions) map[string]any { return map[string]any{k3d.Name: &k} }

// K3d is the k3d provider's own settings o carries, for a test to read or set in place; the
// first call on options without them gives o a fresh one.
func (o *UpOptions) K3d() *k3d.ClusterOptions {
	if k, ok := o.ClusterSettings[k3d.Name].(*k3d.ClusterOptions); ok {
		return k
	}
	k := &k3d.ClusterOptions{}
	if o.ClusterSettings == nil {
		o.ClusterSettings = map[string]any{}
	}
	o.ClusterSettings[k3d.Name] = k
	return k
}

// RoutedPinFile writes the built-in pins with routing image digests to a pin file of the test's.
var RoutedPinFile = routedPinFile

// Names the tests of the flow use; each is defined once, in its layer.
const (
	GatewayRelease       = platform.GatewayRelease
	GatewayServiceName   = platform.GatewayServiceName
	GatewayNodePort      = platform.GatewayNodePort
	GatewayJWTSecretName = platform.GatewayJWTSecretName
	RuntimeClassName     = platform.RuntimeClassName
	InstallationFileName = platform.InstallationFileName

	LabelManagedBy = kubeobj.LabelManagedBy
	ManagedByOCC   = kubeobj.ManagedByOCC
	LabelDevState  = kubeobj.LabelDevState
)
