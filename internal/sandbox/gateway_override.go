package sandbox

import (
	"errors"
	"fmt"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/gateway"
	"github.com/openclaw/occ/internal/installation"
)

// GatewayOverrideError is a gateway endpoint given to replace the openshell Backend's
// (Options.Gateway, the --gateway flag) that cannot be used. It names the flag rather than the
// Installation, which the value did not come from; Value has any credential part redacted.
type GatewayOverrideError struct {
	Value string
	Rule  string
	Fix   string
}

func (e *GatewayOverrideError) Error() string {
	return fmt.Sprintf("--gateway %q %s; %s", e.Value, e.Rule, e.Fix)
}

const overrideFix = "pass the gateway as host:port or an http(s) origin (for example 127.0.0.1:17670 for `occ gateway-emulator`, or a port-forward)"

// checkGatewayOverride refuses, before anything else is read, an override that carries a
// credential: occ never sends userinfo, a query string or a fragment to the gateway, and the
// gateway's bearer token belongs in the Backend's token file.
func checkGatewayOverride(override string) error {
	if part := contract.CredentialPart(override); part != "" {
		return &GatewayOverrideError{Value: contract.RedactURL(override),
			Rule: "carries " + part + ", where a credential would sit; occ never sends such a URL to the gateway",
			Fix:  overrideFix + "; the gateway's bearer token belongs in a token file named by the openshell Backend (configuration.auth: {mode: bearerTokenFile, path: /absolute/path/to/token})"}
	}
	return nil
}

// overrideError turns a refusal of the endpoint's value into a GatewayOverrideError when the
// endpoint came from the override; other errors pass through.
func overrideError(override string, err error) error {
	var ce *gateway.ConfigError
	if override == "" || !errors.As(err, &ce) || ce.Key != "endpoint" {
		return err
	}
	return &GatewayOverrideError{Value: contract.RedactURL(override), Rule: ce.Rule, Fix: overrideFix}
}

// installationError says which Installation a refusal came from, except a refused override,
// which names its flag on its own.
func installationError(path string, err error) error {
	var oe *GatewayOverrideError
	if errors.As(err, &oe) {
		return err
	}
	return fmt.Errorf("Installation %s: %w", path, err)
}

// checkGateway resolves the gateway configuration before any cluster or gateway is contacted,
// so a bad --gateway is refused first.
func checkGateway(in *installation.Installation, path, override string) error {
	if err := checkGatewayOverride(override); err != nil {
		return err
	}
	if _, err := GatewayConfig(in.OpenShellBackend(), override); err != nil {
		return installationError(path, err)
	}
	return nil
}
