// Package installation is the Installation YAML that `occ dev up` writes and the OpenShell
// SandboxDriver reads: a typed model of the blocks occ owns, a strict decoder that refuses
// unknown keys at every nesting level, the validation rules of the OpenShell SandboxDriver with
// their exact messages, and a writer that re-emits the blocks occ does not own
// untouched.
//
// occ owns the openshell `backend` entry, the `drivers.compute` selection (its id; its
// configuration belongs to Kubernetes Compute and is carried through), `drivers.sandbox` and
// `drivers.credential_gateway`. Everything else (`occ`, `presets`, other backend entries, other
// drivers) is kept as YAML nodes so a round trip through Decode and Marshal changes nothing occ
// does not understand.
package installation

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"go.yaml.in/yaml/v3"

	"github.com/openclaw/occ/internal/contract"
)

// Well-known identifiers and values of the Installation.
const (
	// BackendTypeOpenShell is the backend entry type that pairs the OpenShell Sandbox Driver with
	// the OpenShell Credential Gateway.
	BackendTypeOpenShell = "openshell"
	// ComputeKubernetesID is the id of the bundled Kubernetes Compute Driver, the only Compute
	// Driver the OpenShell Sandbox Driver runs with.
	ComputeKubernetesID = "compute-kubernetes"

	WorkspaceModeOperator = "operator"
	WorkspaceModeManaged  = "managed"

	ServiceAccountModeGatewayConfigured = "gatewayConfigured"

	LandlockHardRequirement = "hard_requirement"

	// InsecureTransportNetworkPolicy acknowledges a plaintext, unauthenticated gateway link that
	// only NetworkPolicies protect (the disposable development profile).
	InsecureTransportNetworkPolicy = "network-policy"

	AuthModeUnauthenticated = "unauthenticated"
	AuthModeBearerTokenFile = "bearerTokenFile"

	// ReservedNetworkPolicyName is the rule the Driver adds itself for workspace node enrollment.
	ReservedNetworkPolicyName = contract.ReservedNetworkPolicyName

	// Defaults the Driver applies when a key is omitted.
	DefaultSandboxNamePrefix = "sb"
	DefaultLogLevel          = "info"
	DefaultPollIntervalMs    = 1000
	DefaultGatewayPort       = 8080
)

// Installation is the whole Installation document.
type Installation struct {
	// OCC is the top-level `occ` block (for example occ.cluster), carried through untouched.
	OCC *yaml.Node `yaml:"occ,omitempty"`
	// Backend lists the backend entries; only entries of type openshell are modelled.
	Backend []BackendEntry `yaml:"backend"`
	// Drivers is the `drivers` map.
	Drivers Drivers `yaml:"drivers"`
	// Presets is the top-level `presets` block, carried through untouched.
	Presets *yaml.Node `yaml:"presets,omitempty"`

	// keyOrder is the order of the top-level keys as decoded, so Marshal keeps anchors before
	// the aliases that use them in carried blocks.
	keyOrder []string
	// failed holds the YAML paths whose values could not be decoded, so Validate does not
	// report a missing value on top of the decode problem that already names it.
	failed map[string]bool
	// source is the decoded document, from which Validate finds the line of each problem.
	source *yaml.Node
}

// BackendEntry is one element of the `backend` list. An entry of type openshell is decoded
// strictly into OpenShell; any other entry is kept as Raw and re-emitted unchanged.
type BackendEntry struct {
	OpenShell *OpenShellBackend
	Raw       *yaml.Node
}

// OpenShellBackend is the openshell backend entry: the connection to the OpenShell gateway and
// the pairing of the Sandbox Driver with its Credential Gateway.
type OpenShellBackend struct {
	ID            string               `yaml:"id"`
	Type          string               `yaml:"type"`
	Configuration BackendConfiguration `yaml:"configuration"`
	Drivers       BackendDrivers       `yaml:"drivers"`
}

// BackendConfiguration says how to reach the OpenShell gateway. Exactly one of Endpoint and
// ServiceName is set; Scheme and Port only go with ServiceName.
type BackendConfiguration struct {
	Endpoint            *string      `yaml:"endpoint,omitempty"`
	ServiceName         *string      `yaml:"serviceName,omitempty"`
	Scheme              *string      `yaml:"scheme,omitempty"`
	Port                *int64       `yaml:"port,omitempty"`
	Auth                *BackendAuth `yaml:"auth,omitempty"`
	RootCertificatePath *string      `yaml:"rootCertificatePath,omitempty"`
	InsecureTransport   *string      `yaml:"insecureTransport,omitempty"`
	RequestTimeoutMs    *int64       `yaml:"requestTimeoutMs,omitempty"`
}

