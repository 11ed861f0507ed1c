package composeprofile

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/openclaw/occ/internal/fsutil"
	"github.com/openclaw/occ/internal/occdev/controlplane/compose"
	"github.com/openclaw/occ/internal/occdev/controlplane/kubernetes"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/occdev/profile"
	"github.com/openclaw/occ/internal/occdev/step"
	"github.com/openclaw/occ/internal/progress"
)

// RouteNamespace is the namespace of the private Agent Gateway route the Compose profile sets
// up, as OCE's own Compose launcher names it: no OCE release runs in the cluster, so the route's
// Gateway has a namespace of its own.
const RouteNamespace = "oce-system"

// routeStep names the route's step.
const routeStep = "Set up the private Agent Gateway route"

// routeResult is the route as the Installation and the summary name it.
type routeResult struct {
	// node is the node's name, the listener's hostname; port the Envoy Service's NodePort.
	node string
	port int
	// nodeCIDR is the node's /32 on the development network; podCIDRs the node's Pod ranges.
	nodeCIDR string
	podCIDRs []string
	// proxies are the Envoy proxy Pods' /32 addresses, which Agent Gateways trust.
	proxies []string
}

// routes reports whether this `up` sets up the route: the platform installs the routing
// controllers, and the control plane runs beside the cluster (a checkout was found).
func (c Planned) routes() bool { return c.in.Routing && c.Compose != nil }

// Route describes the route for the plan.
func (c Planned) Route() string {
	if !c.routes() {
		return ""
	}
	return fmt.Sprintf("Gateway %s/%s, its listener named after the node and published on a NodePort, for the controller and worker-kubernetes (key and CA in the state directory, mounted read-only)",
		RouteNamespace, platform.RoutingGatewayName)
}

// BeforeInstallation sets up the route, whose node port and proxies the Installation names.
func (c Planned) BeforeInstallation() []profile.Step {
	if !c.routes() {
		return nil
	}
	return []profile.Step{{Name: routeStep, Describe: c.describeRoute, Run: c.setUpRoute}}
}

// The placeholders of the route's plan-time render: the node's name and address are known only
// once the cluster exists (a documentation address, RFC 5737).
const (
	routePlaceholderNode = "k3d-node-server-0"
	routePlaceholderCIDR = "192.0.2.1/32"
)

func (c Planned) describeRoute(v profile.View) step.Description {
	r := platform.Route{Namespace: RouteNamespace}
	objs := make([]runtime.Object, len(c.routePreview))
	for i, o := range c.routePreview {
		objs[i] = o
	}
	items := []step.Item{
		step.Object{Kind: "Namespace", Name: RouteNamespace},
		step.FileAt(filepath.Join(v.StateDir, compose.GatewayKeyName), 0o600, "O_EXCL; the route's API key, 48 hex from crypto/rand, kept when this state has one, never printed"),
		step.Object{Kind: "Secret", Namespace: RouteNamespace, Name: kubernetes.GatewayKeySecret, Note: "key " + kubernetes.GatewayKeySecretKey + ": that key, which the route's SecurityPolicy checks"},
	}
	for _, o := range kubeobj.Describe(objs, map[string]string{
		"Certificate " + r.Certificate():            "waited for Ready",
		"Gateway " + platform.RoutingGatewayName:    "listener named after the node; waited for Programmed, then its Envoy proxies Ready in the node's Pod range",
		"EnvoyProxy " + platform.RoutingGatewayName: "Envoy Service " + platform.RoutingEnvoyNamespace + "/" + r.Service() + " a NodePort, whose port the Installation names",
	}) {
		items = append(items, o)
	}
	items = append(items, step.FileAt(filepath.Join(v.StateDir, compose.GatewayCAName), 0o600, "the route's CA certificate, tls.crt of Secret "+r.RootSecret()+", certificates only"))
	d := step.Describe(items...)
	d.Note = fmt.Sprintf("the route's objects are the checkout's %s/%s alone (release %s in %s; the data plane admits the node's address on the development network), waited for up to %s; "+
		"the two files are then handed to the user the controller and worker-kubernetes run as, by a throwaway root container of the controller image with only CAP_CHOWN and no network",
		kubernetes.ChartPath, kubernetes.RouteTemplate, kubernetes.ReleaseName, RouteNamespace, v.StartupTimeout)
	return d
}

