package occdev_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/occdev/state"
)

// routingPinFile writes a pin file whose routing section installs the stand-ins of the two
// routing manifests (platform/testdata/routing) from a local server. The stand-in node reaches
// no registry, so their images are swapped for OpenShell images occ imports into the node (as
// the bed's Agent Sandbox controller does): the containers run the Gateway image, the ACME
// solver flag names the Sandbox image and the rate-limit image the supervisor's. Each is named
// in the manifest by its tag and pinned by repository, tag and digest, as the real pins are.
func (b *k3dBed) routingPinFile(t *testing.T) (string, *pins.Routing) {
	t.Helper()
	imgs := b.set.OpenShell.Images
	tagged := func(p pins.Image) string { return p.Name() + ":" + p.Tag }
	read := func(name string, swaps ...string) []byte {
		data, err := os.ReadFile(filepath.Join("platform", "testdata", "routing", name))
		if err != nil {
			t.Fatal(err)
		}
		return []byte(strings.NewReplacer(swaps...).Replace(string(data)))
	}
	cm := read("cert-manager.yaml",
		"quay.io/jetstack/cert-manager-controller:v1.18.4", tagged(imgs.Gateway),
		"quay.io/jetstack/cert-manager-cainjector:v1.18.4", tagged(imgs.Gateway),
		"quay.io/jetstack/cert-manager-webhook:v1.18.4", tagged(imgs.Gateway),
		"quay.io/jetstack/cert-manager-acmesolver:v1.18.4", tagged(imgs.Sandbox))
	eg := read("envoy-gateway.yaml",
		"docker.io/envoyproxy/gateway:v1.6.7", tagged(imgs.Gateway),
		"docker.io/envoyproxy/ratelimit:99d85510", tagged(imgs.Supervisor))
	files := map[string][]byte{"/cert-manager.yaml": cm, "/install.yaml": eg}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(data)
	}))
	t.Cleanup(srv.Close)
	artifact := func(path string) pins.Artifact {
		sum := sha256.Sum256(files[path])
		return pins.Artifact{URL: srv.URL + path, SHA256: hex.EncodeToString(sum[:])}
	}
	set := *b.set
	set.Routing = &pins.Routing{
		CertManager:  pins.RoutingController{Version: "v1.18.4", Manifest: artifact("/cert-manager.yaml"), Images: []pins.Image{imgs.Gateway, imgs.Sandbox}},
		EnvoyGateway: pins.RoutingController{Version: "v1.6.7", Manifest: artifact("/install.yaml"), Images: []pins.Image{imgs.Gateway, imgs.Supervisor}},
	}
	return b.writePins(&set), set.Routing
}

