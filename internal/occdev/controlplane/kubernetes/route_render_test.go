package kubernetes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openclaw/occ/internal/occdev/platform"
)

// The Compose profile's route: only the chart's route template renders, with the node's name as
// the listener's hostname, the Envoy Service a NodePort and the node and the Compose services
// admitted by address; nothing of the release (Deployments, Jobs) comes with it.
func TestRenderRouteBeside(t *testing.T) {
	ch, err := LoadChart(fixtureCheckout)
	if err != nil {
		t.Fatal(err)
	}
	values := routeValues(t, "172.30.41.3/32", "172.30.41.2/32", "172.30.41.3/32")
	if got := strings.Join(values.GatewayRouting.RemoteNodeCIDRs, ","); got != "172.30.41.2/32,172.30.41.3/32" {
		t.Errorf("remoteNodeCidrs %s, want sorted and without repeats", got)
	}
	objs, err := RenderRoute(ch, "oce-system", values)
	if err != nil {
		t.Fatal(err)
	}
	route := platform.Route{Namespace: "oce-system"}
	kinds := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		kinds[o.GetKind()+"/"+o.GetName()] = o
		if k := o.GetKind(); k == "Deployment" || k == "Job" || k == "Service" {
			t.Errorf("the route render carries %s %s of the release", k, o.GetName())
		}
	}
	gw := kinds["Gateway/"+platform.RoutingGatewayName]
	if gw == nil || gw.GetNamespace() != "oce-system" {
		t.Fatalf("no Gateway in oce-system among %v", kinds)
	}
	listeners, _, _ := unstructured.NestedSlice(gw.Object, "spec", "listeners")
	if len(listeners) != 1 || listeners[0].(map[string]any)["hostname"] != "k3d-dev-server-0" {
		t.Errorf("listeners %v", listeners)
	}
	if class, _, _ := unstructured.NestedString(gw.Object, "spec", "gatewayClassName"); class != platform.RoutingGatewayClass {
		t.Errorf("gatewayClassName %q", class)
	}
	ep := kinds["EnvoyProxy/"+platform.RoutingGatewayName]
	if svc, _, _ := unstructured.NestedStringMap(ep.Object, "spec", "provider", "kubernetes", "envoyService"); svc["type"] != "NodePort" || svc["name"] != route.Service() {
		t.Errorf("envoyService %v", svc)
	}
	sp := kinds["SecurityPolicy/"+platform.RoutingGatewayName+"-api-key"]
	if refs, _, _ := unstructured.NestedSlice(sp.Object, "spec", "apiKeyAuth", "credentialRefs"); len(refs) != 1 || refs[0].(map[string]any)["name"] != GatewayKeySecret {
		t.Errorf("credentialRefs %v", refs)
	}
	dp := kinds["NetworkPolicy/openclaw-enterprise-"+strings.TrimPrefix(route.Service(), "occ-gateway-")+"-envoy-dataplane"]
	if dp == nil || dp.GetNamespace() != platform.RoutingEnvoyNamespace {
		t.Fatalf("no data-plane NetworkPolicy in %s among %v", platform.RoutingEnvoyNamespace, kinds)
	}
	ingress, _, _ := unstructured.NestedSlice(dp.Object, "spec", "ingress")
	var blocks []string
	for _, peer := range ingress[0].(map[string]any)["from"].([]any) {
		if b, ok := peer.(map[string]any)["ipBlock"].(map[string]any); ok {
			blocks = append(blocks, b["cidr"].(string))
		}
	}
	if strings.Join(blocks, ",") != "172.30.41.2/32,172.30.41.3/32" {
		t.Errorf("the data plane admits %v beside the cluster", blocks)
	}
	if c := kinds["Certificate/"+route.Certificate()]; c == nil {
		t.Errorf("no listener Certificate among %v", kinds)
	} else if names, _, _ := unstructured.NestedStringSlice(c.Object, "spec", "dnsNames"); len(names) != 1 || names[0] != "k3d-dev-server-0" {
		t.Errorf("the Certificate names %v", names)
	}

	// A range, or no client at all, is refused before anything renders.
	for _, bad := range [][]string{nil, {"172.30.41.0/24"}, {"fd00::1/128"}} {
		if _, err := values.WithRouteBeside(RouteBeside{Hostname: "k3d-dev-server-0", RemoteCIDRs: bad}); err == nil {
			t.Errorf("remote CIDRs %v accepted", bad)
		}
	}
}

// An older OCE checkout whose chart has no route template: the render says so and what to run
// instead, rather than applying nothing.
func TestRenderRouteWithoutTheTemplate(t *testing.T) {
	checkout := chartCopy(t)
	if err := os.Remove(filepath.Join(checkout, ChartPath, RouteTemplate)); err != nil {
		t.Fatal(err)
	}
	ch, err := LoadChart(checkout)
	if err != nil {
		t.Fatal(err)
	}
	values := routeValues(t, "172.30.41.2/32")
	if _, err := RenderRoute(ch, "oce-system", values); err == nil || !strings.Contains(err.Error(), "has no templates/gateway-routing.yaml: it cannot render the private Agent Gateway route") {
		t.Errorf("a chart without the route template: %v", err)
	}
}

// routeValues are the development values of namespace oce-system with the route beside the
// cluster on node k3d-dev-server-0, admitting remote.
func routeValues(t *testing.T, remote ...string) Values {
	t.Helper()
	in, err := PlaceholderValuesInput("oce-system", "openclaw-enterprise-controller:dev", 3000)
	if err != nil {
		t.Fatal(err)
	}
	values, err := BuildValues(in)
	if err != nil {
		t.Fatal(err)
	}
	if values, err = values.WithRouteBeside(RouteBeside{Hostname: "k3d-dev-server-0", RemoteCIDRs: remote}); err != nil {
		t.Fatal(err)
	}
	return values
}
