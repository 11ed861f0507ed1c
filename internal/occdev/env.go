package occdev

import "github.com/openclaw/occ/internal/occdev/option"

// The environment variables of the settings of `occ dev` that no lower package owns. The CLI
// binds each to its flag, and the error of a bad value names it; the other settings' variables
// are defined beside the rules that read them (state.EnvDirectory, k3d.EnvClusterName,
// controlplane.EnvRepository, locate.ChoiceEnv, …).
const (
	EnvClusterProvider = "OCC_DEVELOPMENT_CLUSTER_PROVIDER"
	EnvControlPlane    = "OCC_DEVELOPMENT_CONTROL_PLANE"
	EnvNamespace       = "OCC_DEVELOPMENT_KUBERNETES_NAMESPACE"
	EnvPinFile         = "OCC_DEVELOPMENT_PIN_FILE"
	EnvArchive         = "OCC_DEVELOPMENT_OPENSHELL_ARCHIVE"
	EnvGatewayEndpoint = "OCC_DEVELOPMENT_GATEWAY_ENDPOINT"
	EnvBundle          = "OCC_DEVELOPMENT_BUNDLE"
	EnvOffline         = "OCC_DEVELOPMENT_OFFLINE"
)

// EnvStartupTimeoutSeconds sets the startup timeout of `up` and `reload` in whole seconds (the
// flag takes a duration); its rule is option.StartupTimeout.
const EnvStartupTimeoutSeconds = option.EnvStartupTimeoutSeconds
