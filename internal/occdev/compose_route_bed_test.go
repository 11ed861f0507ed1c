package occdev_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/controlplane/compose"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/occdev/reload"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/syncbuf"
)

// A developer with an OCE checkout and pins that record the routing controllers runs the
// default Compose profile: `up` sets up the private Agent Gateway route beside the cluster
// (namespace oce-system, its API key in the state and a Secret, the chart's route template
// alone), waits until it serves, and hands its key and CA to the controller and
// worker-kubernetes, which run as the image's non-root user and read them through read-only
// mounts; the Installation names the node, the NodePort and the proxies' own addresses. The
// key is in its file and the Secret and nowhere else; `down` leaves nothing.
//
// No container runs in the bed's cluster: the test plays what cert-manager and Envoy Gateway
// do for the route (the GatewayClass accepted, the Certificates issued with a real certificate,
// the Gateway programmed, the Envoy NodePort Service and a Ready proxy Pod in the node's Pod
// range).
func TestComposeRoute(t *testing.T) {
	startBuild()
	b := newComposeBed(t)
	testComposeRoute(t, b, func(t *testing.T) *composeRun { return b.run(t) }, true)
}

// The same on Podman, with the controller and Agent runtime images selected (Podman's builder
// cannot build them): the route's files reach the services' user through Podman as well.
func TestPodmanComposeRoute(t *testing.T) {
	startBuild()
	b := newPodmanComposeBed(t)
	testComposeRoute(t, b.composeBed, func(t *testing.T) *composeRun { return b.run(t) }, false)
}

