package kubernetes

import (
	"encoding/json"
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"

	"github.com/openclaw/occ/internal/occdev/platform"
)

// Values are the OCE chart values the development profile sets; everything
// else keeps the chart's defaults, whose Secret names and keys match the Secrets this package
// creates. gatewayRouting is set when the platform installed the routing controllers;
// agentNativeAdmin (the browser console behind the route) is not.
type Values struct {
	Images       ImageValues                 `json:"images"`
	Installation InstallationValues          `json:"installation"`
	Auth         AuthValues                  `json:"auth"`
	Bootstrap    BootstrapValues             `json:"bootstrap"`
	Database     HostList                    `json:"database"`
	Cluster      ClusterValues               `json:"cluster"`
	API          APIValues                   `json:"api"`
	Resources    corev1.ResourceRequirements `json:"resources"`
	// GatewayRouting routes to dedicated Agent Gateways through the routing controllers; nil
	// without them.
	GatewayRouting *GatewayRoutingValues `json:"gatewayRouting,omitempty"`
}

// GatewayRoutingValues enable the chart's private Gateway routing. The last four are set only
// for a route whose clients run beside the cluster (RouteBeside); left out, the chart's
// defaults serve clients inside it.
type GatewayRoutingValues struct {
	Enabled          bool   `json:"enabled"`
	GatewayClassName string `json:"gatewayClassName"`
	APIKeySecretName string `json:"apiKeySecretName"`
	GatewayName      string `json:"gatewayName,omitempty"`
	// Hostname is the listener's hostname (and the certificate's DNS name).
	Hostname string `json:"hostname,omitempty"`
	// ServiceType is the Envoy Service's type; NodePort publishes the listener on the node.
	ServiceType string `json:"serviceType,omitempty"`
	// RemoteNodeCIDRs are the addresses outside the cluster's Pods the data plane's policy
	// admits to the proxies.
	RemoteNodeCIDRs []string `json:"remoteNodeCidrs,omitempty"`
}

// ImageValues are the chart's images; every one must be a digest reference.
type ImageValues struct {
	Controller string `json:"controller"`
}

// InstallationValues names the Installation the bootstrap Job creates on a fresh database.
type InstallationValues struct {
	Name string `json:"name"`
}

// AuthValues hold the Better Auth base URL, which the bootstrap Job accepts over plain HTTP only
// on 127.0.0.1 or localhost.
type AuthValues struct {
	BaseURL string `json:"baseUrl"`
}

// BootstrapValues name the first administrator and the claim the bootstrap Job writes into.
type BootstrapValues struct {
	AdminEmail string            `json:"adminEmail"`
	Password   BootstrapPassword `json:"password"`
}

// BootstrapPassword names the existing claim of the bootstrap output.
type BootstrapPassword struct {
	ClaimName string `json:"claimName"`
}

// HostList lists exact /32 hosts the chart's egress policies admit.
type HostList struct {
	CIDRs []string `json:"cidrs"`
}

// ClusterValues admits the Kubernetes API server.
type ClusterValues struct {
	CIDRs []string `json:"cidrs"`
	Port  int32    `json:"port"`
}

// APIValues lists the API's only admitted clients.
type APIValues struct {
	Clients []APIClient `json:"clients"`
}

// APIClient selects client Pods by namespace and labels.
type APIClient struct {
	Namespace string            `json:"namespace"`
	PodLabels map[string]string `json:"podLabels"`
}

// ValuesInput is what the values are computed from.
type ValuesInput struct {
	// Namespace is the platform namespace, where the proxy (the API's client) runs.
	Namespace string
	// ControllerImage is the controller's in-cluster digest reference.
	ControllerImage string
	// HostAPIPort is the loopback port the host reaches the API on (OPENCLAW_DEV_PORT).
	HostAPIPort int
	// PostgresIP is the PostgreSQL Pod's address.
	PostgresIP netip.Addr
	// APIEndpoint is the Kubernetes API server's endpoint as the cluster reports it.
	APIEndpoint netip.AddrPort
	// Routing enables gatewayRouting (the routing controllers are installed).
	Routing bool
}

// BuildValues computes the development values. The chart validates them itself when it
// renders; BuildValues only refuses inputs that cannot be written at all.
func BuildValues(in ValuesInput) (Values, error) {
	if !in.PostgresIP.Is4() || !in.APIEndpoint.Addr().Is4() {
		return Values{}, fmt.Errorf("the chart admits PostgreSQL and the Kubernetes API only as IPv4 /32 hosts; got %s and %s", in.PostgresIP, in.APIEndpoint.Addr())
	}
	if in.HostAPIPort < 1 || in.HostAPIPort > 65535 {
		return Values{}, fmt.Errorf("development API port %d must be between 1 and 65535", in.HostAPIPort)
	}
	var routing *GatewayRoutingValues
	if in.Routing {
		routing = &GatewayRoutingValues{Enabled: true, GatewayClassName: platform.RoutingGatewayClass, APIKeySecretName: GatewayKeySecret}
	}
	return Values{
		GatewayRouting: routing,
		Images:         ImageValues{Controller: in.ControllerImage},
		Installation:   InstallationValues{Name: InstallationName},
		Auth:           AuthValues{BaseURL: fmt.Sprintf("http://127.0.0.1:%d", in.HostAPIPort)},
		Bootstrap:      BootstrapValues{AdminEmail: AdminEmail, Password: BootstrapPassword{ClaimName: BootstrapClaim}},
		Database:       HostList{CIDRs: []string{netip.PrefixFrom(in.PostgresIP, 32).String()}},
		Cluster:        ClusterValues{CIDRs: []string{netip.PrefixFrom(in.APIEndpoint.Addr(), 32).String()}, Port: int32(in.APIEndpoint.Port())},
		API:            APIValues{Clients: []APIClient{{Namespace: in.Namespace, PodLabels: ProxyPodLabels()}}},
		Resources:      resources("100m", "128Mi", "1", "1Gi"),
	}, nil
}

// Map is the values as Helm takes them: the JSON form of v decoded into plain maps, exactly what
// `helm -f values.json` would read.
func (v Values) Map() (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode the chart values: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("decode the chart values: %w", err)
	}
	return m, nil
}
