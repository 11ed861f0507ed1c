package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/openclaw/occ/internal/occdev/artifacts"
	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/testbed"
)

// routingManifests are the stand-ins of the routing controllers' release manifests, whose CRDs
// (cert-manager's, Envoy Gateway's and the Gateway API's) the route's objects are of.
var routingManifests = []string{"../../platform/testdata/routing/cert-manager.yaml", "../../platform/testdata/routing/envoy-gateway.yaml"}

// installRoutingCRDs creates the CRDs of the routing manifests on the shared apiserver (once:
// they are cluster-wide) and waits until the apiserver serves them.
func installRoutingCRDs(t *testing.T, b *bed) {
	t.Helper()
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(b.config)
	crds := dyn.Resource(apiextv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))
	var names []string
	for _, path := range routingManifests {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := artifacts.ParseYAML(data, path)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			if o.GetKind() != "CustomResourceDefinition" {
				continue
			}
			if _, err := crds.Create(ctx, o, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("create CRD %s: %v", o.GetName(), err)
			}
			names = append(names, o.GetName())
		}
	}
	// The routing manifests create Envoy Gateway's namespace, where the route's data-plane
	// policy and proxies live.
	if _, err := b.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: platform.RoutingEnvoyNamespace}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, name := range names {
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			u, err := crds.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			var crd apiextv1.CustomResourceDefinition
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &crd); err != nil {
				return false, err
			}
			for _, c := range crd.Status.Conditions {
				if c.Type == apiextv1.Established && c.Status == apiextv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("CRD %s not established: %v", name, err)
		}
	}
}

// newRoutingBed is a bed whose apiserver serves the routing controllers' kinds, with a k3s node
// of Pod range 10.42.0.0/24; the OCE release is uninstalled at the end.
func newRoutingBed(t *testing.T) *bed {
	b := newBed(t)
	b.uninstallAtEnd()
	installRoutingCRDs(t, b)
	createNode(t, b)
	return b
}

// routeControllers plays cert-manager and Envoy Gateway for the route of one namespace: it marks
// the listener's Certificate Ready and the Gateway Programmed once they exist, then runs one
// Envoy proxy Pod at proxyIP, as the controllers would on a cluster.
type routeControllers struct {
	t       *testing.T
	b       *bed
	dyn     dynamic.Interface
	route   platform.Route
	proxyIP string
}

func (rc *routeControllers) setCondition(ctx context.Context, gvr schema.GroupVersionResource, name, cond string) (bool, error) {
	ri := rc.dyn.Resource(gvr).Namespace(rc.route.Namespace)
	u, err := ri.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	c := map[string]any{"type": cond, "status": "True", "reason": cond, "message": "played by the test", "observedGeneration": u.GetGeneration(),
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}
	if err := unstructured.SetNestedSlice(u.Object, []any{c}, "status", "conditions"); err != nil {
		return false, err
	}
	_, err = ri.UpdateStatus(ctx, u, metav1.UpdateOptions{})
	return err == nil, err
}

// play runs until ctx ends; its error, if any, is returned on the channel.
func (rc *routeControllers) play(ctx context.Context) <-chan error {
	done := make(chan error, 1)
	go func() {
		var certified, programmed, proxied bool
		done <- wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			var err error
			if !certified {
				if certified, err = rc.setCondition(ctx, schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}, rc.route.Certificate(), "Ready"); err != nil {
					return false, err
				}
			}
			if !programmed {
				if programmed, err = rc.setCondition(ctx, schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}, platform.RoutingGatewayName, "Programmed"); err != nil {
					return false, err
				}
			}
			if programmed && !proxied {
				if err := rc.runProxy(ctx); err != nil {
					return false, err
				}
				proxied = true
			}
			return false, nil
		})
	}()
	return done
}

// runProxy creates the Envoy proxy Pod of the route's Gateway and plays its kubelet.
func (rc *routeControllers) runProxy(ctx context.Context) error {
	c := rc.b.client
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "envoy-" + rc.route.Service(), Namespace: platform.RoutingEnvoyNamespace, Labels: rc.route.ProxyLabels()},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "envoy", Image: "envoy"}}},
	}
	created, err := c.CoreV1().Pods(platform.RoutingEnvoyNamespace).Create(ctx, pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil // a repeated run: the proxy runs already
	}
	if err != nil {
		return err
	}
	rc.t.Cleanup(func() {
		_ = c.CoreV1().Pods(platform.RoutingEnvoyNamespace).Delete(context.Background(), created.Name, *metav1.NewDeleteOptions(0))
	})
	testbed.SetPodReady(created)
	created.Status.PodIP = rc.proxyIP
	created.Status.PodIPs = []corev1.PodIP{{IP: rc.proxyIP}}
	_, err = c.CoreV1().Pods(platform.RoutingEnvoyNamespace).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

