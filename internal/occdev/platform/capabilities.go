package platform

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openclaw/occ/internal/occdev/pins"
)

// ClusterCapabilities are the .Capabilities an offline render sees: those of the cluster the
// chart will be installed into, as far as they are known before it exists.
type ClusterCapabilities struct {
	// KubeVersion is the Kubernetes version ("v1.36.4") and KubeVersionSource where it came from
	// ("the pinned k3s image docker.io/rancher/k3s:v1.36.4-k3s1").
	KubeVersion       string
	KubeVersionSource string
	// ManifestAPIVersions are the API versions the Agent Sandbox manifest's CustomResourceDefinitions
	// add once applied, in both forms Helm's discovery reports: "group/version" and
	// "group/version/Kind", for every served version.
	ManifestAPIVersions []string
	// ManifestSource names the manifest (its URL or file), for messages.
	ManifestSource string
}

// Helm returns the capabilities in Helm's form: Helm's own default API versions (the built-in
// Kubernetes groups) plus the manifest's, and the Kubernetes version.
func (c ClusterCapabilities) Helm() (*chartutil.Capabilities, error) {
	kv, err := chartutil.ParseKubeVersion(c.KubeVersion)
	if err != nil {
		return nil, fmt.Errorf("Kubernetes version %q (%s): %w", c.KubeVersion, c.KubeVersionSource, err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	versions := slices.Clone(chartutil.DefaultVersionSet)
	for _, v := range c.ManifestAPIVersions {
		if !slices.Contains(versions, v) {
			versions = append(versions, v)
		}
	}
	caps.APIVersions = versions
	return caps, nil
}

// Has reports whether the capabilities hold an API version (either form).
func (c ClusterCapabilities) Has(apiVersion string) bool {
	return chartutil.DefaultVersionSet.Has(apiVersion) || slices.Contains(c.ManifestAPIVersions, apiVersion)
}

// K3sKubernetesVersion is the Kubernetes version of a pinned k3s image, read from its tag
// (v1.36.4-k3s1 is Kubernetes v1.36.4). A pin whose tag does not name a k3s release gives no
// version, which is an error: the offline render of the Gateway chart needs it.
func K3sKubernetesVersion(img pins.Image) (string, error) {
	v, ok := pins.K3sRelease(img)
	if !ok {
		return "", fmt.Errorf("pins k3s.image %s: its tag %q does not name a k3s release (vMAJOR.MINOR.PATCH-k3sN), which the offline render of the Gateway chart needs as the cluster's Kubernetes version; pin the k3s image as <repository>:<release tag>@sha256:<digest>", img, img.Tag)
	}
	return v, nil
}

// ManifestAPIVersions are the API versions the CustomResourceDefinitions of a manifest serve
// once applied, as Helm's discovery of a live cluster reports them: "group/version" and
// "group/version/Kind" for every version marked served, sorted. Only what the manifest itself
// declares counts; nothing is assumed about the Agent Sandbox API.
func ManifestAPIVersions(objs []*unstructured.Unstructured) ([]string, error) {
	set := map[string]bool{}
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		if gvk.Group != "apiextensions.k8s.io" || gvk.Kind != "CustomResourceDefinition" {
			continue
		}
		group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(u.Object, "spec", "names", "kind")
		if group == "" || kind == "" {
			return nil, fmt.Errorf("CustomResourceDefinition %s has no spec.group or spec.names.kind", u.GetName())
		}
		versions, _, err := unstructured.NestedSlice(u.Object, "spec", "versions")
		if err != nil {
			return nil, fmt.Errorf("CustomResourceDefinition %s: spec.versions: %w", u.GetName(), err)
		}
		var served []string
		for _, v := range versions {
			m, _ := v.(map[string]any)
			name, _ := m["name"].(string)
			if ok, _ := m["served"].(bool); ok && name != "" {
				served = append(served, name)
			}
		}
		// apiextensions.k8s.io/v1beta1 could name a single version instead of a list.
		if v, _, _ := unstructured.NestedString(u.Object, "spec", "version"); v != "" && len(versions) == 0 {
			served = append(served, v)
		}
		for _, v := range served {
			gv := group + "/" + v
			set[gv] = true
			set[path.Join(gv, kind)] = true
		}
	}
	out := make([]string, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	slices.Sort(out)
	return out, nil
}

// askedAPIVersions are the API versions a chart's templates test with
// .Capabilities.APIVersions.Has "…": what the chart needs the cluster to serve.
var askedAPIVersion = regexp.MustCompile(`APIVersions\.Has\s+"([^"]+)"`)

// apiVersionsAsked lists the API versions the chart's templates ask for, sorted.
func apiVersionsAsked(templates map[string]string) []string {
	set := map[string]bool{}
	for _, body := range templates {
		for _, m := range askedAPIVersion.FindAllStringSubmatch(body, -1) {
			set[m[1]] = true
		}
	}
	out := make([]string, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}

// describe says what the render assumed, for messages and the plan.
func (c ClusterCapabilities) describe() string {
	crds := "none"
	if len(c.ManifestAPIVersions) > 0 {
		crds = strings.Join(c.ManifestAPIVersions, ", ")
	}
	return fmt.Sprintf("Kubernetes %s (%s); Helm's default API versions plus those the CustomResourceDefinitions of the Agent Sandbox manifest %s serve: %s", c.KubeVersion, c.KubeVersionSource, c.ManifestSource, crds)
}
