package charts

import (
	"encoding/json"
	"fmt"

	"github.com/openclaw/occ/internal/occdev/pins"
)

// GatewayValues are the values `occ dev up` passes to the Gateway chart.
// Only what the development install changes is set; everything else keeps the chart default.
type GatewayValues struct {
	FullnameOverride      string                  `json:"fullnameOverride"`
	PKIInitJob            Toggle                  `json:"pkiInitJob"`
	ServiceAccount        NamedAccount            `json:"serviceAccount"`
	SandboxServiceAccount NamedAccount            `json:"sandboxServiceAccount"`
	WorkspaceResources    Toggle                  `json:"workspaceResources"`
	PodSecurityContext    PodSecurityContextValue `json:"podSecurityContext"`
	Service               ServiceValues           `json:"service"`
	Server                ServerValues            `json:"server"`
	// Components are the image values of every image the pins say the Gateway runs
	// (pins.GatewayImagesOf), under the chart's key for each (gateway, sandboxRuntime,
	// supervisor); Map puts them beside the fields above.
	Components map[string]ImageHolder `json:"-"`
}

// Toggle is a chart feature switch ({enabled: bool}).
type Toggle struct {
	Enabled bool `json:"enabled"`
}

// ImageHolder nests an image under "image", as the chart does for each component.
type ImageHolder struct {
	Image ImageValues `json:"image"`
}

// ImageValues is an image as the chart takes it: registry, repository and digest separately.
// The tag is deliberately absent: the digest is what is pinned, and the chart prefers it.
type ImageValues struct {
	Registry   string `json:"registry"`
	Repository string `json:"repository"`
	Digest     string `json:"digest"`
	PullPolicy string `json:"pullPolicy"`
}

// NamedAccount names a ServiceAccount (the chart still creates it).
type NamedAccount struct {
	Name string `json:"name"`
}

// PodSecurityContextValue adds the RuntimeDefault seccomp profile to the Gateway Pod; the
// chart's other defaults (fsGroup) are merged in by Helm.
type PodSecurityContextValue struct {
	SeccompProfile SeccompProfile `json:"seccompProfile"`
}

// SeccompProfile is a Pod seccomp profile selection.
type SeccompProfile struct {
	Type string `json:"type"`
}

// ServiceValues publish the Gateway: ClusterIP, or NodePort with a fixed port.
type ServiceValues struct {
	Type     string `json:"type"`
	NodePort int32  `json:"nodePort,omitempty"`
}

// ServerValues configure the Gateway server.
type ServerValues struct {
	// DisableTLS serves plaintext: the development Gateway is reached only inside the cluster
	// network, fenced by NetworkPolicies.
	DisableTLS bool       `json:"disableTls"`
	Auth       AuthValues `json:"auth"`
	// DefaultRuntimeClassName is the RuntimeClass given to sandbox Pods.
	DefaultRuntimeClassName string        `json:"defaultRuntimeClassName"`
	Drivers                 DriversValues `json:"drivers"`
}

// AuthValues: unauthenticated development mode.
type AuthValues struct {
	AllowUnauthenticatedUsers bool `json:"allowUnauthenticatedUsers"`
}

// DriversValues hold the compute driver settings.
type DriversValues struct {
	Kubernetes KubernetesDriverValues `json:"kubernetes"`
}

// KubernetesDriverValues configure the Kubernetes compute driver in operator workspace mode:
// OCE prepares each workspace namespace, and the Gateway only discovers it by label.
type KubernetesDriverValues struct {
	AllowDriverConfig      bool   `json:"allowDriverConfig"`
	ResourceAdmission      Toggle `json:"resourceAdmission"`
	WorkspaceMode          string `json:"workspaceMode"`
	OperatorNamespaceLabel string `json:"operatorNamespaceLabel"`
}

// Service types the Gateway can be published with.
const (
	ServiceClusterIP = "ClusterIP"
	ServiceNodePort  = "NodePort"
)

// DevelopmentNodePort is the Gateway NodePort of the Compose profile.
const DevelopmentNodePort = 30051

