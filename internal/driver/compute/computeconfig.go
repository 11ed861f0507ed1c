package compute

import (
	"bytes"
	"fmt"
	"sort"

	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/openclaw/occ/internal/installation"
)

// namespaceResources is drivers.compute.configuration.resources.namespace, the part of Kubernetes
// Compute's configuration that `occ sandbox` applies. The rest of Compute's configuration
// (images, routing, gateway resources) belongs to the control plane's worker.
type namespaceResources struct {
	Quota             map[string]string `yaml:"quota"`
	ContainerDefaults struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"containerDefaults"`
}

const namespaceResourcesPath = "drivers.compute.configuration.resources.namespace"

// BaselineFromInstallation returns the baseline isolation the Installation configures for
// every namespace, or DefaultBaseline when it configures none. Unknown keys under
// resources.namespace are refused and every quantity must parse, so a typo never silently
// weakens a quota.
func BaselineFromInstallation(in *installation.Installation) (Baseline, error) {
	if in == nil || in.Drivers.Compute == nil || in.Drivers.Compute.Configuration == nil {
		return DefaultBaseline(), nil
	}
	node := mappingValue(mappingValue(in.Drivers.Compute.Configuration, "resources"), "namespace")
	if node == nil {
		return DefaultBaseline(), nil
	}
	raw, err := yaml.Marshal(node)
	if err != nil {
		return Baseline{}, fmt.Errorf("%s: %w", namespaceResourcesPath, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	var nr namespaceResources
	if err := dec.Decode(&nr); err != nil {
		return Baseline{}, fmt.Errorf("%s: %w (it accepts quota and containerDefaults.requests/limits)", namespaceResourcesPath, err)
	}
	d := DefaultBaseline()
	b := Baseline{Quota: d.Quota, DefaultRequests: d.DefaultRequests, DefaultLimits: d.DefaultLimits}
	if nr.Quota != nil {
		if b.Quota, err = quantities(namespaceResourcesPath+".quota", nr.Quota); err != nil {
			return Baseline{}, err
		}
	}
	if nr.ContainerDefaults.Requests != nil {
		if b.DefaultRequests, err = quantities(namespaceResourcesPath+".containerDefaults.requests", nr.ContainerDefaults.Requests); err != nil {
			return Baseline{}, err
		}
	}
	if nr.ContainerDefaults.Limits != nil {
		if b.DefaultLimits, err = quantities(namespaceResourcesPath+".containerDefaults.limits", nr.ContainerDefaults.Limits); err != nil {
			return Baseline{}, err
		}
	}
	if err := b.Validate(); err != nil {
		return Baseline{}, fmt.Errorf("%s: %w", namespaceResourcesPath, err)
	}
	return b, nil
}

func quantities(path string, in map[string]string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	keys := make([]string, 0, len(in))
	for k := range in {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		q, err := resource.ParseQuantity(in[k])
		if err != nil {
			return nil, fmt.Errorf("%s.%s %q is not a Kubernetes quantity (for example \"500m\" or \"2Gi\"): %w", path, k, in[k], err)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("%s.%s %q is negative: quantities must be non-negative", path, k, in[k])
		}
		out[corev1.ResourceName(k)] = q
	}
	return out, nil
}

// mappingValue returns the value of key in a YAML mapping node (following a document node), or
// nil.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.DocumentNode && len(n.Content) == 1 {
		n = n.Content[0]
	}
	if n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
