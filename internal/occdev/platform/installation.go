package platform

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/fsutil"
	"github.com/openclaw/occ/internal/installation"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/occdev/step"
)

// Identifiers of the development Installation: its driver IDs and its one openshell Backend.
const (
	sandboxDriverID           = "sandbox-openshell-development"
	credentialGatewayDriverID = "credential-gateway-openshell-development"
	openShellBackendID        = "openshell"
	// codexBinary is the native Codex executable in the OCE runtime image, the only binary
	// allowed to use delivered model credentials. A dependency-layout change in that image must
	// update it (a stale path fails the Codex startup model probe, not silently).
	codexBinary = "/app/node_modules/openclaw/node_modules/.pnpm/@openai+codex@0.160.0-linux-x64/node_modules/@openai/codex/vendor/x86_64-unknown-linux-musl/bin/codex"
	// containerKubeconfigPath is where the Compose control plane mounts the kubeconfig.
	containerKubeconfigPath = "/run/openclaw-development/kubeconfig"
	// InstallationFileName is the Installation inside the state directory.
	InstallationFileName = "installation.yaml"
	// gatewayRequestTimeoutMs is the longest per-call deadline the Backend allows.
	gatewayRequestTimeoutMs = 30000
	sandboxStartupDelayMs   = 30000
)

// InstallationInput is what the Installation is built from, all decided by earlier steps.
type InstallationInput struct {
	ClusterName        string
	Context            string
	ControlPlane       ControlPlane
	Namespace          string
	GatewayEndpoint    string
	GatewayClusterIP   string
	WorkspaceResources []unstructured.Unstructured
	// Compute is what the control plane adds to Kubernetes Compute's configuration (the Agent
	// runtime image, where Agent gateways run, the proxy address ranges); nil leaves it out,
	// as for the sandbox platform alone.
	Compute *ComputeExtras
	// Routing is the routing through the installed routing controllers; nil when none are
	// installed.
	Routing *InstallationRouting
}

// InstallationRouting is drivers.compute.configuration.gatewayRouting and the proxy ranges
// Agent Gateways trust behind it.
type InstallationRouting struct {
	GatewayName      string `yaml:"gatewayName"`
	GatewayNamespace string `yaml:"gatewayNamespace"`
	EnvoyNamespace   string `yaml:"envoyNamespace"`
	Hostname         string `yaml:"hostname"`
	// EndpointPort is the port clients outside the cluster reach the route's hostname on (the
	// Envoy Service's NodePort, for a control plane beside the cluster); 0 leaves it out, and
	// clients inside the cluster use the listener's own port.
	EndpointPort int `yaml:"endpointPort,omitempty"`
	// TrustedProxyCIDRs become network.gatewayTrustedProxyCidrs: where the Envoy proxies run
	// (the node's Pod ranges, or the proxies' own /32 addresses).
	TrustedProxyCIDRs []string `yaml:"-"`
}

// RoutingHostname is the route's service name as OpenShell Sandboxes must resolve it: fully
// qualified, because OpenShell resolves a Sandbox's policy hostnames without the cluster's
// search domains. The service is named after the namespace and name of OCE's Gateway.
func RoutingHostname(gatewayNamespace string) string {
	return Route{Namespace: gatewayNamespace}.Service() + "." + RoutingEnvoyNamespace + ".svc.cluster.local"
}

// check validates the routing the Installation will name.
func (r *InstallationRouting) check() error {
	var errs []error
	for _, n := range []struct{ key, value string }{
		{"gatewayRouting.gatewayName", r.GatewayName}, {"gatewayRouting.gatewayNamespace", r.GatewayNamespace}, {"gatewayRouting.envoyNamespace", r.EnvoyNamespace},
	} {
		if problems := validation.IsDNS1123Label(n.value); len(problems) > 0 {
			errs = append(errs, fmt.Errorf("%s %q: %s", n.key, n.value, strings.Join(problems, "; ")))
		}
	}
	if problems := validation.IsDNS1123Subdomain(r.Hostname); len(problems) > 0 {
		errs = append(errs, fmt.Errorf("gatewayRouting.hostname %q: %s", r.Hostname, strings.Join(problems, "; ")))
	}
	if r.EndpointPort < 0 || r.EndpointPort > 65535 {
		errs = append(errs, fmt.Errorf("gatewayRouting.endpointPort %d must be between 1 and 65535", r.EndpointPort))
	}
	if len(r.TrustedProxyCIDRs) == 0 {
		errs = append(errs, errors.New("network.gatewayTrustedProxyCidrs is empty: Agent Gateways behind the route would trust no proxy"))
	}
	for _, c := range r.TrustedProxyCIDRs {
		if p, err := netip.ParsePrefix(c); err != nil || p != p.Masked() {
			errs = append(errs, fmt.Errorf("network.gatewayTrustedProxyCidrs entry %q is not a canonical prefix", c))
		}
	}
	return errors.Join(errs...)
}