// GatewayOptions choose what differs between profiles.
type GatewayOptions struct {
	// Images are the pinned OpenShell images.
	Images pins.Images
	// ServiceType is ServiceClusterIP (control plane in the cluster) or ServiceNodePort
	// (control plane in Compose, reaching the node).
	ServiceType string
	// NodePort is required with ServiceNodePort (normally DevelopmentNodePort).
	NodePort int32
	// PullPolicy is "Never" when the images were imported into the cluster by digest (k3d),
	// "IfNotPresent" when the cluster pulls them (bring your own cluster).
	PullPolicy string
}

// NewGatewayValues builds the Gateway values for o, refusing combinations the chart would
// render into a broken Service.
func NewGatewayValues(o GatewayOptions) (*GatewayValues, error) {
	switch o.ServiceType {
	case ServiceClusterIP:
		if o.NodePort != 0 {
			return nil, fmt.Errorf("gateway service: nodePort %d is only valid with service type %s", o.NodePort, ServiceNodePort)
		}
	case ServiceNodePort:
		if o.NodePort < 30000 || o.NodePort > 32767 {
			return nil, fmt.Errorf("gateway service: nodePort %d must be in the NodePort range 30000-32767 (the development profile uses %d)", o.NodePort, DevelopmentNodePort)
		}
	default:
		return nil, fmt.Errorf("gateway service: type %q must be %s or %s", o.ServiceType, ServiceClusterIP, ServiceNodePort)
	}
	switch o.PullPolicy {
	case "Never", "IfNotPresent", "Always":
	default:
		return nil, fmt.Errorf("gateway images: pullPolicy %q must be Never, IfNotPresent or Always", o.PullPolicy)
	}
	image := func(key string, img pins.Image) (ImageHolder, error) {
		if img.Digest == "" || img.Registry == "" || img.Repository == "" {
			return ImageHolder{}, fmt.Errorf("gateway values: %s image %q must have a registry, a repository and a digest", key, img)
		}
		return ImageHolder{Image: ImageValues{Registry: img.Registry, Repository: img.Repository, Digest: img.Digest, PullPolicy: o.PullPolicy}}, nil
	}
	v := &GatewayValues{
		FullnameOverride:      GatewayRelease,
		PKIInitJob:            Toggle{Enabled: false},
		ServiceAccount:        NamedAccount{Name: GatewayServiceAccount},
		SandboxServiceAccount: NamedAccount{Name: SandboxServiceAccount},
		WorkspaceResources:    Toggle{Enabled: false},
		PodSecurityContext:    PodSecurityContextValue{SeccompProfile: SeccompProfile{Type: "RuntimeDefault"}},
		Service:               ServiceValues{Type: o.ServiceType, NodePort: o.NodePort},
		Server: ServerValues{
			DisableTLS:              true,
			Auth:                    AuthValues{AllowUnauthenticatedUsers: true},
			DefaultRuntimeClassName: RuntimeClassName,
			Drivers: DriversValues{Kubernetes: KubernetesDriverValues{
				AllowDriverConfig:      true,
				ResourceAdmission:      Toggle{Enabled: false},
				WorkspaceMode:          "operator",
				OperatorNamespaceLabel: OperatorNamespaceSelector,
			}},
		},
	}
	v.Components = map[string]ImageHolder{}
	for _, img := range pins.GatewayImagesOf(o.Images) {
		holder, err := image(img.Role, img.Image)
		if err != nil {
			return nil, err
		}
		v.Components[img.Gateway.Component] = holder
	}
	return v, nil
}

// Map converts the values to the generic map Helm's install and render take.
func (v *GatewayValues) Map() (map[string]any, error) {
	m, err := toMap(v)
	if err != nil {
		return nil, err
	}
	for key, holder := range v.Components {
		if m[key], err = toMap(holder); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// toMap round-trips through JSON, which is how Helm itself sees values read from YAML.
func toMap(v any) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode chart values: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("decode chart values: %w", err)
	}
	return m, nil
}
