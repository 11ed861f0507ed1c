package emulator

import (
	"bytes"
	"encoding/json"
	"path"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// kubernetesDriverConfig is the typed form of template.driver_config.kubernetes: the keys the
// Kubernetes driver accepts (snake_case); any other key is refused.
type kubernetesDriverConfig struct {
	Pod        *driverPodConfig       `json:"pod,omitempty"`
	Containers *driverContainerConfig `json:"containers,omitempty"`
	Volumes    []driverVolume         `json:"volumes,omitempty"`
}

type driverPodConfig struct {
	NodeSelector      map[string]string   `json:"node_selector,omitempty"`
	Tolerations       []corev1.Toleration `json:"tolerations,omitempty"`
	RuntimeClassName  string              `json:"runtime_class_name,omitempty"`
	PriorityClassName string              `json:"priority_class_name,omitempty"`
}

type driverContainerConfig struct {
	Agent *driverAgentConfig `json:"agent,omitempty"`
}

type driverAgentConfig struct {
	Resources    *driverResources    `json:"resources,omitempty"`
	VolumeMounts []driverVolumeMount `json:"volume_mounts,omitempty"`
}

type driverResources struct {
	Requests map[string]string `json:"requests,omitempty"`
	Limits   map[string]string `json:"limits,omitempty"`
}

type driverVolumeMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mount_path"`
	SubPath   string `json:"sub_path,omitempty"`
	// ReadOnly defaults to true.
	ReadOnly *bool `json:"read_only,omitempty"`
}

type driverVolume struct {
	Name                  string     `json:"name"`
	PersistentVolumeClaim *driverPVC `json:"persistent_volume_claim,omitempty"`
}

type driverPVC struct {
	ClaimName string `json:"claim_name"`
	// ReadOnly defaults to true.
	ReadOnly *bool `json:"read_only,omitempty"`
}

// sandboxRoot is the sandbox's home inside the agent container; a mount may sit below it but
// must not replace it or an ancestor.
const sandboxRoot = "/sandbox"

// reservedMountRoots belong to OpenShell's own components inside the Pod.
var reservedMountRoots = []string{
	"/opt/openshell", "/etc/openshell", "/etc/openshell-tls", "/run/openshell",
	"/run/openshell-sidecar", "/run/netns", "/var/run/netns", "/var/run/secrets/openshell",
}

// reservedVolumeNames are the volumes the driver adds itself.
var reservedVolumeNames = map[string]bool{
	"openshell-client-tls": true, "openshell-upstream-proxy-auth": true, "openshell-sa-token": true,
	"spiffe-workload-api": true, "openshell-supervisor": true, "workspace": true,
}

const driverConfigField = "spec.template.driver_config"

// parseDriverConfig decodes and validates the kubernetes block of a template's driver_config.
// Only that key is forwarded to the Kubernetes driver; other drivers' keys are ignored.
func parseDriverConfig(s *structpb.Struct) (*kubernetesDriverConfig, error) {
	cfg := &kubernetesDriverConfig{}
	v, ok := s.GetFields()["kubernetes"]
	if !ok {
		return cfg, nil
	}
	if v.GetStructValue() == nil {
		return nil, invalidArgument(driverConfigField+".kubernetes", "template.driver_config.kubernetes must be an object")
	}
	raw, err := v.MarshalJSON()
	if err != nil {
		return nil, invalidArgument(driverConfigField+".kubernetes", "invalid kubernetes driver_config: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(cfg); err != nil {
		return nil, invalidArgument(driverConfigField+".kubernetes", "invalid kubernetes driver_config: %v", err)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

func (c *kubernetesDriverConfig) validate() error {
	volumes := map[string]driverVolume{}
	for i, v := range c.Volumes {
		field := driverConfigField + ".kubernetes.volumes[" + itoa(i) + "]"
		if !isDNSLabel(v.Name) {
			return invalidArgument(field+".name", "invalid kubernetes driver_config: volume name %q must be a DNS-1123 label", v.Name)
		}
		if reservedVolumeNames[v.Name] {
			return invalidArgument(field+".name", "invalid kubernetes driver_config: volume name %q is reserved by OpenShell", v.Name)
		}
		if _, dup := volumes[v.Name]; dup {
			return invalidArgument(field+".name", "invalid kubernetes driver_config: duplicate volume %q", v.Name)
		}
		if v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName == "" {
			return invalidArgument(field, "invalid kubernetes driver_config: volume %q must be a persistent_volume_claim with a claim_name (only PVC volumes are supported)", v.Name)
		}
		volumes[v.Name] = v
	}
	if c.Containers == nil || c.Containers.Agent == nil {
		return nil
	}
	agent := c.Containers.Agent
	if agent.Resources != nil {
		for kind, list := range map[string]map[string]string{"requests": agent.Resources.Requests, "limits": agent.Resources.Limits} {
			for name, q := range list {
				if _, err := resource.ParseQuantity(q); err != nil {
					return invalidArgument(driverConfigField+".kubernetes.containers.agent.resources."+kind+"."+name, "invalid kubernetes driver_config: %s %s quantity %q: %v", kind, name, q, err)
				}
			}
		}
	}
	targets := map[string]bool{}
	for i, m := range agent.VolumeMounts {
		field := driverConfigField + ".kubernetes.containers.agent.volume_mounts[" + itoa(i) + "]"
		vol, ok := volumes[m.Name]
		if !ok {
			return invalidArgument(field+".name", "invalid kubernetes driver_config: mount %q names no declared volume", m.Name)
		}
		if err := validateMountPath(field+".mount_path", m.MountPath); err != nil {
			return err
		}
		if targets[m.MountPath] {
			return invalidArgument(field+".mount_path", "invalid kubernetes driver_config: duplicate mount target %q", m.MountPath)
		}
		targets[m.MountPath] = true
		if m.SubPath != "" && (path.IsAbs(m.SubPath) || containsDotDot(m.SubPath)) {
			return invalidArgument(field+".sub_path", "invalid kubernetes driver_config: sub_path %q must be relative and free of '..'", m.SubPath)
		}
		if !boolOr(m.ReadOnly, true) && boolOr(vol.PersistentVolumeClaim.ReadOnly, true) {
			return invalidArgument(field+".read_only", "invalid kubernetes driver_config: read-write mount %q needs read_only: false on volume %q too", m.MountPath, m.Name)
		}
	}
	return nil
}

func validateMountPath(field, p string) error {
	if !path.IsAbs(p) || path.Clean(p) != p {
		return invalidArgument(field, "invalid kubernetes driver_config: mount_path %q must be a normalized absolute path", p)
	}
	if p == sandboxRoot || strings.HasPrefix(sandboxRoot, strings.TrimSuffix(p, "/")+"/") {
		return invalidArgument(field, "invalid kubernetes driver_config: mount_path %q must not be %s or an ancestor of it", p, sandboxRoot)
	}
	for _, root := range reservedMountRoots {
		if p == root || strings.HasPrefix(p, root+"/") || strings.HasPrefix(root, p+"/") {
			return invalidArgument(field, "invalid kubernetes driver_config: mount_path %q overlaps the reserved path %s", p, root)
		}
	}
	return nil
}

func containsDotDot(p string) bool {
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return true
		}
	}
	return false
}

func boolOr(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}