// setUpRoute creates the route's namespace, key and objects, waits until its proxies serve, and
// leaves the key and the CA certificate in the state directory, readable by the services.
func (c Planned) setUpRoute(ctx context.Context, env profile.Env, _ progress.Reporter) error {
	conn, st := env.Conn(), env.State()
	if err := platform.EnsureNamespace(ctx, conn, RouteNamespace); err != nil {
		return err
	}
	keyPath := st.File(compose.GatewayKeyName)
	key, err := ensureGatewayKey(keyPath)
	if err != nil {
		return err
	}
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: kubernetes.GatewayKeySecret, Namespace: RouteNamespace},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{kubernetes.GatewayKeySecretKey: key},
	}
	if _, err := conn.Ensure(ctx, secret, kubeobj.Converge); err != nil {
		return err
	}
	nodes, err := conn.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list the cluster's nodes: %w", err)
	}
	if len(nodes.Items) != 1 {
		return fmt.Errorf("the development cluster has %d nodes, but the route is published on its one server node; use the k3d cluster occ creates", len(nodes.Items))
	}
	node := nodes.Items[0].Name
	podCIDRs, err := platform.NodePodCIDRs(nodes.Items)
	if err != nil {
		return err
	}
	nodeAddr, err := c.nodeAddress(ctx, env, node)
	if err != nil {
		return err
	}
	nodeCIDR := netip.PrefixFrom(nodeAddr, 32).String()
	proxies, err := c.applyRoute(ctx, env, node, []string{nodeCIDR}, podCIDRs)
	if err != nil {
		return err
	}
	r := platform.Route{Namespace: RouteNamespace}
	port, err := platform.RouteNodePort(ctx, conn, r)
	if err != nil {
		return err
	}
	ca, err := platform.RouteCA(ctx, conn, r)
	if err != nil {
		return err
	}
	caPath := st.File(compose.GatewayCAName)
	if err := fsutil.WriteFileAtomic(caPath, ca, 0o600); err != nil {
		return fmt.Errorf("write the route's CA certificate %s: %w", caPath, err)
	}
	if err := c.shareRouteFiles(ctx, env, keyPath, caPath); err != nil {
		return err
	}
	c.run.route = &routeResult{node: node, nodeCIDR: nodeCIDR, podCIDRs: podCIDRs, port: port, proxies: proxies}
	return nil
}

// applyRoute applies the route's objects, admitting remote beside the cluster, and waits until
// its proxies serve in podCIDRs; it returns their /32 addresses.
func (c Planned) applyRoute(ctx context.Context, env profile.Env, node string, remote, podCIDRs []string) ([]string, error) {
	objs, err := c.routeObjects(node, remote)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if _, err := env.Conn().Ensure(ctx, o, kubeobj.Converge); err != nil {
			return nil, err
		}
	}
	return platform.WaitRoute(ctx, env.Conn(), platform.Route{Namespace: RouteNamespace}, podCIDRs, c.in.StartupTimeout)
}

// admitStep names the step that admits the services to the route.
const admitStep = "Admit the controller and worker-kubernetes to the private route"

func (c Planned) describeAdmit(profile.View) step.Description {
	return step.Description{Creates: []string{fmt.Sprintf("the route's objects again, the data-plane NetworkPolicy in %s admitting the /32 addresses of the controller's and worker-kubernetes's containers on the development network beside the node's", platform.RoutingEnvoyNamespace)},
		Note: "then waits for the route again; the Envoy proxies' addresses must be those the Installation trusts"}
}

// admitServices admits the controller's and worker-kubernetes's own addresses to the route once
// their containers exist (their addresses are known only then), and checks the proxies kept the
// addresses the Installation, already read by the services, trusts.
func (c Planned) admitServices(ctx context.Context, env profile.Env, _ progress.Reporter) error {
	rt := c.run.route
	remote := []string{rt.nodeCIDR}
	for _, name := range compose.APIServices {
		a, err := c.run.stack.ServiceAddress(ctx, name, c.Compose.Model.Network.Name)
		if err != nil {
			return err
		}
		remote = append(remote, netip.PrefixFrom(a, 32).String())
	}
	proxies, err := c.applyRoute(ctx, env, rt.node, remote, rt.podCIDRs)
	if err != nil {
		return err
	}
	if !slices.Equal(proxies, rt.proxies) {
		return fmt.Errorf("Envoy proxy Pod addresses changed while configuring private routing (%s, then %s): the Installation trusts the first; run occ dev down and up again",
			strings.Join(rt.proxies, ", "), strings.Join(proxies, ", "))
	}
	return nil
}