// testRoutingControllers: with pins that record the routing controllers' images, `up` fetches
// and verifies both manifests, applies them with every image by its pinned digest (the
// cluster's Gateway API CRDs left out), waits for their four Deployments, and writes the
// routing into the Installation: gatewayRouting with the route's hostname, the node's Pod CIDR
// as the trusted proxy range, no listed Gateway clients. The summary names them; `down` takes
// them with the cluster. A failure after either new step rolls back to nothing.
func testRoutingControllers(t *testing.T, b *k3dBed) {
	ctx := context.Background()
	pinFile, routing := b.routingPinFile(t)
	opts := b.options(t)
	opts.PinFile = pinFile
	downAtEnd(t, opts.StateDir)
	steps := &recordedProgress{}
	opts.Progress = steps.sink
	sum, err := occdev.Up(ctx, opts)
	if err != nil {
		t.Fatalf("up: %v\nlog:\n%s", err, opts.Log)
	}
	t.Logf("steps:\n%s", strings.Join(steps.lines, "\n"))
	for _, want := range []string{"Fetch and verify the routing controller manifests [artifacts]", "Apply the routing controller manifests [platform]", "Wait for the Agent Sandbox and routing controllers and the Gateway [platform]"} {
		if !slices.ContainsFunc(steps.lines, func(l string) bool { return strings.HasPrefix(l, want) && strings.HasSuffix(l, " ok") }) {
			t.Errorf("no step %q ended ok", want)
		}
	}
	if !strings.HasPrefix(sum.Routing, "cert-manager v1.18.4, Envoy Gateway v1.6.7 (route occ-gateway-") {
		t.Errorf("summary routing %q", sum.Routing)
	}
	st, err := state.Read(opts.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	kc, dyn, _ := kubeClientOf(t, st.Cluster)
	gw := routing.CertManager.Images[0].DigestReference()
	for _, d := range []struct{ ns, name string }{{"cert-manager", "cert-manager"}, {"cert-manager", "cert-manager-cainjector"}, {"cert-manager", "cert-manager-webhook"}, {"envoy-gateway-system", "envoy-gateway"}} {
		if n := readyReplicas(t, kc, "Deployment", d.ns, d.name); n != 1 {
			t.Errorf("Deployment %s/%s has %d ready replicas", d.ns, d.name, n)
		}
		dep, err := kc.AppsV1().Deployments(d.ns).Get(ctx, d.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if img := dep.Spec.Template.Spec.Containers[0].Image; img != gw {
			t.Errorf("Deployment %s/%s runs %s, want the pinned digest %s", d.ns, d.name, img, gw)
		}
		if d.name == "cert-manager" && !slices.Contains(dep.Spec.Template.Spec.Containers[0].Args, "--acme-http01-solver-image="+routing.CertManager.Images[1].DigestReference()) {
			t.Errorf("the ACME solver flag is not the pinned digest: %q", dep.Spec.Template.Spec.Containers[0].Args)
		}
	}
	cfg, err := kc.CoreV1().ConfigMaps("envoy-gateway-system").Get(ctx, "envoy-gateway-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := cfg.Data["envoy-gateway.yaml"]; !strings.Contains(c, "image: "+routing.EnvoyGateway.Images[1].DigestReference()+"\n") || !strings.Contains(c, "image: "+gw+"\n") {
		t.Errorf("the EnvoyGateway configuration names other images:\n%s", c)
	}
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	if _, err := crds.Get(ctx, "securitypolicies.gateway.envoyproxy.io", metav1.GetOptions{}); err != nil {
		t.Errorf("Envoy Gateway's own CRD: %v", err)
	}
	if _, err := crds.Get(ctx, "gatewayclasses.gateway.networking.k8s.io", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Gateway API CRD of the manifest was applied (it is the cluster's): %v", err)
	}

	data, err := os.ReadFile(sum.Installation)
	if err != nil {
		t.Fatal(err)
	}
	var inst struct {
		Drivers struct {
			Compute struct {
				Configuration struct {
					GatewayRouting map[string]string `json:"gatewayRouting"`
					Network        map[string]any    `json:"network"`
				} `json:"configuration"`
			} `json:"compute"`
		} `json:"drivers"`
	}
	if err := yaml.Unmarshal(data, &inst); err != nil {
		t.Fatal(err)
	}
	c := inst.Drivers.Compute.Configuration
	node, err := kc.CoreV1().Nodes().Get(ctx, "k3d-"+opts.ClusterName+"-server-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantRouting := map[string]string{"gatewayName": platform.RoutingGatewayName, "gatewayNamespace": opts.Namespace, "envoyNamespace": "envoy-gateway-system", "hostname": platform.RoutingHostname(opts.Namespace)}
	if opts.Namespace == "" {
		wantRouting["gatewayNamespace"] = "oce-system"
		wantRouting["hostname"] = platform.RoutingHostname("oce-system")
	}
	for k, v := range wantRouting {
		if c.GatewayRouting[k] != v {
			t.Errorf("Installation gatewayRouting.%s = %q, want %q (%v)", k, c.GatewayRouting[k], v, c.GatewayRouting)
		}
	}
	if got, _ := c.Network["gatewayTrustedProxyCidrs"].([]any); len(got) != 1 || got[0] != node.Spec.PodCIDR || node.Spec.PodCIDR == "" {
		t.Errorf("Installation gatewayTrustedProxyCidrs %v, want the node's Pod CIDR %q", c.Network["gatewayTrustedProxyCidrs"], node.Spec.PodCIDR)
	}
	if _, listed := c.Network["gatewayClients"]; listed {
		t.Errorf("the Installation still lists Gateway clients beside the route: %v", c.Network["gatewayClients"])
	}

	if _, err := occdev.Down(ctx, occdev.DownOptions{StateDir: opts.StateDir, Log: opts.Log}); err != nil {
		t.Fatalf("down: %v", err)
	}
	if left := b.leftovers(t, opts.ClusterName, nil); len(left) > 0 {
		t.Errorf("left after down: %v", left)
	}

	for _, step := range []string{"Fetch and verify the routing controller manifests", "Apply the routing controller manifests"} {
		t.Run("a failure after "+step, func(t *testing.T) {
			opts := b.options(t)
			opts.PinFile = pinFile
			injected := errors.New("injected after " + step)
			opts.Seams().AfterStep = func(name string) error {
				if name == step {
					return injected
				}
				return nil
			}
			if _, err := occdev.Up(ctx, opts); !errors.Is(err, injected) {
				t.Fatalf("up: %v, want the injected failure", err)
			}
			if _, err := os.Stat(opts.StateDir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the rollback kept the state directory: %v", err)
			}
			if left := b.leftovers(t, opts.ClusterName, nil); len(left) > 0 {
				t.Errorf("left after the rollback: %v", left)
			}
		})
	}
}
