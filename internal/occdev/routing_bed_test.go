package occdev_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/occdev/state"
)

// routingPinFile writes a pin file whose routing section installs the stand-ins of the two
// routing manifests (platform/testdata/routing) from a local server. Their six images are bed
// images of their own, served by the bed's registry as the real ones are (multi-platform OCI
// indexes with attestations): each named in the manifest by its tag and pinned by repository,
// tag and digest, as the real pins are. It returns the pin file and the images by their role
// (cert-manager-controller, ..., envoy-ratelimit).
func (b *k3dBed) routingPinFile(t *testing.T) (string, map[string]pins.Image) {
	t.Helper()
	imgs := map[string]pins.Image{}
	for _, role := range []string{"cert-manager-controller", "cert-manager-cainjector", "cert-manager-webhook", "cert-manager-acmesolver", "envoy-gateway", "envoy-ratelimit"} {
		imgs[role] = b.provideProduct(t, role).pin
	}
	tagged := func(role string) string { return imgs[role].Name() + ":" + imgs[role].Tag }
	read := func(name string, swaps ...string) []byte {
		data, err := os.ReadFile(filepath.Join("platform", "testdata", "routing", name))
		if err != nil {
			t.Fatal(err)
		}
		return []byte(strings.NewReplacer(swaps...).Replace(string(data)))
	}
	cm := read("cert-manager.yaml",
		"quay.io/jetstack/cert-manager-controller:v1.18.4", tagged("cert-manager-controller"),
		"quay.io/jetstack/cert-manager-cainjector:v1.18.4", tagged("cert-manager-cainjector"),
		"quay.io/jetstack/cert-manager-webhook:v1.18.4", tagged("cert-manager-webhook"),
		"quay.io/jetstack/cert-manager-acmesolver:v1.18.4", tagged("cert-manager-acmesolver"))
	eg := read("envoy-gateway.yaml",
		"docker.io/envoyproxy/gateway:v1.6.7", tagged("envoy-gateway"),
		"docker.io/envoyproxy/ratelimit:99d85510", tagged("envoy-ratelimit"))
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
		CertManager: pins.RoutingController{Version: "v1.18.4", Manifest: artifact("/cert-manager.yaml"),
			Images: []pins.Image{imgs["cert-manager-controller"], imgs["cert-manager-cainjector"], imgs["cert-manager-webhook"], imgs["cert-manager-acmesolver"]}},
		EnvoyGateway: pins.RoutingController{Version: "v1.6.7", Manifest: artifact("/install.yaml"),
			Images: []pins.Image{imgs["envoy-gateway"], imgs["envoy-ratelimit"]}},
	}
	return b.writePins(&set), imgs
}

// routingRefs are the digest references of imgs, for the engine's bookkeeping.
func routingRefs(imgs map[string]pins.Image) []string {
	var refs []string
	for _, img := range imgs {
		refs = append(refs, img.DigestReference())
	}
	slices.Sort(refs)
	return refs
}

// forgetRouting removes the routing images from the engine (untag only), as on a laptop that
// never pulled them, and fails when one stays.
func (b *k3dBed) forgetRouting(t *testing.T, imgs map[string]pins.Image) {
	t.Helper()
	for _, ref := range routingRefs(imgs) {
		if b.imageID(t, ref) != "" {
			b.Engine.Forget(ref)
		}
		if id := b.imageID(t, ref); id != "" {
			t.Fatalf("%s is still in the engine (%s) before the run", ref, id)
		}
	}
}

// routingLeft lists the routing images the engine still holds.
func (b *k3dBed) routingLeft(t *testing.T, imgs map[string]pins.Image) []string {
	t.Helper()
	var out []string
	for _, ref := range routingRefs(imgs) {
		if id := b.imageID(t, ref); id != "" {
			out = append(out, "pulled image "+ref+" ("+id+")")
		}
	}
	return out
}