// ComputeExtras are the parts of drivers.compute.configuration a control-plane profile decides:
// they name the images it imported and the node it runs on.
type ComputeExtras struct {
	// Images are Kubernetes Compute's gateway and agent images (the Agent runtime's in-cluster
	// digest reference) and the demand that every image be digest-pinned.
	Images ComputeImages `yaml:"images"`
	// Runtime places Agent gateways on the node and its storage.
	Runtime ComputeRuntime `yaml:"runtime"`
	// PluginStatusProxySourceCIDRs is the node's Pod bridge as a /32, where the kubelet's
	// connections to Pods come from; GatewayTrustedProxyCIDRs the proxies Agent gateways trust
	// (loopback only: no routing proxy is installed).
	PluginStatusProxySourceCIDRs []string
	GatewayTrustedProxyCIDRs     []string
}

// ComputeImages is drivers.compute.configuration.images.
type ComputeImages struct {
	Gateway                string `yaml:"gateway"`
	Agent                  string `yaml:"agent"`
	RequireImmutableDigest bool   `yaml:"requireImmutableDigest"`
}

// ComputeRuntime is drivers.compute.configuration.runtime.
type ComputeRuntime struct {
	GatewayStorageClassName string            `yaml:"gatewayStorageClassName"`
	TransportSecretPrefix   string            `yaml:"transportSecretPrefix"`
	GatewayNodeSelector     map[string]string `yaml:"gatewayNodeSelector"`
}

// driverAuthentication is how OCE's Kubernetes drivers reach the cluster: in-cluster when the
// control plane runs there, a mounted kubeconfig when it runs in Compose.
type driverAuthentication struct {
	Mode           string `yaml:"mode"`
	KubeconfigPath string `yaml:"kubeconfigPath,omitempty"`
	Context        string `yaml:"context,omitempty"`
}

type podGroup struct {
	Namespace string            `yaml:"namespace"`
	PodLabels map[string]string `yaml:"podLabels"`
}

type providerHarness struct {
	Namespace string            `yaml:"namespace"`
	PodLabels map[string]string `yaml:"podLabels"`
	Address   string            `yaml:"address"`
	Port      int               `yaml:"port"`
}

type resourcePair struct {
	Requests map[string]string `yaml:"requests"`
	Limits   map[string]string `yaml:"limits"`
}

// computeConfiguration is the part of Kubernetes Compute's configuration the platform layer
// knows. The runtime images, routing and node settings are added by the control-plane layer.
type computeConfiguration struct {
	Authentication driverAuthentication `yaml:"authentication"`
	Resources      struct {
		Gateway   resourcePair `yaml:"gateway"`
		Agent     resourcePair `yaml:"agent"`
		Namespace struct {
			Quota             map[string]string `yaml:"quota"`
			ContainerDefaults resourcePair      `yaml:"containerDefaults"`
		} `yaml:"namespace"`
	} `yaml:"resources"`
	Network struct {
		DNS             podGroup        `yaml:"dns"`
		GatewayPort     int             `yaml:"gatewayPort"`
		GatewayClients  []podGroup      `yaml:"gatewayClients,omitempty"`
		ProviderHarness providerHarness `yaml:"providerHarness"`
		// Set from ComputeExtras when a control plane supplies them.
		GatewayTrustedProxyCIDRs     []string `yaml:"gatewayTrustedProxyCidrs,omitempty"`
		PluginStatusProxySourceCIDRs []string `yaml:"pluginStatusProxySourceCidrs,omitempty"`
	} `yaml:"network"`
	GatewayRouting              *InstallationRouting `yaml:"gatewayRouting,omitempty"`
	Images                      *ComputeImages       `yaml:"images,omitempty"`
	Runtime                     *ComputeRuntime      `yaml:"runtime,omitempty"`
	ServicePrincipalCredentials struct {
		// The pinned OpenShell cannot preserve Agent ServiceAccount tokens, so the profile
		// disables them rather than handing out tokens that would not work.
		Mode string `yaml:"mode"`
	} `yaml:"servicePrincipalCredentials"`
}