// testComposeRoute is the route's scenario on b, each `up` prepared by run; failures adds the
// failure after each route step.
func testComposeRoute(t *testing.T, b *composeBed, run func(t *testing.T) *composeRun, failures bool) {
	ctx := context.Background()
	pinFile, imgs := b.routingPinFile(t)
	b.forgetProducts(t)
	b.forgetRouting(t, imgs)
	r := run(t)
	r.opts.PinFile = pinFile
	downAtEnd(t, r.opts.StateDir)

	stopPlaying := playRouting(t, r, imgs, "")
	steps := &recordedProgress{}
	r.opts.Progress = steps.sink
	log := r.opts.Log.(*syncbuf.Buffer)
	sum, err := occdev.Up(ctx, r.opts)
	if err != nil {
		t.Fatalf("up: %v\nlog:\n%s", err, log)
	}
	ca, err := stopPlaying()
	if err != nil {
		t.Errorf("playing the routing controllers: %v", err)
	}
	for _, name := range []string{"Set up the private Agent Gateway route", "Admit the controller and worker-kubernetes to the private route"} {
		if !slices.ContainsFunc(steps.lines, func(l string) bool { return strings.HasPrefix(l, name) && strings.HasSuffix(l, " ok") }) {
			t.Errorf("step %q did not end ok:\n%s", name, strings.Join(steps.lines, "\n"))
		}
	}

	dir := r.opts.StateDir
	node := "k3d-" + r.opts.K3d().ClusterName + "-server-0"
	st := mustState(t, dir)
	kc, _, _ := kubeClientOf(t, st.Cluster)
	route := platform.Route{Namespace: "oce-system"}
	svc, err := kc.CoreV1().Services(platform.RoutingEnvoyNamespace).Get(ctx, route.Service(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodePort := svc.Spec.Ports[0].NodePort

	// The files: 0600, the key 48 hex, the CA the root's certificate and no key; both owned by
	// the services' user (the stand-in image's node, 1000:1000).
	keyPath, caPath := filepath.Join(dir, "gateway-api-key"), filepath.Join(dir, "gateway-ca.crt")
	key, err := os.ReadFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	gotCA, err := os.ReadFile(caPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(key) != 48 || strings.Trim(string(key), "0123456789abcdef") != "" {
		t.Errorf("the key file holds %d bytes, not 48 lowercase hex", len(key))
	}
	if !bytes.Equal(gotCA, ca) || bytes.Contains(gotCA, []byte("PRIVATE KEY")) {
		t.Errorf("the CA file is not the root's certificate alone:\n%s", gotCA)
	}
	for _, p := range []string{keyPath, caPath} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		sys := fi.Sys().(*syscall.Stat_t)
		if fi.Mode().Perm() != 0o600 || sys.Uid != 1000 || sys.Gid != 1000 {
			t.Errorf("%s: mode %v owner %d:%d, want 0600 1000:1000", p, fi.Mode().Perm(), sys.Uid, sys.Gid)
		}
	}
	// The Secret holds the same key; nothing else does (the log, the state, the summary).
	sec, err := kc.CoreV1().Secrets("oce-system").Get(ctx, "occ-private-gateway-key", metav1.GetOptions{})
	if err != nil || !bytes.Equal(sec.Data["occ"], key) {
		t.Errorf("Secret oce-system/occ-private-gateway-key: %v (holds the file's key: %v)", err, err == nil && bytes.Equal(sec.Data["occ"], key))
	}
	stateData, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	sumData, _ := json.Marshal(sum)
	for what, data := range map[string][]byte{"the log": []byte(log.String()), "the state": stateData, "the summary": sumData, "the steps": []byte(strings.Join(steps.lines, "\n"))} {
		if bytes.Contains(data, key) {
			t.Errorf("%s holds the route's key", what)
		}
	}
	for _, want := range []string{"Namespace//oce-system", "Secret/oce-system/occ-private-gateway-key", "Gateway/oce-system/" + platform.RoutingGatewayName} {
		if !slices.ContainsFunc(st.Objects, func(o state.Object) bool { return strings.HasSuffix(o.Kind+"/"+o.Namespace+"/"+o.Name, want) }) {
			t.Errorf("the state records no %s: %v", want, st.Objects)
		}
	}

	// The route's data plane admits the node and the two services by their own addresses on
	// the development network, and nothing wider.
	policy := "openclaw-enterprise-" + strings.TrimPrefix(route.Service(), "occ-gateway-") + "-envoy-dataplane"
	checkAdmitted := func(when string) {
		t.Helper()
		var admitted []string
		for _, name := range []string{node, serviceContainer(t, b, r.settings.Project, "controller").ID, serviceContainer(t, b, r.settings.Project, "worker-kubernetes").ID} {
			info, err := b.engine.API.ContainerInspect(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			admitted = append(admitted, info.NetworkSettings.Networks[r.network()].IPAddress+"/32")
		}
		slices.Sort(admitted)
		pol, err := kc.NetworkingV1().NetworkPolicies(platform.RoutingEnvoyNamespace).Get(ctx, policy, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var blocks []string
		for _, peer := range pol.Spec.Ingress[0].From {
			if peer.IPBlock != nil {
				blocks = append(blocks, peer.IPBlock.CIDR)
			}
		}
		if strings.Join(blocks, ",") != strings.Join(admitted, ",") {
			t.Errorf("%s the data plane admits %v beside the cluster, want the node and the services %v", when, blocks, admitted)
		}
	}
	checkAdmitted("after up")

	// The controller and worker-kubernetes: the variables, the read-only mounts, and the files
	// readable to the user they run as.
	for _, name := range []string{"controller", "worker-kubernetes"} {
		c := serviceContainer(t, b, r.settings.Project, name)
		for _, e := range []string{"OCC_GATEWAY_API_KEY_PATH=/run/openclaw-development/gateway-api-key", "NODE_EXTRA_CA_CERTS=/run/openclaw-development/gateway-ca.crt"} {
			if !slices.Contains(c.Config.Env, e) {
				t.Errorf("%s lacks %s", name, e)
			}
		}
		for _, f := range []string{"gateway-api-key", "gateway-ca.crt"} {
			if !slices.ContainsFunc(c.Mounts, func(m container.MountPoint) bool {
				return m.Destination == "/run/openclaw-development/"+f && m.Source == filepath.Join(dir, f) && !m.RW
			}) {
				t.Errorf("%s does not mount %s read-only: %+v", name, f, c.Mounts)
			}
		}
		res, err := b.engine.Verbs().Exec(ctx, c.ID, engine.ExecInput{}, "cat", "/run/openclaw-development/gateway-api-key")
		if err != nil || res.ExitCode != 0 || res.Stdout != string(key) {
			t.Errorf("%s cannot read the key as its own user: %v exit %d %q", name, err, res.ExitCode, res.Stderr)
		}
	}

	// The Installation: the route beside the cluster.
	c := installationCompute(t, sum.Installation)
	want := map[string]any{"gatewayName": platform.RoutingGatewayName, "gatewayNamespace": "oce-system", "envoyNamespace": "envoy-gateway-system", "hostname": node, "endpointPort": float64(nodePort)}
	for k, v := range want {
		if c.GatewayRouting[k] != v {
			t.Errorf("Installation gatewayRouting.%s = %v, want %v", k, c.GatewayRouting[k], v)
		}
	}
	if got, _ := c.Network["gatewayTrustedProxyCidrs"].([]any); len(got) != 1 || got[0] != proxyIP(t, kc, node, route)+"/32" {
		t.Errorf("Installation gatewayTrustedProxyCidrs %v, want the proxy's own address", c.Network["gatewayTrustedProxyCidrs"])
	}
	if !strings.Contains(sum.Routing, "(route https://"+node+":") || sum.OCE == nil || !strings.HasPrefix(sum.OCE.Route, "https://"+node+":") {
		t.Errorf("summary routing %q, route %v", sum.Routing, sum.OCE)
	}

	if failures {
		// A reload that recreates the controller and worker-kubernetes admits their containers
		// again, wherever they now are on the development network. The data plane is first
		// made to admit two stale addresses, as after containers that moved.
		pol, err := kc.NetworkingV1().NetworkPolicies(platform.RoutingEnvoyNamespace).Get(ctx, policy, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		info, err := b.engine.API.ContainerInspect(ctx, node)
		if err != nil {
			t.Fatal(err)
		}
		nodeCIDR := info.NetworkSettings.Networks[r.network()].IPAddress + "/32"
		var from []networkingv1.NetworkPolicyPeer
		for _, peer := range pol.Spec.Ingress[0].From {
			if peer.IPBlock == nil || peer.IPBlock.CIDR == nodeCIDR {
				from = append(from, peer)
			}
		}
		for _, stale := range []string{"192.0.2.7/32", "192.0.2.8/32"} {
			from = append(from, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: stale}})
		}
		pol.Spec.Ingress[0].From = from
		if _, err := kc.NetworkingV1().NetworkPolicies(platform.RoutingEnvoyNamespace).Update(ctx, pol, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		editSource(t, filepath.Join(r.checkout, serverScript), "an edit under the route")
		reloadSteps := &recordedProgress{}
		res, err := occdev.Reload(ctx, occdev.ReloadOptions{Options: reload.Options{StateDir: dir, Progress: reloadSteps.sink}})
		if err != nil {
			t.Fatalf("reload: %v", err)
		}
		if !slices.Equal(res.Rolled, compose.APIServices) {
			t.Errorf("the reload recreated %q, want %q", res.Rolled, compose.APIServices)
		}
		if !slices.ContainsFunc(reloadSteps.lines, func(l string) bool {
			return strings.HasPrefix(l, "Admit the recreated controller and worker-kubernetes to the private route") && strings.HasSuffix(l, " ok")
		}) {
			t.Errorf("the reload did not admit the services:\n%s", strings.Join(reloadSteps.lines, "\n"))
		}
		checkAdmitted("after a reload that recreated the services")
	}

	if _, err := occdev.Down(ctx, occdev.DownOptions{StateDir: dir, Log: r.opts.Log}); err != nil {
		t.Fatalf("down: %v", err)
	}
	if left := append(b.projectLeftovers(t, r, nil), b.routingLeft(t, imgs)...); len(left) > 0 {
		t.Errorf("left after down: %v", left)
	}
	if !stateGone(dir) {
		t.Errorf("down kept the state directory %s", dir)
	}

	// A failure right after each new step rolls back to nothing: the route's objects go with
	// the cluster, its files (the services' user's by then) with the state directory.
	if !failures {
		return
	}
	for _, step := range []string{"Set up the private Agent Gateway route", "Admit the controller and worker-kubernetes to the private route"} {
		t.Run("a failure after "+step, func(t *testing.T) {
			r := run(t)
			r.opts.PinFile = pinFile
			injected := errors.New("injected after " + step)
			stop := playRouting(t, r, imgs, step, injected)
			if _, err := occdev.Up(ctx, r.opts); !errors.Is(err, injected) {
				t.Fatalf("up: %v, want the injected failure", err)
			}
			if _, err := stop(); err != nil {
				t.Errorf("playing the routing controllers: %v", err)
			}
			if !stateGone(r.opts.StateDir) {
				t.Errorf("the rollback kept the state directory %s", r.opts.StateDir)
			}
			if left := append(b.projectLeftovers(t, r, nil), b.routingLeft(t, imgs)...); len(left) > 0 {
				t.Errorf("left after the rollback: %v", left)
			}
		})
	}
	// The built `occ dev up`, run from the checkout, killed with SIGKILL once the route serves
	// (then status and down), or stopped with Ctrl-C once the services are admitted to it (up
	// rolls back by itself), leaves nothing: the route's files and objects, the project and the
	// routing images.
	bin := buildOCC(t)
	for _, c := range []struct {
		step string
		sig  syscall.Signal
	}{{"Set up the private Agent Gateway route", syscall.SIGKILL}, {"Admit the controller and worker-kubernetes to the private route", syscall.SIGINT}} {
		t.Run(c.sig.String()+" after "+c.step, func(t *testing.T) {
			b.forgetProducts(t)
			b.forgetRouting(t, imgs)
			r := run(t)
			signalComposeUpAfterRoute(t, b, bin, r, pinFile, imgs, c.step, c.sig)
		})
	}
}

// signalComposeUpAfterRoute runs the built `occ dev up` of r with the routing pins, plays the
// routing controllers once their manifests are applied, sends sig when step has finished, and
// checks that nothing is left once the run (SIGINT) or status and down (SIGKILL) are over.
func signalComposeUpAfterRoute(t *testing.T, b *composeBed, bin string, r *composeRun, pinFile string, imgs map[string]pins.Image, step string, sig syscall.Signal) {
	downAtEnd(t, r.opts.StateDir)
	tmp := t.TempDir()
	env := b.cliEnv(t, r, "TMPDIR="+tmp)
	up := exec.Command(bin, "dev", "up", "--cluster-name", r.opts.K3d().ClusterName, "--pin-file", pinFile, "--openshell-archive", b.archive,
		"--gateway-endpoint", r.opts.GatewayEndpoint, "--startup-timeout", "3m", "--", "-f", "../../build-network.yaml")
	up.Dir = filepath.Join(r.checkout, "apps", "controller")
	up.Env = env
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	played := make(chan error, 2)
	playing := false
	run := runSignalledWhen(t, up, sig, "step "+step+" finished", func(line string) bool {
		if !playing && strings.HasPrefix(line, "✓ Apply the routing controller manifests ") {
			playing = true
			go func() { played <- playEnvoyGateway(ctx, t, r.opts.StateDir) }()
			go func() {
				_, err := playRoute(ctx, t, r.opts.StateDir, imgs["envoy-gateway"].DigestReference())
				played <- err
			}()
		}
		return strings.HasPrefix(line, "✓ "+step+" ")
	}, nil)
	cancel()
	if playing {
		for range 2 {
			<-played // the route served before the signal; what the playing saw after it does not matter
		}
	}
	var vols []string
	if sig == syscall.SIGKILL {
		if !run.killedBy(syscall.SIGKILL) {
			t.Fatalf("up was not killed after %q: %v", step, run.err)
		}
		vols = b.volumesOf(t, r.opts.K3d().ClusterName)
		status := exec.Command(bin, "dev", "status")
		status.Dir, status.Env = up.Dir, env
		out, err := status.CombinedOutput()
		if err != nil && !strings.Contains(string(out), "Error: ") {
			t.Errorf("occ dev status after the kill: %v\n%s", err, out)
		}
		down := exec.Command(bin, "dev", "down")
		down.Dir, down.Env = up.Dir, env
		if out, err := down.CombinedOutput(); err != nil {
			t.Fatalf("occ dev down after the kill: %v\n%s", err, out)
		}
	} else if code := up.ProcessState.ExitCode(); code != 128+int(sig) || !strings.Contains(run.stderr, "interrupted") {
		t.Errorf("up after %s: exit %d, want %d, saying it was interrupted:\n%s", sig, code, 128+int(sig), run.stderr)
	}
	if !stateGone(r.opts.StateDir) {
		t.Errorf("state directory %s left", r.opts.StateDir)
	}
	if left := append(b.projectLeftovers(t, r, vols), b.routingLeft(t, imgs)...); len(left) > 0 {
		t.Errorf("left after %s and the cleanup: %v", sig, left)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
		t.Errorf("temporary files left in TMPDIR: %d", len(entries))
	}
}

// playRouting plays the routing controllers for r's `up` (Envoy Gateway accepting the
// GatewayClass, and the route: playRoute) from the moment their manifests are applied, and
// fails the step named fail with injected, if given. stop ends the playing and returns the CA
// the route was issued with, or why the route was not served completely.
func playRouting(t *testing.T, r *composeRun, imgs map[string]pins.Image, fail string, injected ...error) (stop func() ([]byte, error)) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	played := make(chan error, 2)
	var ca []byte
	started := false
	r.opts.Seams().AfterStep = func(name string) error {
		if name == "Apply the routing controller manifests" {
			started = true
			go func() { played <- playEnvoyGateway(ctx, t, r.opts.StateDir) }()
			go func() {
				var err error
				ca, err = playRoute(ctx, t, r.opts.StateDir, imgs["envoy-gateway"].DigestReference())
				played <- err
			}()
		}
		if name == fail {
			return injected[0]
		}
		return nil
	}
	return func() ([]byte, error) {
		cancel()
		if !started {
			return nil, errors.New("the routing controllers' manifests were never applied")
		}
		var errs []error
		for range 2 {
			if err := <-played; err != nil && !errors.Is(err, context.Canceled) {
				errs = append(errs, err)
			}
		}
		return ca, errors.Join(errs...)
	}
}

// proxyIP is the address the bed's node gave the played Envoy proxy Pod, checked to be in the
// node's Pod range.
func proxyIP(t *testing.T, kc kubernetes.Interface, node string, route platform.Route) string {
	t.Helper()
	ctx := context.Background()
	n, err := kc.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := netip.ParsePrefix(n.Spec.PodCIDR)
	if err != nil {
		t.Fatalf("node %s Pod CIDR %q: %v", node, n.Spec.PodCIDR, err)
	}
	pod, err := kc.CoreV1().Pods(platform.RoutingEnvoyNamespace).Get(ctx, "envoy-"+route.Service(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := netip.ParseAddr(pod.Status.PodIP)
	if err != nil || !p.Contains(a) {
		t.Fatalf("the proxy Pod's address %q is not in the node's Pod range %s", pod.Status.PodIP, p)
	}
	return a.String()
}

// playRoute plays cert-manager and Envoy Gateway for the Compose profile's route in the
// environment of stateDir until ctx ends: the root Certificate issued into its Secret (a real
// self-signed CA, its key beside it as cert-manager writes it), the listener's Certificate
// Ready, the Gateway Programmed, and for the EnvoyProxy the NodePort Service and one Ready proxy
// Pod of proxyImage. It returns the CA certificate it issued.
func playRoute(ctx context.Context, t *testing.T, stateDir, proxyImage string) ([]byte, error) {
	st, err := state.Read(stateDir)
	if err != nil {
		return nil, err
	}
	kc, dyn, _ := kubeClientOf(t, st.Cluster)
	route := platform.Route{Namespace: "oce-system"}
	certPEM, keyPEM := selfSignedCA(t)
	var issued, certified, programmed, proxied bool
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			if issued && certified && programmed && proxied {
				return certPEM, nil
			}
			return nil, errors.New("the route was never served completely")
		case <-tick.C:
		}
		if !issued && exists(ctx, dyn, "cert-manager.io", "certificates", route.RootSecret()) {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: route.RootSecret(), Namespace: route.Namespace}, Type: corev1.SecretTypeTLS,
				Data: map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM, "ca.crt": certPEM}}
			if _, err := kc.CoreV1().Secrets(route.Namespace).Create(ctx, s, metav1.CreateOptions{}); err == nil || apierrors.IsAlreadyExists(err) {
				issued = true
			}
		}
		if issued && !certified {
			certified = setTrue(ctx, dyn, "cert-manager.io", "certificates", route.Certificate(), "Ready")
		}
		if !programmed {
			programmed = setTrue(ctx, dyn, "gateway.networking.k8s.io", "gateways", platform.RoutingGatewayName, "Programmed")
		}
		if programmed && !proxied && exists(ctx, dyn, "gateway.envoyproxy.io", "envoyproxies", platform.RoutingGatewayName) {
			proxied = runEnvoyProxy(ctx, kc, route, proxyImage)
		}
	}
}

