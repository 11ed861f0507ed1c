package charts

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/occdev/artifacts"
)

// WorkspaceValues are the values of the one-off Workspace chart render.
type WorkspaceValues struct {
	FullnameOverride      string           `json:"fullnameOverride"`
	Gateway               WorkspaceGateway `json:"gateway"`
	SandboxServiceAccount NamedAccount     `json:"sandboxServiceAccount"`
}

// WorkspaceGateway tells the Workspace chart which Gateway serves the namespace: its
// ServiceAccount is bound to the sandbox Role, and its Pods are let in by the NetworkPolicy.
type WorkspaceGateway struct {
	ServiceAccount    GatewayAccount         `json:"serviceAccount"`
	NetworkPolicy     WorkspaceNetworkPolicy `json:"networkPolicy"`
	AllowDriverConfig bool                   `json:"allowDriverConfig"`
}

// GatewayAccount is the Gateway's ServiceAccount, by name and namespace.
type GatewayAccount struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

// WorkspaceNetworkPolicy selects the Gateway Pods allowed into workspace namespaces.
type WorkspaceNetworkPolicy struct {
	PodSelector map[string]string `json:"podSelector"`
}

// NewWorkspaceValues returns the development values for a Gateway released as GatewayRelease in
// gatewayNamespace.
func NewWorkspaceValues(gatewayNamespace string) (*WorkspaceValues, error) {
	if msgs := validation.IsDNS1123Label(gatewayNamespace); len(msgs) > 0 {
		return nil, fmt.Errorf("workspace values: gateway namespace %q: %s", gatewayNamespace, strings.Join(msgs, "; "))
	}
	return &WorkspaceValues{
		FullnameOverride: WorkspaceRelease,
		Gateway: WorkspaceGateway{
			ServiceAccount:    GatewayAccount{Name: GatewayServiceAccount, Namespace: gatewayNamespace},
			NetworkPolicy:     WorkspaceNetworkPolicy{PodSelector: map[string]string{contract.LabelInstance: GatewayRelease}},
			AllowDriverConfig: true,
		},
		SandboxServiceAccount: NamedAccount{Name: SandboxServiceAccount},
	}, nil
}

// Map converts the values to the generic map Helm takes.
func (v *WorkspaceValues) Map() (map[string]any, error) { return toMap(v) }

// RenderWorkspace renders the Workspace chart once with the Helm engine and returns its objects
// without namespaces, in a stable order (template file name, then document order). Only
// ServiceAccount, Role, RoleBinding and NetworkPolicy are accepted; any other object fails the
// whole render, naming it.
func RenderWorkspace(ch *chart.Chart, values *WorkspaceValues) ([]*unstructured.Unstructured, error) {
	if ch == nil || values == nil {
		return nil, fmt.Errorf("render OpenShell workspace chart: chart and values are required")
	}
	vals, err := values.Map()
	if err != nil {
		return nil, err
	}
	renderVals, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{
		Name:      WorkspaceRelease,
		Namespace: WorkspaceTemplateNamespace,
		Revision:  1,
		IsInstall: true,
	}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, fmt.Errorf("render OpenShell workspace chart: %w", err)
	}
	// The default (non-strict) engine, as `helm template` uses: the real chart may read
	// optional values it does not declare.
	rendered, err := engine.Render(ch, renderVals)
	if err != nil {
		return nil, fmt.Errorf("render OpenShell workspace chart: %w", err)
	}
	names := make([]string, 0, len(rendered))
	for name := range rendered {
		names = append(names, name)
	}
	sort.Strings(names)

	var out []*unstructured.Unstructured
	seen := map[string]string{}
	for _, name := range names {
		base := path.Base(name)
		if strings.HasPrefix(base, "_") || base == "NOTES.txt" || strings.TrimSpace(rendered[name]) == "" {
			continue
		}
		objs, err := artifacts.ParseYAML([]byte(rendered[name]), "OpenShell workspace chart template "+name)
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			gvk := obj.GroupVersionKind()
			// Only contract.WorkspaceResourceKinds may come out of the render. They become
			// operatorWorkspaceResources, which OCE applies into every tenant namespace;
			// anything wider (a ClusterRole, a Deployment) would be a privilege the development
			// platform never reviewed, and the Installation validator refuses it too.
			if !contract.IsWorkspaceResourceKind(gvk) {
				return nil, fmt.Errorf("OpenShell workspace chart rendered an unsupported resource: %s %s %q from %s; only ServiceAccount (v1), Role and RoleBinding (rbac.authorization.k8s.io/v1) and NetworkPolicy (networking.k8s.io/v1) may become operatorWorkspaceResources", obj.GetAPIVersion(), obj.GetKind(), obj.GetName(), name)
			}
			if strings.TrimSpace(obj.GetName()) == "" {
				return nil, fmt.Errorf("OpenShell workspace chart rendered a %s without a name from %s", obj.GetKind(), name)
			}
			key := gvk.Kind + "/" + obj.GetName()
			if prev, dup := seen[key]; dup {
				return nil, fmt.Errorf("OpenShell workspace chart rendered %s twice (%s and %s)", key, prev, name)
			}
			seen[key] = name
			// The objects are templates for every workspace namespace; the driver sets the
			// namespace when it applies them.
			unstructured.RemoveNestedField(obj.Object, "metadata", "namespace")
			out = append(out, obj)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("OpenShell workspace chart rendered no resources; check openshell.charts.workspace in the pin file")
	}
	return out, nil
}