type driverConfiguration struct {
	ID            string `yaml:"id"`
	Configuration any    `yaml:"configuration"`
}

func yamlNode(v any) (*yaml.Node, error) {
	var n yaml.Node
	if err := n.Encode(v); err != nil {
		return nil, err
	}
	return &n, nil
}

func strPtr(s string) *string { return &s }
func i64Ptr(i int64) *int64   { return &i }
func boolPtr(b bool) *bool    { return &b }

// buildInstallation assembles the development Installation for the OpenShell sandbox driver:
// the openshell Backend at the Gateway, Kubernetes Compute, the Sandbox Driver and the
// Credential Gateway.
func buildInstallation(in InstallationInput) (*installation.Installation, error) {
	auth := driverAuthentication{Mode: "inCluster"}
	if in.ControlPlane == ControlPlaneCompose {
		auth = driverAuthentication{Mode: "kubeconfig", KubeconfigPath: containerKubeconfigPath, Context: in.Context}
	}
	compute, err := buildCompute(in, auth)
	if err != nil {
		return nil, err
	}
	computeNode, err := yamlNode(compute)
	if err != nil {
		return nil, fmt.Errorf("encode drivers.compute.configuration: %w", err)
	}
	others, err := otherDrivers(auth)
	if err != nil {
		return nil, err
	}
	occNode, err := yamlNode(map[string]string{"cluster": in.ClusterName})
	if err != nil {
		return nil, fmt.Errorf("encode occ: %w", err)
	}

	callback, err := kubeobj.ToUnstructured(tenantCallbackPolicy(in.Namespace))
	if err != nil {
		return nil, err
	}
	return &installation.Installation{
		OCC:     occNode,
		Backend: []installation.BackendEntry{{OpenShell: openShellBackend(in.GatewayEndpoint)}},
		Drivers: installation.Drivers{
			Compute: &installation.ComputeSelection{ID: installation.ComputeKubernetesID, Configuration: computeNode},
			Sandbox: sandboxDriver(in, *callback),
			CredentialGateway: &installation.CredentialGatewayDriver{
				ID:            credentialGatewayDriverID,
				Configuration: installation.CredentialGatewayConfiguration{Binaries: []string{codexBinary}},
			},
			Other: others,
		},
	}, nil
}

