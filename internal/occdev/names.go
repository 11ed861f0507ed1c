package occdev

import (
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/platform"
)

// Names callers of the flow (the CLI, the tests of the flow) see; each is defined once, in its
// layer.
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