// testRoutingControllers: with pins that record the routing controllers' images, `up` fetches
// and verifies both manifests, pulls their six images by digest, imports and verifies them in the
// node, applies the manifests with every image by its pinned digest and pullPolicy Never (the
// cluster's Gateway API CRDs left out), waits for their four Deployments, and writes the
// routing into the Installation: gatewayRouting with the route's hostname, the node's Pod CIDR
// as the trusted proxy range, no listed Gateway clients. The summary names them; `down` takes
// them with the cluster. A failure after either new step rolls back to nothing, as does a
// SIGKILL after the apply (then status and down) and a Ctrl-C after the fetch.
//
// With compose set, the same runs in the default Compose profile (no checkout: its platform,
// Gateway on a NodePort), without the plain up beside it and the failure cases.
func testRoutingControllers(t *testing.T, b *k3dBed, compose bool) {
	ctx := context.Background()
	pinFile, imgs := b.routingPinFile(t)
	var plainTook time.Duration
	if !compose {
		plainTook = plainUpTook(t, b)
	}

	b.forgetProducts(t)
	b.forgetRouting(t, imgs)
	opts := b.options(t)
	if compose {
		opts.ControlPlane = ""
	}
	opts.PinFile = pinFile
	downAtEnd(t, opts.StateDir)

	steps := &recordedProgress{}
	opts.Progress = steps.sink
	// No container runs on the bed: the test plays the one act of Envoy Gateway's controller
	// that up waits for, accepting the GatewayClass up creates once its Deployment is ready.
	playCtx, stopPlaying := context.WithCancel(ctx)
	defer stopPlaying()
	played := make(chan error, 1)
	opts.Seams().AfterStep = func(name string) error {
		if name == "Apply the routing controller manifests" {
			go func() { played <- playEnvoyGateway(playCtx, t, opts.StateDir) }()
		}
		return nil
	}
	start := time.Now()
	sum, err := occdev.Up(ctx, opts)
	if err != nil {
		t.Fatalf("up: %v\nlog:\n%s", err, opts.Log)
	}
	if !compose {
		t.Logf("up took %s without routing pins, %s with the routing controllers (six more images pulled, imported and verified; two manifests; four more Deployments)",
			plainTook.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	}
	t.Logf("steps:\n%s", strings.Join(steps.lines, "\n"))
	stopPlaying()
	if err := <-played; err != nil {
		t.Errorf("playing Envoy Gateway: %v", err)
	}
	wantSteps := []string{"Fetch and verify the routing controller manifests [artifacts]", "Apply the routing controller manifests [platform]", "Wait for the Agent Sandbox and routing controllers and the Gateway [platform]"}
	for _, role := range []string{"cert-manager-controller", "cert-manager-cainjector", "cert-manager-webhook", "cert-manager-acmesolver", "envoy-gateway", "envoy-ratelimit"} {
		lane := "[routing-" + role + "]"
		title := "cert-manager " + role
		if strings.HasPrefix(role, "envoy") {
			title = "Envoy Gateway " + role
		}
		wantSteps = append(wantSteps, "Pull the "+title+" image "+lane, "Import the "+title+" image into the cluster "+lane)
	}
	for _, want := range wantSteps {
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
	for _, d := range []struct{ ns, name, role string }{{"cert-manager", "cert-manager", "cert-manager-controller"}, {"cert-manager", "cert-manager-cainjector", "cert-manager-cainjector"},
		{"cert-manager", "cert-manager-webhook", "cert-manager-webhook"}, {"envoy-gateway-system", "envoy-gateway", "envoy-gateway"}} {
		if n := readyReplicas(t, kc, "Deployment", d.ns, d.name); n != 1 {
			t.Errorf("Deployment %s/%s has %d ready replicas", d.ns, d.name, n)
		}
		dep, err := kc.AppsV1().Deployments(d.ns).Get(ctx, d.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c := dep.Spec.Template.Spec.Containers[0]
		if want := imgs[d.role].DigestReference(); c.Image != want || c.ImagePullPolicy != corev1.PullNever {
			t.Errorf("Deployment %s/%s runs %s (pullPolicy %s), want the pinned digest %s imported by occ (Never)", d.ns, d.name, c.Image, c.ImagePullPolicy, want)
		}
		if d.name == "cert-manager" && !slices.Contains(c.Args, "--acme-http01-solver-image="+imgs["cert-manager-acmesolver"].DigestReference()) {
			t.Errorf("the ACME solver flag is not the pinned digest: %q", dep.Spec.Template.Spec.Containers[0].Args)
		}
	}
	cfg, err := kc.CoreV1().ConfigMaps("envoy-gateway-system").Get(ctx, "envoy-gateway-config", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := cfg.Data["envoy-gateway.yaml"]; !strings.Contains(c, "image: "+imgs["envoy-ratelimit"].DigestReference()+"\n") || !strings.Contains(c, "image: "+imgs["envoy-gateway"].DigestReference()+"\n") {
		t.Errorf("the EnvoyGateway configuration names other images:\n%s", c)
	}
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	if _, err := crds.Get(ctx, "securitypolicies.gateway.envoyproxy.io", metav1.GetOptions{}); err != nil {
		t.Errorf("Envoy Gateway's own CRD: %v", err)
	}
	// The cluster's own Gateway API CRD (the k3s stand-in's) stays as it was: occ neither applies
	// the manifest's copy nor records it.
	if crd, err := crds.Get(ctx, "gatewayclasses.gateway.networking.k8s.io", metav1.GetOptions{}); err != nil || crd.GetAnnotations()["gateway.networking.k8s.io/bundle-version"] != "v1.3.0" {
		t.Errorf("the cluster's Gateway API CRD: %v %v", err, crd)
	}
	for _, o := range st.Objects {
		if strings.HasSuffix(o.Name, ".gateway.networking.k8s.io") {
			t.Errorf("the state records %s %s: the manifest's Gateway API CRDs are the cluster's", o.Kind, o.Name)
		}
	}
	gc, err := dyn.Resource(schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gatewayclasses"}).Get(ctx, "eg", metav1.GetOptions{})
	if err != nil || !slices.ContainsFunc(st.Objects, func(o state.Object) bool { return o.Kind == "GatewayClass" && o.Name == "eg" }) {
		t.Errorf("GatewayClass eg: %v, recorded: %v", err, gc != nil)
	}

	c := installationCompute(t, sum.Installation)
	node, err := kc.CoreV1().Nodes().Get(ctx, "k3d-"+opts.K3d().ClusterName+"-server-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantRouting := map[string]string{"gatewayName": platform.RoutingGatewayName, "gatewayNamespace": sum.Namespace, "envoyNamespace": "envoy-gateway-system", "hostname": platform.RoutingHostname(sum.Namespace)}
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
	if left := append(b.leftovers(t, opts.K3d().ClusterName, nil), b.routingLeft(t, imgs)...); len(left) > 0 {
		t.Errorf("left after down: %v", left)
	}

	if compose {
		return
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
			if left := append(b.leftovers(t, opts.K3d().ClusterName, nil), b.routingLeft(t, imgs)...); len(left) > 0 {
				t.Errorf("left after the rollback: %v", left)
			}
		})
	}
	// Killed after the routing manifests are applied, status and down leave nothing, the routing
	// images included; stopped with Ctrl-C once the manifests are verified, up rolls back by
	// itself.
	bin := buildOCC(t)
	for _, c := range []struct {
		step string
		sig  syscall.Signal
	}{{"Apply the routing controller manifests", syscall.SIGKILL}, {"Fetch and verify the routing controller manifests", syscall.SIGINT}} {
		t.Run(c.sig.String()+" after "+c.step, func(t *testing.T) {
			b.forgetProducts(t)
			b.forgetRouting(t, imgs)
			signalUpAfter(t, b, bin, b.options(t), pinFile, c.step, c.sig, func() []string { return b.routingLeft(t, imgs) })
		})
	}
}

// computeConfiguration is the part of an Installation the routing tests read: the Compute
// driver's gatewayRouting and network.
type computeConfiguration struct {
	GatewayRouting map[string]any `json:"gatewayRouting"`
	Network        map[string]any `json:"network"`
}

// installationCompute reads the Compute driver's configuration of the Installation at path.
func installationCompute(t *testing.T, path string) computeConfiguration {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var inst struct {
		Drivers struct {
			Compute struct {
				Configuration computeConfiguration `json:"configuration"`
			} `json:"compute"`
		} `json:"drivers"`
	}
	if err := yaml.Unmarshal(data, &inst); err != nil {
		t.Fatal(err)
	}
	return inst.Drivers.Compute.Configuration
}

// playEnvoyGateway plays Envoy Gateway's controller for the GatewayClass up creates: once the
// envoy-gateway Deployment of the environment in stateDir reports a ready replica, it sets the
// class's Accepted condition, as the controller does, through the status subresource; it
// returns when it did (nil), or with ctx's end before it could.
func playEnvoyGateway(ctx context.Context, t *testing.T, stateDir string) error {
	st, err := state.Read(stateDir)
	if err != nil {
		return err
	}
	kc, dyn, _ := kubeClientOf(t, st.Cluster)
	classes := dyn.Resource(schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "gatewayclasses"})
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("the GatewayClass was never accepted: %w", ctx.Err())
		case <-tick.C:
		}
		dep, err := kc.AppsV1().Deployments("envoy-gateway-system").Get(ctx, "envoy-gateway", metav1.GetOptions{})
		if err != nil || dep.Status.ReadyReplicas < 1 {
			continue
		}
		gc, err := classes.Get(ctx, "eg", metav1.GetOptions{})
		if err != nil {
			continue
		}
		if name, _, _ := unstructured.NestedString(gc.Object, "spec", "controllerName"); name != "gateway.envoyproxy.io/gatewayclass-controller" {
			return fmt.Errorf("GatewayClass eg names controller %q", name)
		}
		cond := map[string]any{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "Valid GatewayClass",
			"observedGeneration": gc.GetGeneration(), "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}
		if err := unstructured.SetNestedSlice(gc.Object, []any{cond}, "status", "conditions"); err != nil {
			return err
		}
		if _, err := classes.UpdateStatus(ctx, gc, metav1.UpdateOptions{}); err != nil {
			continue
		}
		return nil
	}
}

// routingAllEnginesEnv runs the routing controllers' bed test on the classic-store Docker and
// Podman beds too; by default it runs on the current Docker (containerd store) only.
const routingAllEnginesEnv = "OCC_TEST_ROUTING_ALL_ENGINES"

// testRoutingOnEveryEngine is testRoutingControllers on another engine flavour, when asked.
func testRoutingOnEveryEngine(t *testing.T, b *k3dBed) {
	if os.Getenv(routingAllEnginesEnv) == "" {
		t.Skipf("the routing images move like the OpenShell images, which this engine's own tests cover; the Docker (containerd store) bed runs the routing test; set %s=1 to run it here too", routingAllEnginesEnv)
	}
	testRoutingControllers(t, b, false)
}

// plainUpTook runs up without routing pins and down again, and returns how long the up took:
// no routing step runs, and the summary says why none is installed.
func plainUpTook(t *testing.T, b *k3dBed) time.Duration {
	t.Helper()
	ctx := context.Background()
	b.forgetProducts(t)
	plain := b.options(t)
	plainSteps := &recordedProgress{}
	plain.Progress = plainSteps.sink
	start := time.Now()
	plainSum, err := occdev.Up(ctx, plain)
	if err != nil {
		t.Fatalf("up without routing pins: %v\nlog:\n%s", err, plain.Log)
	}
	plainTook := time.Since(start)
	if !strings.HasPrefix(plainSum.Routing, "none: ") || slices.ContainsFunc(plainSteps.lines, func(l string) bool { return strings.Contains(strings.ToLower(l), "routing") }) {
		t.Errorf("up without routing pins: summary %q, steps:\n%s", plainSum.Routing, strings.Join(plainSteps.lines, "\n"))
	}
	if _, err := occdev.Down(ctx, occdev.DownOptions{StateDir: plain.StateDir, Log: plain.Log}); err != nil {
		t.Fatalf("down: %v", err)
	}
	return plainTook
}
