package occdev

import (
	"time"
)

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
	// EnvStartupTimeoutSeconds sets the startup timeout in whole seconds (the flag takes a
	// duration).
	EnvStartupTimeoutSeconds = "OCC_DEVELOPMENT_STARTUP_TIMEOUT_SECONDS"
)

// startupTimeout applies the one rule of the startup timeout, for `up` and `reload` alike: 0
// is the default, anything else lies between 1s and 24h.
func startupTimeout(d time.Duration) (time.Duration, error) {
	switch {
	case d == 0:
		return defaultStartupTimeout, nil
	case d < time.Second || d > maxStartupTimeout:
		return 0, &OptionError{Option: "--startup-timeout (" + EnvStartupTimeoutSeconds + ")", Value: d.String(),
			Rule: "must be between 1s and 24h", Fix: "pass a duration such as 10m"}
	}
	return d, nil
}
