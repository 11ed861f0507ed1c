package composeprofile

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/yaml"

	"github.com/openclaw/occ/internal/occdev/controlplane/compose"
	"github.com/openclaw/occ/internal/occdev/controlplane/kubernetes"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/occdev/profile"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/progress"
)

// readmitStep names the reload's step that admits recreated services to the route.
const readmitStep = "Admit the recreated controller and worker-kubernetes to the private route"

// hasRoute reports whether the recorded environment set up the Compose profile's route: its
// key Secret in RouteNamespace is recorded.
func hasRoute(st state.State) bool {
	return slices.ContainsFunc(st.Objects, func(o state.Object) bool {
		return o.Type == kubeobj.TypeObject && o.Kind == "Secret" && o.Namespace == RouteNamespace && o.Name == kubernetes.GatewayKeySecret
	})
}

// readmitServices admits the controller's and worker-kubernetes's new containers to the route
// when the reload recreated them: a recreated container may have another address on the
// development network, which the route's data plane would refuse. The route is rendered again
// from the recorded checkout as `up` rendered it, with the node's and the services' current /32s,
// and the data plane's NetworkPolicy, the one object whose content the addresses change, takes
// the rendered spec; the route is waited for, and its proxies must still be those the
// Installation trusts.
func readmitServices(ctx context.Context, env profile.ReloadEnv, rep progress.Reporter) error {
	st := env.Recorded()
	rolled := env.Rolled()
	if !slices.ContainsFunc(compose.APIServices, func(s string) bool { return slices.Contains(rolled, s) }) {
		rep.Note("the controller and worker-kubernetes kept their containers, and the route admits them")
		return nil
	}
	cp := st.ControlPlane
	network, node := st.Cluster.Network, st.Cluster.NodeAddress
	nodeAddr, err := nodeAddressOn(ctx, env.Engine().Verbs(), node, network)
	if err != nil {
		return err
	}
	remote := []string{netip.PrefixFrom(nodeAddr, 32).String()}
	stack := recordedStack(cp.Compose, env.Engine())
	for _, name := range compose.APIServices {
		a, err := stack.ServiceAddress(ctx, name, network)
		if err != nil {
			return err
		}
		remote = append(remote, netip.PrefixFrom(a, 32).String())
	}
	project, err := compose.LoadSnapshot(ctx, compose.RecordedSnapshot(*cp.Compose))
	if err != nil {
		return err
	}
	objs, err := renderRoute(cp.Compose.Checkout, project.Services[compose.ServiceController].Image, cp.APIURL, node, remote)
	if err != nil {
		return err
	}
	conn := env.Conn()
	if err := patchDataPlane(ctx, conn, st, objs); err != nil {
		return err
	}
	nodes, err := conn.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list the cluster's nodes: %w", err)
	}
	podCIDRs, err := platform.NodePodCIDRs(nodes.Items)
	if err != nil {
		return err
	}
	proxies, err := platform.WaitRoute(ctx, conn, platform.Route{Namespace: RouteNamespace}, podCIDRs, env.StartupTimeout())
	if err != nil {
		return err
	}
	trusted, err := trustedProxies(st.InstallationPath)
	if err != nil {
		return err
	}
	if !slices.Equal(proxies, trusted) {
		return fmt.Errorf("Envoy proxy Pod addresses changed while configuring private routing (the Installation trusts %s, the proxies run at %s): run occ dev down and up again",
			strings.Join(trusted, ", "), strings.Join(proxies, ", "))
	}
	rep.Note("admitted " + strings.Join(remote[1:], ", "))
	return nil
}

// trustedProxies are the proxy addresses the Installation at path trusts, sorted.
func trustedProxies(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the Installation for the route's trusted proxies: %w", err)
	}
	var in struct {
		Drivers struct {
			Compute struct {
				Configuration struct {
					Network struct {
						GatewayTrustedProxyCidrs []string `json:"gatewayTrustedProxyCidrs"`
					} `json:"network"`
				} `json:"configuration"`
			} `json:"compute"`
		} `json:"drivers"`
	}
	if err := yaml.Unmarshal(data, &in); err != nil {
		return nil, fmt.Errorf("read the Installation %s for the route's trusted proxies: %w", path, err)
	}
	out := slices.Clone(in.Drivers.Compute.Configuration.Network.GatewayTrustedProxyCidrs)
	slices.Sort(out)
	return out, nil
}

// reloadFieldManager is the field manager of the patch reload makes.
const reloadFieldManager = "occ-dev-reload"

// patchDataPlane gives the route's recorded data-plane NetworkPolicy the spec of its rendering
// in objs, only when the live policy is still the recorded one (its UID).
func patchDataPlane(ctx context.Context, conn *kubeobj.Conn, st state.State, objs []*unstructured.Unstructured) error {
	var rendered *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "NetworkPolicy" && o.GetNamespace() == platform.RoutingEnvoyNamespace {
			rendered = o
		}
	}
	if rendered == nil {
		return fmt.Errorf("the checkout's %s renders no NetworkPolicy in %s for the route's data plane: the chart changed since occ dev up; run occ dev down and up again", kubernetes.RouteTemplate, platform.RoutingEnvoyNamespace)
	}
	ns, name := rendered.GetNamespace(), rendered.GetName()
	i := slices.IndexFunc(st.Objects, func(o state.Object) bool {
		return o.Type == kubeobj.TypeObject && o.Kind == "NetworkPolicy" && o.Namespace == ns && o.Name == name
	})
	if i < 0 {
		return fmt.Errorf("NetworkPolicy %s/%s of the route's data plane is not recorded: the chart changed since occ dev up; run occ dev down and up again", ns, name)
	}
	live, err := conn.Kube.NetworkingV1().NetworkPolicies(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read the route's NetworkPolicy %s/%s: %w", ns, name, err)
	}
	if uid := st.Objects[i].UID; uid != "" && string(live.UID) != uid {
		return fmt.Errorf("NetworkPolicy %s/%s is not the one occ dev up created (UID %s, recorded %s): occ changes only what it recorded; run occ dev down and up again", ns, name, live.UID, uid)
	}
	patch, err := json.Marshal(map[string]any{"spec": rendered.Object["spec"]})
	if err != nil {
		return err
	}
	if _, err := conn.Kube.NetworkingV1().NetworkPolicies(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: reloadFieldManager}); err != nil {
		return fmt.Errorf("admit the services in NetworkPolicy %s/%s: %w", ns, name, err)
	}
	return nil
}