// buildCompute is Kubernetes Compute's configuration: the profile's resources and network,
// what the control plane adds (in.Compute), and, behind a route, the Gateway routing.
func buildCompute(in InstallationInput, auth driverAuthentication) (computeConfiguration, error) {
	var compute computeConfiguration
	compute.Authentication = auth
	compute.Resources.Gateway = resourcePair{Requests: map[string]string{"cpu": "100m", "memory": "1792Mi"}, Limits: map[string]string{"cpu": "2", "memory": "3Gi"}}
	compute.Resources.Agent = resourcePair{Requests: map[string]string{"cpu": "100m", "memory": "768Mi"}, Limits: map[string]string{"cpu": "2", "memory": "6Gi"}}
	compute.Resources.Namespace.Quota = map[string]string{"pods": "10"}
	compute.Resources.Namespace.ContainerDefaults = resourcePair{Requests: map[string]string{"cpu": "100m", "memory": "256Mi"}, Limits: map[string]string{"cpu": "2", "memory": "2Gi"}}
	compute.Network.DNS = podGroup{Namespace: "kube-system", PodLabels: map[string]string{"k8s-app": "kube-dns"}}
	compute.Network.GatewayPort = GatewayPort
	compute.Network.GatewayClients = []podGroup{{Namespace: in.Namespace, PodLabels: map[string]string{contract.LabelName: "occ-kubernetes-dev-client"}}}
	compute.Network.ProviderHarness = providerHarness{Namespace: in.Namespace, PodLabels: gatewayPodLabels(), Address: in.GatewayClusterIP, Port: GatewayPort}
	compute.ServicePrincipalCredentials.Mode = "disabled"
	if x := in.Compute; x != nil {
		compute.Images, compute.Runtime = &x.Images, &x.Runtime
		compute.Network.GatewayTrustedProxyCIDRs = x.GatewayTrustedProxyCIDRs
		compute.Network.PluginStatusProxySourceCIDRs = x.PluginStatusProxySourceCIDRs
	}
	if rt := in.Routing; rt != nil {
		if err := rt.check(); err != nil {
			return computeConfiguration{}, fmt.Errorf("the Installation's routing is invalid: %w", err)
		}
		// Behind the route, Agent Gateways are reached through Envoy, not by listed clients.
		compute.GatewayRouting = rt
		compute.Network.GatewayClients = nil
		compute.Network.GatewayTrustedProxyCIDRs = rt.TrustedProxyCIDRs
	}
	return compute, nil
}

// otherDrivers are the configuration, IAM and secret drivers, each encoded under its name.
func otherDrivers(auth driverAuthentication) ([]installation.NamedNode, error) {
	other := []struct {
		name string
		cfg  any
	}{
		{"configuration", driverConfiguration{ID: "config-kubernetes", Configuration: map[string]any{"authentication": auth}}},
		{"iam", driverConfiguration{ID: "native-iam", Configuration: map[string]any{}}},
		{"secret", driverConfiguration{ID: "secret-kubernetes", Configuration: map[string]any{"authentication": auth}}},
	}
	var others []installation.NamedNode
	for _, o := range other {
		n, err := yamlNode(o.cfg)
		if err != nil {
			return nil, fmt.Errorf("encode drivers.%s: %w", o.name, err)
		}
		others = append(others, installation.NamedNode{Name: o.name, Node: n})
	}
	return others, nil
}

// openShellBackend is the openshell Backend at the Gateway's endpoint, with the sandbox and
// credential gateway drivers.
func openShellBackend(endpoint string) *installation.OpenShellBackend {
	return &installation.OpenShellBackend{
		ID:   openShellBackendID,
		Type: installation.BackendTypeOpenShell,
		Configuration: installation.BackendConfiguration{
			Endpoint: strPtr(endpoint),
			// The disposable profile has neither TLS nor a bearer token; the development
			// NetworkPolicies are what fence the link, and the Installation says so.
			InsecureTransport: strPtr(installation.InsecureTransportNetworkPolicy),
			RequestTimeoutMs:  i64Ptr(gatewayRequestTimeoutMs),
		},
		Drivers: installation.BackendDrivers{Sandbox: sandboxDriverID, CredentialGateway: credentialGatewayDriverID},
	}
}

// sandboxDriver is the Sandbox Driver: operator workspaces with in's resources and the tenant
// callback policy, the profile's runtime class and mounts, and its process and egress policy.
func sandboxDriver(in InstallationInput, callback unstructured.Unstructured) *installation.SandboxDriver {
	return &installation.SandboxDriver{
		ID: sandboxDriverID,
		Configuration: installation.SandboxConfiguration{
			StartupDelayMs:    i64Ptr(sandboxStartupDelayMs),
			SandboxNamePrefix: strPtr("os"),
			Gateway: installation.GatewayConfig{
				WorkspaceMode:              installation.WorkspaceModeOperator,
				OperatorNamespaceLabels:    map[string]string{contract.LabelOperatorWorkspace: contract.OperatorWorkspaceValue},
				OperatorWorkspaceResources: installation.Resources(in.WorkspaceResources),
				NetworkPolicyResources:     installation.Resources{callback},
			},
			Kubernetes: installation.KubernetesConfig{
				RuntimeClassName: RuntimeClassName,
				// Said explicitly, not left to the default: native OpenClaw containment
				// requires user namespaces off, and the Installation states it.
				UserNamespaces:   boolPtr(false),
				ServiceAccount:   installation.ServiceAccountConfig{Mode: installation.ServiceAccountModeGatewayConfigured},
				SandboxDataMount: installation.SandboxDataMount{SubPath: "workspace", MountPath: "/sandbox/enterprise", ReadOnly: boolPtr(false)},
			},
			Policy: installation.PolicyConfig{
				// Strings, as the Driver requires; the pinned OpenShell runs 10001:10001 anyway.
				Process: installation.ProcessPolicy{RunAsUser: "1000", RunAsGroup: "1000"},
				// Model egress deliberately comes from the credential provider profile.
				NetworkPolicies: []installation.NetworkPolicy{{
					Name:      "source-control",
					Endpoints: []installation.Endpoint{{Host: "github.com", Ports: []int{443}, TLS: strPtr("skip")}},
					Binaries:  []installation.Binary{{Path: "/usr/bin/git"}},
				}},
			},
		},
	}
}