// routeObjects renders the route of this plan's checkout and controller image.
func (c Planned) routeObjects(node string, remote []string) ([]*unstructured.Unstructured, error) {
	m := c.Compose.Model
	return renderRoute(c.Compose.Checkout, m.Project.Services[compose.ServiceController].Image, m.APIURL, node, remote)
}

// renderRoute renders the checkout chart's route template with the values the Kubernetes-only
// profile installs the chart with (placeholders where they name what only that profile runs:
// the controller image, the API's port in apiURL) and the route beside the cluster: the node's
// name as the listener's hostname, admitted the remote addresses. `up` and `reload` render it
// alike.
func renderRoute(checkout, controllerImage, apiURL, node string, remote []string) ([]*unstructured.Unstructured, error) {
	ch, err := kubernetes.LoadChart(checkout)
	if err != nil {
		return nil, err
	}
	port := 3000
	if u, err := url.Parse(apiURL); err == nil {
		if p, err := strconv.Atoi(u.Port()); err == nil {
			port = p
		}
	}
	in, err := kubernetes.PlaceholderValuesInput(RouteNamespace, controllerImage, port)
	if err != nil {
		return nil, err
	}
	in.Routing = true
	values, err := kubernetes.BuildValues(in)
	if err != nil {
		return nil, err
	}
	if values, err = values.WithRouteBeside(kubernetes.RouteBeside{Hostname: node, RemoteCIDRs: remote}); err != nil {
		return nil, err
	}
	return kubernetes.RenderRoute(ch, RouteNamespace, values)
}

// nodeAddress is the node container's IPv4 address on the development network, where the
// controller and worker-kubernetes reach it.
func (c Planned) nodeAddress(ctx context.Context, env profile.Env, node string) (netip.Addr, error) {
	return nodeAddressOn(ctx, env.Engine().Verbs(), node, c.Compose.Model.Network.Name)
}

// nodeAddressOn is the node container's IPv4 address on network.
func nodeAddressOn(ctx context.Context, eng engine.Engine, node, network string) (netip.Addr, error) {
	info, err := eng.Inspect(ctx, engine.Containers, node)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("inspect the node container %s: %w", node, err)
	}
	if ip, on := info.Addresses[network]; on {
		if a, err := netip.ParseAddr(ip); err == nil && a.Is4() {
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("the node container %s has no IPv4 address on the development network %s, which the route admits the services from", node, network)
}

// gatewayKeyForm is the form of the key occ writes: 24 random bytes in lowercase hex.
var gatewayKeyForm = regexp.MustCompile(`^[0-9a-f]{48}$`)

// ensureGatewayKey returns the route's API key at path, writing a new one (O_EXCL, 0600) when
// this state has none. The key is never printed: it goes only into the file and the Secret.
func ensureGatewayKey(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if !gatewayKeyForm.Match(data) {
			return nil, fmt.Errorf("%s is not a key in the form occ writes (48 lowercase hex): it was edited; run occ dev down and up again", path)
		}
		return data, nil
	case errors.Is(err, fs.ErrPermission):
		return nil, fmt.Errorf("read the route's API key %s: %w; it belongs to the services' user now: run occ dev down and up again", path, err)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("read the route's API key %s: %w", path, err)
	}
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("generate the route's API key: %w", err)
	}
	key := []byte(hex.EncodeToString(raw))
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("write the route's API key %s: %w", path, err)
	}
	_, werr := f.Write(key)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		_ = os.Remove(path)
		return nil, fmt.Errorf("write the route's API key %s: %w", path, werr)
	}
	return key, nil
}

// routeSummary is the route as the summary names it.
func (c Planned) routeSummary(stateDir string) string {
	r := c.run.route
	if r == nil {
		return ""
	}
	return fmt.Sprintf("https://%s:%d, Gateway %s/%s; key %s, CA %s", r.node, r.port, RouteNamespace, platform.RoutingGatewayName,
		filepath.Join(stateDir, compose.GatewayKeyName), filepath.Join(stateDir, compose.GatewayCAName))
}
