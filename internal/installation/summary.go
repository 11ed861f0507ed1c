package installation

import (
	"fmt"
	"strings"

	"github.com/openclaw/occ/internal/contract"
)

// Summary is what a valid Installation selects, in a form for one-line reports.
type Summary struct {
	Backend                string `json:"backend"`
	Endpoint               string `json:"endpoint"`
	SandboxDriver          string `json:"sandboxDriver"`
	ComputeDriver          string `json:"computeDriver"`
	CredentialGateway      string `json:"credentialGateway"`
	WorkspaceMode          string `json:"workspaceMode"`
	NetworkPolicies        int    `json:"networkPolicies"`
	WorkspaceResources     int    `json:"workspaceResources"`
	NetworkPolicyResources int    `json:"networkPolicyResources"`
}

// Summary describes the Installation's selections.
func (in *Installation) Summary() Summary {
	var s Summary
	if b := in.OpenShellBackend(); b != nil {
		s.Backend = b.ID
		switch c := b.Configuration; {
		case c.Endpoint != nil:
			// A valid endpoint has no credentials; redacting anyway keeps a Summary of an
			// unvalidated model from ever printing one.
			s.Endpoint = contract.RedactURL(*c.Endpoint)
		case c.ServiceName != nil:
			s.Endpoint = "service " + *c.ServiceName
		}
	}
	if in.Drivers.Compute != nil {
		s.ComputeDriver = in.Drivers.Compute.ID
	}
	if cg := in.CredentialGateway(); cg != nil {
		s.CredentialGateway = cg.ID
	}
	if c := in.SandboxConfig(); c != nil {
		s.SandboxDriver = in.SandboxDriverID()
		s.WorkspaceMode = c.Gateway.WorkspaceMode
		s.NetworkPolicies = len(c.Policy.NetworkPolicies)
		s.WorkspaceResources = len(c.Gateway.OperatorWorkspaceResources)
		s.NetworkPolicyResources = len(c.Gateway.NetworkPolicyResources)
	}
	return s
}

// String is the one-line form, for example "backend openshell (http://…:30051), sandbox
// sandbox-openshell-development on compute-kubernetes, credential gateway …, workspace mode
// operator, 1 network policy, 4 workspace resources, 1 network policy resource".
func (s Summary) String() string {
	parts := []string{
		fmt.Sprintf("backend %s (%s)", s.Backend, s.Endpoint),
		fmt.Sprintf("sandbox %s on %s", s.SandboxDriver, s.ComputeDriver),
		"credential gateway " + s.CredentialGateway,
		"workspace mode " + s.WorkspaceMode,
		plural(s.NetworkPolicies, "network policy", "network policies"),
		plural(s.WorkspaceResources, "workspace resource", "workspace resources"),
		plural(s.NetworkPolicyResources, "network policy resource", "network policy resources"),
	}
	return strings.Join(parts, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
