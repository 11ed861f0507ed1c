package kubernetes

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// With the routing controllers installed, the chart's gatewayRouting is enabled with their
// GatewayClass and the API key Secret occ creates (this state's, 48 hex under key occ, the same
// on a repeated run); without them the values carry no gatewayRouting and no such Secret exists.
// The fixture chart (the real chart's validation of gatewayRouting) accepts both.
func TestRoutingEnablesTheChartsGatewayRouting(t *testing.T) {
	in, err := PlaceholderValuesInput("oce-system", "openclaw-enterprise-controller:kubernetes-quickstart", 3000)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := BuildValues(in)
	if err != nil {
		t.Fatal(err)
	}
	in.Routing = true
	routed, err := BuildValues(in)
	if err != nil {
		t.Fatal(err)
	}
	if plain.GatewayRouting != nil || routed.GatewayRouting == nil || !reflect.DeepEqual(*routed.GatewayRouting, GatewayRoutingValues{Enabled: true, GatewayClassName: "eg", APIKeySecretName: GatewayKeySecret}) {
		t.Errorf("gatewayRouting without routing %+v, with %+v", plain.GatewayRouting, routed.GatewayRouting)
	}
	ch := fixtureChart(t)
	for _, v := range []Values{plain, routed} {
		if err := CheckChart(ch, "oce-system", v); err != nil {
			t.Errorf("the chart refuses %+v: %v", v.GatewayRouting, err)
		}
	}

	b := newRoutingBed(t)
	ctx := context.Background()
	cp, _, _ := b.newControlPlane(nil, nil)
	upWithRoute(t, b, cp)
	key := func() string {
		t.Helper()
		s, err := b.client.CoreV1().Secrets(b.ns).Get(ctx, GatewayKeySecret, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !cp.own.owns(s.Labels) || len(s.Data) != 1 || !hex48.Match(s.Data[GatewayKeySecretKey]) {
			t.Fatalf("Secret %s: labels %v, keys %d, key occ of the right form %v", GatewayKeySecret, s.Labels, len(s.Data), hex48.Match(s.Data[GatewayKeySecretKey]))
		}
		return string(s.Data[GatewayKeySecretKey])
	}
	first := key()
	config, err := json.Marshal(cp.Release().Config)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(config), `"gatewayRouting":{"apiKeySecretName":"occ-private-gateway-key","enabled":true,"gatewayClassName":"eg"}`) {
		t.Errorf("the release's values: %s", config)
	}
	if strings.Contains(string(config), first) {
		t.Errorf("the release's values carry the key itself")
	}
	again, _, _ := b.newControlPlane(nil, nil)
	upWithRoute(t, b, again)
	if key() != first {
		t.Errorf("a repeated run changed the routing's API key")
	}
}