// encodeInstallation validates the Installation with the driver's own rules, marshals it, and
// proves the bytes decode strictly back into a valid Installation, so the file `up` saves is
// one the Sandbox Driver accepts.
func encodeInstallation(in *installation.Installation) ([]byte, error) {
	if problems := in.Validate(); len(problems) > 0 {
		return nil, fmt.Errorf("the development Installation is invalid (a bug in occ; please report it): %w", problems)
	}
	data, err := in.Marshal()
	if err != nil {
		return nil, fmt.Errorf("encode the Installation: %w", err)
	}
	if _, err := installation.Parse(data); err != nil {
		return nil, fmt.Errorf("the written Installation does not read back (a bug in occ; please report it): %w", err)
	}
	return data, nil
}

// WriteInstallation builds the Installation from in, validates it with the Sandbox Driver's
// own rules and writes it to path.
func WriteInstallation(path string, in InstallationInput) error {
	built, err := buildInstallation(in)
	if err != nil {
		return err
	}
	data, err := encodeInstallation(built)
	if err != nil {
		return err
	}
	return writeInstallation(path, data)
}

// InstallationEndpoint is the Gateway address OCE uses: the Service's cluster DNS name when the
// control plane runs in the cluster, the node's NodePort when it runs in Compose (nodeAddress
// is then the node as the control plane reaches it).
func InstallationEndpoint(cp ControlPlane, namespace, nodeAddress string, nodePort int32) string {
	if cp == ControlPlaneKubernetes {
		return fmt.Sprintf("http://%s.%s.svc.cluster.local:%d", GatewayServiceName, namespace, GatewayPort)
	}
	return "http://" + net.JoinHostPort(nodeAddress, strconv.Itoa(int(nodePort)))
}

// InstallationFileMode is the Installation file's mode: readable by the non-root containers of
// the Compose control plane that mount it; it holds no secret (the state directory stays 0700).
const InstallationFileMode = 0o644

// writeInstallation replaces path atomically: a crash leaves the old file or the new one,
// never half of one.
func writeInstallation(path string, data []byte) error {
	if err := fsutil.WriteFileAtomic(path, data, InstallationFileMode); err != nil {
		return fmt.Errorf("write Installation: %w", err)
	}
	return nil
}

// DescribeInstallation is the dry run's account of WriteInstallationInto the state directory
// stateDir.
func DescribeInstallation(stateDir string) step.Description {
	return step.Describe(step.FileAt(filepath.Join(stateDir, InstallationFileName), InstallationFileMode, "validated by the Sandbox Driver's rules"))
}

// WriteInstallationInto writes the Installation of in into the state directory d
// (WriteInstallation) and records there where it is and its Gateway endpoint; it returns the
// file's path.
func WriteInstallationInto(d *state.Dir, in InstallationInput) (string, error) {
	path := d.File(InstallationFileName)
	if err := WriteInstallation(path, in); err != nil {
		return "", err
	}
	if err := d.Update(func(s *state.State) { s.InstallationPath = path; s.GatewayEndpoint = in.GatewayEndpoint }); err != nil {
		return "", fmt.Errorf("record the Installation in the state: %w", err)
	}
	return path, nil
}