// upWithRoute runs cp.Up with routing while cert-manager and Envoy Gateway are played for its
// route, its proxy at 10.42.0.17 on the node's Pod range.
func upWithRoute(t *testing.T, b *bed, cp *ControlPlane) *routeControllers {
	t.Helper()
	cp.cfg.Routing = true
	rc := &routeControllers{t: t, b: b, dyn: dynamic.NewForConfigOrDie(b.config), route: platform.Route{Namespace: b.ns}, proxyIP: "10.42.0.17"}
	ctx, stop := context.WithCancel(context.Background())
	played := rc.play(ctx)
	err := cp.Up(context.Background())
	stop()
	if perr := <-played; perr != nil && !errors.Is(perr, context.Canceled) {
		t.Fatalf("the played controllers: %v", perr)
	}
	if err != nil {
		t.Fatalf("Up: %v", err)
	}
	return rc
}

// With the routing controllers installed, the chart renders the private route of dedicated
// Agent Gateways and the control plane is up only once cert-manager has issued its Certificate,
// Envoy Gateway has programmed its Gateway and the Gateway's proxies are Ready on the node's Pod
// range; a proxy elsewhere is refused, and a route nothing serves is named with its last state.
func TestRoutingWaitsForThePrivateRoute(t *testing.T) {
	b := newRoutingBed(t)
	ctx := context.Background()

	// The route as the chart renders it, named as occ names it.
	cp, _, _ := b.newControlPlane(nil, nil)
	route := platform.Route{Namespace: b.ns}
	rc := upWithRoute(t, b, cp)
	for _, o := range []struct {
		gvr  schema.GroupVersionResource
		ns   string
		name string
	}{
		{schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "issuers"}, b.ns, route.Service() + "-bootstrap"},
		{schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}, b.ns, route.RootSecret()},
		{schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "issuers"}, b.ns, route.Service() + "-ca"},
		{schema.GroupVersionResource{Group: "gateway.envoyproxy.io", Version: "v1alpha1", Resource: "envoyproxies"}, b.ns, platform.RoutingGatewayName},
		{schema.GroupVersionResource{Group: "gateway.envoyproxy.io", Version: "v1alpha1", Resource: "securitypolicies"}, b.ns, platform.RoutingGatewayName + "-api-key"},
	} {
		if _, err := rc.dyn.Resource(o.gvr).Namespace(o.ns).Get(ctx, o.name, metav1.GetOptions{}); err != nil {
			t.Errorf("the chart's route lacks %s %s/%s: %v", o.gvr.Resource, o.ns, o.name, err)
		}
	}
	gw, err := rc.dyn.Resource(schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gateways"}).Namespace(b.ns).Get(ctx, platform.RoutingGatewayName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	listeners, _, _ := unstructured.NestedSlice(gw.Object, "spec", "listeners")
	if len(listeners) != 1 || fmt.Sprint(listeners[0].(map[string]any)["hostname"]) != route.Service()+".envoy-gateway-system.svc" {
		t.Errorf("the Gateway's listeners: %v", listeners)
	}
	if _, err := b.client.NetworkingV1().NetworkPolicies(platform.RoutingEnvoyNamespace).Get(ctx, "openclaw-enterprise-"+strings.TrimPrefix(route.Service(), "occ-gateway-")+"-envoy-dataplane", metav1.GetOptions{}); err != nil {
		t.Errorf("the route's data-plane NetworkPolicy: %v", err)
	}

	// A proxy outside the node's Pod range is refused, naming it.
	ips, err := platform.WaitRoute(ctx, b.conn, route, []string{"10.42.0.0/24"}, 10*time.Second)
	if err != nil || strings.Join(ips, ",") != "10.42.0.17/32" {
		t.Errorf("WaitRoute on the served route = %v, %v", ips, err)
	}
	if _, err := platform.WaitRoute(ctx, b.conn, route, []string{"10.43.0.0/24"}, 10*time.Second); err == nil || !strings.Contains(err.Error(), "has address 10.42.0.17, outside the node's Pod ranges 10.43.0.0/24") {
		t.Errorf("a proxy outside the Pod range: %v", err)
	}

	// A route nothing serves ends at the deadline, naming the Certificate and its last state.
	other := platform.Route{Namespace: "unserved-" + suffix(t)}
	if _, err := platform.WaitRoute(ctx, b.conn, other, []string{"10.42.0.0/24"}, time.Second); err == nil ||
		!strings.Contains(err.Error(), "Certificate "+other.Namespace+"/openclaw-enterprise-agent-gateways-tls was not Ready within 1s (last seen: not created yet): check the cert-manager Pods' logs") {
		t.Errorf("an unserved route: %v", err)
	}
}