// BackendAuth selects how occ authenticates to the gateway: `unauthenticated` (development
// only) or `bearerTokenFile` with the absolute Path of a one-line token file.
type BackendAuth struct {
	Mode string  `yaml:"mode"`
	Path *string `yaml:"path,omitempty"`
}

// BackendDrivers names the two drivers the openshell Backend pairs.
type BackendDrivers struct {
	Sandbox           string `yaml:"sandbox"`
	CredentialGateway string `yaml:"credential_gateway"`
}

// Drivers is the `drivers` map. The entries occ owns are typed; all others are kept in Other in
// document order.
type Drivers struct {
	Compute           *ComputeSelection
	Sandbox           *SandboxDriver
	CredentialGateway *CredentialGatewayDriver
	Other             []NamedNode

	// keyOrder is the order of the driver kinds as decoded (see Installation.keyOrder).
	keyOrder []string
}

// NamedNode is a map entry occ carries through without interpreting it.
type NamedNode struct {
	Name string
	Node *yaml.Node
}

// ComputeSelection is drivers.compute: occ checks the id and carries the configuration, which
// belongs to Kubernetes Compute.
type ComputeSelection struct {
	ID            string     `yaml:"id"`
	Configuration *yaml.Node `yaml:"configuration,omitempty"`
}

// SandboxDriver is drivers.sandbox: the OpenShell Sandbox Driver and its whole configuration.
type SandboxDriver struct {
	ID            string               `yaml:"id"`
	Configuration SandboxConfiguration `yaml:"configuration"`
}

// SandboxConfiguration is the OpenShell Sandbox Driver configuration (drivers.sandbox).
type SandboxConfiguration struct {
	Gateway    GatewayConfig    `yaml:"gateway"`
	Kubernetes KubernetesConfig `yaml:"kubernetes"`
	Policy     PolicyConfig     `yaml:"policy"`
	// SandboxNamePrefix (default "sb") starts every Sandbox name; at most 2 characters so the
	// name fits OpenShell's 19-character limit.
	SandboxNamePrefix *string `yaml:"sandboxNamePrefix,omitempty"`
	// StartupDelayMs (1..120000) is waited after a Sandbox is created, because the pinned
	// OpenShell exposes the route before the process listens.
	StartupDelayMs *int64 `yaml:"startupDelayMs,omitempty"`
	// LogLevel (default "info") is passed to the Sandbox.
	LogLevel *string `yaml:"logLevel,omitempty"`
	// Providers are static OpenShell providers added to every Sandbox.
	Providers []string `yaml:"providers,omitempty"`
}

// GatewayConfig is the Sandbox's view of the OpenShell gateway. Connection settings are not
// here: they belong to the openshell Backend.
type GatewayConfig struct {
	WorkspaceMode              string            `yaml:"workspaceMode"`
	OperatorNamespaceLabels    map[string]string `yaml:"operatorNamespaceLabels,omitempty"`
	OperatorWorkspaceResources Resources         `yaml:"operatorWorkspaceResources,omitempty"`
	NetworkPolicyResources     Resources         `yaml:"networkPolicyResources,omitempty"`
	Readiness                  *Readiness        `yaml:"readiness,omitempty"`
}

// Resources is a list of Kubernetes objects kept in unstructured form, ready for server-side
// apply once the Driver injects the tenant namespace and ownership metadata.
type Resources []unstructured.Unstructured

// Readiness observes the gateway Service and Pods in the OCC namespace before use.
type Readiness struct {
	ServiceName    string            `yaml:"serviceName"`
	PodSelector    map[string]string `yaml:"podSelector"`
	TimeoutMs      *int64            `yaml:"timeoutMs,omitempty"`
	PollIntervalMs *int64            `yaml:"pollIntervalMs,omitempty"`
}

// KubernetesConfig is how OpenShell runs the Harness Pod.
type KubernetesConfig struct {
	RuntimeClassName string               `yaml:"runtimeClassName"`
	UserNamespaces   *bool                `yaml:"userNamespaces,omitempty"`
	ServiceAccount   ServiceAccountConfig `yaml:"serviceAccount"`
	SandboxDataMount SandboxDataMount     `yaml:"sandboxDataMount"`
	AgentResources   *AgentResources      `yaml:"agentResources,omitempty"`
}

// ServiceAccountConfig selects the Sandbox's Kubernetes identity; only gatewayConfigured exists.
type ServiceAccountConfig struct {
	Mode string `yaml:"mode"`
}

// SandboxDataMount is the approved PVC subpath mounted as the Agent workspace.
type SandboxDataMount struct {
	ClaimName *string `yaml:"claimName,omitempty"`
	SubPath   string  `yaml:"subPath"`
	MountPath string  `yaml:"mountPath"`
	ReadOnly  *bool   `yaml:"readOnly,omitempty"`
}