func exists(ctx context.Context, dyn dynamic.Interface, group, resource, name string) bool {
	gvr := schema.GroupVersionResource{Group: group, Version: versionOf(group), Resource: resource}
	_, err := dyn.Resource(gvr).Namespace("oce-system").Get(ctx, name, metav1.GetOptions{})
	return err == nil
}

func versionOf(group string) string {
	if group == "gateway.envoyproxy.io" {
		return "v1alpha1"
	}
	return "v1"
}

// setTrue sets the object's condition cond True for its generation, as its controller does; it
// reports whether it did.
func setTrue(ctx context.Context, dyn dynamic.Interface, group, resource, name, cond string) bool {
	ri := dyn.Resource(schema.GroupVersionResource{Group: group, Version: versionOf(group), Resource: resource}).Namespace("oce-system")
	u, err := ri.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	c := map[string]any{"type": cond, "status": "True", "reason": cond, "message": "played by the test", "observedGeneration": u.GetGeneration(),
		"lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}
	if err := unstructured.SetNestedSlice(u.Object, []any{c}, "status", "conditions"); err != nil {
		return false
	}
	_, err = ri.UpdateStatus(ctx, u, metav1.UpdateOptions{})
	return err == nil
}

// runEnvoyProxy creates the route's Envoy Service (NodePort, HTTPS on 443) and one proxy Pod of
// image (one the node holds), as Envoy Gateway would; the bed's node runs it as a kubelet would,
// Ready at an address of its Pod range.
func runEnvoyProxy(ctx context.Context, kc kubernetes.Interface, route platform.Route, image string) bool {
	ns := platform.RoutingEnvoyNamespace
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: route.Service(), Namespace: ns}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeNodePort, Selector: route.ProxyLabels(),
		Ports: []corev1.ServicePort{{Name: "https-443", Port: 443, TargetPort: intstr.FromInt32(10443), Protocol: corev1.ProtocolTCP}}}}
	if _, err := kc.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return false
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "envoy-" + route.Service(), Namespace: ns, Labels: route.ProxyLabels()},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "envoy", Image: image, ImagePullPolicy: corev1.PullNever}}}}
	_, err := kc.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	return err == nil || apierrors.IsAlreadyExists(err)
}

// selfSignedCA is a CA certificate and its key, PEM-encoded, as cert-manager's self-signed root.
func selfSignedCA(t *testing.T) (certPEM, keyPEM []byte) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "occ-gateway-root"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	kd, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kd})
}
