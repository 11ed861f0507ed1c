package kubernetes

import (
	"fmt"
	"net/netip"
	"slices"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openclaw/occ/internal/occdev/artifacts"
	"github.com/openclaw/occ/internal/occdev/platform"
)

// RouteTemplate is the chart template that renders the private route of dedicated Agent
// Gateways (gatewayRouting), and nothing else.
const RouteTemplate = "templates/gateway-routing.yaml"

// RouteBeside is the private route as clients outside the cluster reach it: a control plane
// beside the cluster (the Compose profile) dials the node by its name on the Envoy Service's
// NodePort, and the route's data-plane policy admits those clients' addresses.
type RouteBeside struct {
	// Hostname is the listener's hostname: the node's name, which the clients resolve on
	// their network.
	Hostname string
	// RemoteCIDRs are the clients' addresses (each a /32 on the network they share with the
	// node, the node's own among them).
	RemoteCIDRs []string
}

// WithRouteBeside returns v with gatewayRouting set for a route whose clients run beside the
// cluster: enabled with the routing controllers' class and the API key Secret, the listener
// named after r.Hostname and published as a NodePort, and r.RemoteCIDRs admitted.
func (v Values) WithRouteBeside(r RouteBeside) (Values, error) {
	if len(r.RemoteCIDRs) == 0 {
		return Values{}, fmt.Errorf("the route beside the cluster admits no client address: at least the node's own is needed")
	}
	for _, c := range r.RemoteCIDRs {
		p, err := netip.ParsePrefix(c)
		if err != nil || !p.Addr().Is4() || p.Bits() != 32 {
			return Values{}, fmt.Errorf("the route's client address %q must be an IPv4 /32: the data plane admits single hosts beside the cluster, never a range", c)
		}
	}
	cidrs := slices.Clone(r.RemoteCIDRs)
	slices.Sort(cidrs)
	v.GatewayRouting = &GatewayRoutingValues{
		Enabled: true, GatewayClassName: platform.RoutingGatewayClass, APIKeySecretName: GatewayKeySecret,
		GatewayName: platform.RoutingGatewayName, Hostname: r.Hostname, ServiceType: "NodePort", RemoteNodeCIDRs: slices.Compact(cidrs),
	}
	return v, nil
}

// RenderRoute renders only the route's template of the OCE chart, as release
// openclaw-enterprise in namespace with values, and returns its objects in template order. A
// control plane beside the cluster installs no release: only the route's objects exist in the
// cluster, applied one by one.
func RenderRoute(ch *chart.Chart, namespace string, values Values) ([]*unstructured.Unstructured, error) {
	vals, err := values.Map()
	if err != nil {
		return nil, err
	}
	name := ChartPath
	if md := ch.Metadata; md != nil {
		name = md.Name + " " + md.Version
	}
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: ReleaseName, Namespace: namespace, Revision: 1, IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, &ChartError{Chart: name, Err: err}
	}
	rendered, err := engine.Render(ch, rv)
	if err != nil {
		return nil, &ChartError{Chart: name, Err: err}
	}
	key := ch.Name() + "/" + RouteTemplate
	data, ok := rendered[key]
	if !ok {
		return nil, fmt.Errorf("the checkout's OCE chart %s has no %s: it cannot render the private Agent Gateway route; run a checkout whose chart has gatewayRouting", name, RouteTemplate)
	}
	objs, err := artifacts.ParseYAML([]byte(data), key)
	if err != nil {
		return nil, err
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("the checkout's OCE chart %s renders nothing in %s with gatewayRouting enabled", name, RouteTemplate)
	}
	for _, o := range objs {
		if o.GetNamespace() == "" {
			return nil, fmt.Errorf("%s renders %s %s without a namespace: the route's objects are namespaced", key, o.GetKind(), o.GetName())
		}
	}
	return objs, nil
}