// AgentResources are the Agent container's requests and limits. The Driver always replaces
// ephemeral-storage with a 256Mi request and a 1Gi limit.
type AgentResources struct {
	Requests corev1.ResourceList `yaml:"requests,omitempty"`
	Limits   corev1.ResourceList `yaml:"limits,omitempty"`
}

// PolicyConfig is the OpenShell sandbox policy.
type PolicyConfig struct {
	Process               ProcessPolicy     `yaml:"process"`
	Filesystem            *FilesystemPolicy `yaml:"filesystem,omitempty"`
	LandlockCompatibility *string           `yaml:"landlockCompatibility,omitempty"`
	NetworkPolicies       []NetworkPolicy   `yaml:"networkPolicies"`
}

// ProcessPolicy holds the UID and GID as strings. The pinned OpenShell ignores them and runs
// every process as 10001:10001, but the Driver still requires them.
type ProcessPolicy struct {
	RunAsUser  string `yaml:"runAsUser"`
	RunAsGroup string `yaml:"runAsGroup"`
}

// FilesystemPolicy replaces OpenShell's permissive baseline when present.
type FilesystemPolicy struct {
	IncludeWorkdir *bool    `yaml:"includeWorkdir,omitempty"`
	ReadOnly       []string `yaml:"readOnly,omitempty"`
	ReadWrite      []string `yaml:"readWrite,omitempty"`
}

// NetworkPolicy is one binary-scoped OpenShell network rule.
type NetworkPolicy struct {
	Name      string     `yaml:"name"`
	Binaries  []Binary   `yaml:"binaries"`
	Endpoints []Endpoint `yaml:"endpoints"`
}

// Binary is an executable a network rule applies to.
type Binary struct {
	Path string `yaml:"path"`
}

// Endpoint is a destination a network rule allows.
type Endpoint struct {
	Host        string  `yaml:"host"`
	Ports       []int   `yaml:"ports,omitempty"`
	Protocol    *string `yaml:"protocol,omitempty"`
	TLS         *string `yaml:"tls,omitempty"`
	Enforcement *string `yaml:"enforcement,omitempty"`
	Access      *string `yaml:"access,omitempty"`
}

// CredentialGatewayDriver is drivers.credential_gateway: the OpenShell Credential Gateway.
type CredentialGatewayDriver struct {
	ID            string                         `yaml:"id"`
	Configuration CredentialGatewayConfiguration `yaml:"configuration"`
}

// CredentialGatewayConfiguration lists the executables allowed to use delivered credentials.
type CredentialGatewayConfiguration struct {
	Binaries []string `yaml:"binaries"`
}

// OpenShellBackend returns the first backend entry of type openshell, or nil.
func (in *Installation) OpenShellBackend() *OpenShellBackend {
	if in == nil {
		return nil
	}
	for i := range in.Backend {
		if b := in.Backend[i].OpenShell; b != nil {
			return b
		}
	}
	return nil
}

// SandboxConfig returns the OpenShell Sandbox configuration, or nil when drivers.sandbox is absent.
func (in *Installation) SandboxConfig() *SandboxConfiguration {
	if in == nil || in.Drivers.Sandbox == nil {
		return nil
	}
	return &in.Drivers.Sandbox.Configuration
}

// SandboxDriverID returns drivers.sandbox.id, or "" when drivers.sandbox is absent.
func (in *Installation) SandboxDriverID() string {
	if in == nil || in.Drivers.Sandbox == nil {
		return ""
	}
	return in.Drivers.Sandbox.ID
}

// CredentialGateway returns drivers.credential_gateway, or nil.
func (in *Installation) CredentialGateway() *CredentialGatewayDriver {
	if in == nil {
		return nil
	}
	return in.Drivers.CredentialGateway
}

// EffectiveSandboxNamePrefix is sandboxNamePrefix or its default.
func (c *SandboxConfiguration) EffectiveSandboxNamePrefix() string {
	if c.SandboxNamePrefix != nil {
		return *c.SandboxNamePrefix
	}
	return DefaultSandboxNamePrefix
}

// EffectiveLogLevel is logLevel or its default.
func (c *SandboxConfiguration) EffectiveLogLevel() string {
	if c.LogLevel != nil {
		return *c.LogLevel
	}
	return DefaultLogLevel
}

// EffectivePollIntervalMs is pollIntervalMs or its default.
func (r *Readiness) EffectivePollIntervalMs() int64 {
	if r.PollIntervalMs != nil {
		return *r.PollIntervalMs
	}
	return DefaultPollIntervalMs
}

// IncludesWorkdir is includeWorkdir or its default (true).
func (f *FilesystemPolicy) IncludesWorkdir() bool {
	return f == nil || f.IncludeWorkdir == nil || *f.IncludeWorkdir
}
