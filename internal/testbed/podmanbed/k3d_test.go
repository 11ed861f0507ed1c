package podmanbed_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	k3dclient "github.com/k3d-io/k3d/v5/pkg/client"
	k3dconfig "github.com/k3d-io/k3d/v5/pkg/config"
	configtypes "github.com/k3d-io/k3d/v5/pkg/config/types"
	"github.com/k3d-io/k3d/v5/pkg/config/v1alpha5"
	"github.com/k3d-io/k3d/v5/pkg/runtimes"
	k3d "github.com/k3d-io/k3d/v5/pkg/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openclaw/occ/internal/testbed/dockerbed"
	"github.com/openclaw/occ/internal/testbed/podmanbed"
)

// The bed's Podman networks take their subnets from this pool (scripts/testpodman's
// containers.conf), away from the Docker bed's networks.
var podmanPool = netip.MustParsePrefix("10.231.0.0/16")

// A developer on Fedora runs `occ dev up` against rootful Podman: k3d (as a library, through
// Podman's Docker-compatible API) creates its own bridge network and a privileged node from a
// digest-pinned k3s image, the API answers on the published loopback port, the node's name
// resolves on the network, images from Podman's store (named localhost/…) are imported into the
// node in both of k3d's modes with their config digest intact, and deleting the cluster leaves
// nothing of it in Podman.
func TestK3dClusterOnPodman(t *testing.T) {
	b := podmanbed.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	e := b.Engine
	name := "pbed-" + strings.ToLower(rand.Text()[:8])
	port := freePort(t)

	cl := runCluster(ctx, t, v1alpha5.SimpleConfig{
		TypeMeta:   configtypes.TypeMeta{APIVersion: "k3d.io/v1alpha5", Kind: "Simple"},
		ObjectMeta: configtypes.ObjectMeta{Name: name},
		Servers:    1,
		Image:      b.Node.Ref,
		ExposeAPI:  v1alpha5.SimpleExposureOpts{Host: "127.0.0.1", HostIP: "127.0.0.1", HostPort: strconv.Itoa(port)},
		Options: v1alpha5.SimpleConfigOptions{
			K3dOptions: v1alpha5.SimpleConfigOptionsK3d{Wait: true, Timeout: 3 * time.Minute, DisableLoadbalancer: true},
			K3sOptions: v1alpha5.SimpleConfigOptionsK3s{ExtraArgs: []v1alpha5.K3sArgWithNodeFilters{
				{Arg: "--disable=traefik,servicelb,metrics-server", NodeFilters: []string{"server:*"}},
			}},
			KubeconfigOptions: v1alpha5.SimpleConfigOptionsKubeconfig{UpdateDefaultKubeconfig: false, SwitchCurrentContext: false},
		},
	})

	// --- the node container and its network --------------------------------------------------
	serverName := "k3d-" + name + "-server-0"
	server, err := e.API.ContainerInspect(ctx, serverName)
	if err != nil {
		t.Fatal(err)
	}
	if !server.HostConfig.Privileged {
		t.Errorf("node container is not privileged")
	}
	// The node runs the pinned image. Podman reports the container's image by ID; its
	// Config.Image is the reference only when that reference is one of the image's names.
	if server.Image != b.Node.ConfigDigest || server.Config.Image != b.Node.Ref {
		t.Errorf("node container image %s (%s), want the pinned %s (%s)", server.Config.Image, server.Image, b.Node.Ref, b.Node.ConfigDigest)
	}
	nodeImage, err := e.API.ImageInspect(ctx, b.Node.Ref)
	if err != nil {
		t.Fatalf("Podman does not hold the pinned node image: %v", err)
	}
	if !slices.Contains(nodeImage.RepoDigests, b.Node.Ref) || nodeImage.ID != b.Node.ConfigDigest {
		t.Errorf("pinned node image: RepoDigests %v ID %s, want %s and %s", nodeImage.RepoDigests, nodeImage.ID, b.Node.Ref, b.Node.ConfigDigest)
	}
	netName := "k3d-" + name
	nw, err := e.API.NetworkInspect(ctx, netName, network.InspectOptions{})
	if err != nil {
		t.Fatalf("k3d's network %s: %v", netName, err)
	}
	if len(nw.IPAM.Config) != 1 {
		t.Fatalf("network %s IPAM %+v, want one subnet", netName, nw.IPAM)
	}
	subnet, err := netip.ParsePrefix(nw.IPAM.Config[0].Subnet)
	if err != nil || !podmanPool.Overlaps(subnet) || subnet.Bits() != 24 {
		t.Errorf("network %s subnet %q: want a /24 from the bed's pool %s (%v)", netName, nw.IPAM.Config[0].Subnet, podmanPool, err)
	}
	if nw.Labels["app"] != "k3d" {
		t.Errorf("network %s labels %v, want app=k3d", netName, nw.Labels)
	}
	ep, ok := server.NetworkSettings.Networks[netName]
	if !ok || ep.IPAddress == "" {
		t.Fatalf("node is not on %s: %+v", netName, server.NetworkSettings.Networks)
	}
	nodeIP := netip.MustParseAddr(ep.IPAddress)
	if !subnet.Contains(nodeIP) {
		t.Errorf("node address %s outside the network's subnet %s", nodeIP, subnet)
	}
	t.Logf("network %s: subnet %s gateway %s driver %s; node %s", netName, subnet, nw.IPAM.Config[0].Gateway, nw.Driver, nodeIP)

	// Container names on the network resolve through aardvark-dns, Podman's counterpart of
	// Docker's embedded DNS, which answers at the network's gateway under the search domain
	// dns.podman.
	res, err := e.Exec(ctx, serverName, true, "nslookup", serverName)
	if err != nil || res.ExitCode != 0 || !strings.Contains(res.Stdout, nodeIP.String()) {
		t.Errorf("nslookup %s in the node: %v exit %d %q %q", serverName, err, res.ExitCode, res.Stdout, res.Stderr)
	}
	// k3d's entrypoint scripts (DNS and mount fixes) ran before k3s.
	res, err = e.Exec(ctx, serverName, true, "sh", "-c", "cat /var/log/k3d-entrypoints_*.log; cat /etc/resolv.conf")
	if err != nil || !strings.Contains(res.Stdout, "Finished k3d entrypoint scripts") {
		t.Errorf("k3d entrypoint scripts did not finish: %v %q %q", err, res.Stdout, res.Stderr)
	}
	t.Logf("entrypoint log and resolv.conf in the node:\n%s", res.Stdout)

	// --- the API through the published port ----------------------------------------------------
	if want := fmt.Sprintf("https://127.0.0.1:%d", port); cl.rest.Host != want {
		t.Errorf("kubeconfig server = %s, want %s", cl.rest.Host, want)
	}
	node := waitNodeReady(ctx, t, cl.kube, serverName)
	if got := internalIP(node); got != nodeIP.String() {
		t.Errorf("Node InternalIP = %q, want the container's address %s", got, nodeIP)
	}

	// --- import from Podman's store -------------------------------------------------------------
	// Two images, one per k3d import mode and per way an image gets its name in Podman: one
	// loaded from a docker-save tarball tagged with a short name (as `podman build -t` or
	// `podman load` leave it: localhost/…), one pulled by its pin and then tagged through the
	// Docker-compatible API (which qualifies a short name with docker.io/, as Docker does).
	// Their roles are this test's own: Podman resolves NAME@DIGEST to any image holding the
	// digest, so images equal to the occ flow tests' product images would be found "present" by
	// those tests when the packages run side by side in one Podman, and never pulled.
	gateway, err := dockerbed.ProductImage("podmanbed-" + dockerbed.RoleGateway)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := e.EnsureImage(ctx, gateway)
	if err != nil {
		t.Fatal(err)
	}
	supervisor, err := dockerbed.ProductImage("podmanbed-" + dockerbed.RoleSupervisor)
	if err != nil {
		t.Fatal(err)
	}
	pin, err := b.Provide(ctx, supervisor)
	if err != nil {
		t.Fatal(err)
	}
	pulledID, err := e.Pull(ctx, pin.Ref)
	if err != nil {
		t.Fatal(err)
	}
	tagged := "occ-bed-import/" + name + ":" + strings.TrimPrefix(pin.Digest, "sha256:")[:12]
	if err := e.API.ImageTag(ctx, pin.Ref, tagged); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Forget("docker.io/" + tagged) })

	type importCase struct {
		short, stored, configDigest string
		mode                        k3d.ImportMode
	}
	imports := []importCase{
		{short: loaded.Tag, stored: "localhost/" + loaded.Tag, configDigest: loaded.ID, mode: k3d.ImportModeDirect},
		{short: tagged, stored: "docker.io/" + tagged, configDigest: pulledID, mode: k3d.ImportModeToolsNode},
	}
	for _, c := range imports {
		ins, err := e.API.ImageInspect(ctx, c.short)
		if err != nil {
			t.Fatalf("inspect %s by its short name: %v", c.short, err)
		}
		if !slices.Contains(ins.RepoTags, c.stored) || slices.Contains(ins.RepoTags, c.short) {
			t.Errorf("%s: Podman records RepoTags %v, want %s and not the short name", c.short, ins.RepoTags, c.stored)
		}
		// k3d matches the requested name against the store's tags literally: the short name (a
		// Docker user's spelling, which Docker itself would list) is not found on Podman.
		if err := k3dclient.ImageImportIntoClusterMulti(ctx, runtimes.Docker, []string{c.short}, cl.cluster, k3d.ImageImportOpts{Mode: c.mode}); err == nil || !strings.Contains(err.Error(), "no valid images") {
			t.Errorf("k3d import of the short name %s on Podman: err %v, want k3d's \"no valid images specified\"", c.short, err)
		}
		start := time.Now()
		importUntilPresent(ctx, t, e, serverName, cl.cluster, c.stored, c.mode)
		t.Logf("ImageImportIntoClusterMulti (%s) of %s: %s", c.mode, c.stored, time.Since(start).Round(time.Millisecond))
	}
	list, err := e.Exec(ctx, serverName, true, "ctr", "-n", "k8s.io", "images", "ls")
	if err != nil || list.ExitCode != 0 {
		t.Fatalf("ctr images ls: %v %s", err, list.Stderr)
	}
	for _, c := range imports {
		// The node's containerd keeps Podman's name (it has a registry part, so nothing is
		// prefixed), and the config digest is the engine's image ID: for the pulled image, the
		// one the pinned pull produced.
		manifest := ctrTarget(list.Stdout, c.stored)
		if manifest == "" {
			t.Fatalf("%s import: ctr -n k8s.io images ls does not list %s:\n%s", c.mode, c.stored, list.Stdout)
		}
		if got := configDigest(ctx, t, e, serverName, manifest); got != c.configDigest {
			t.Errorf("%s: config digest in the node %s != engine image ID %s", c.stored, got, c.configDigest)
		}
		t.Logf("%s (%s): node manifest %s, config %s in both", c.stored, c.mode, manifest, c.configDigest)
	}
	if pulledID != pin.ConfigDigest {
		t.Errorf("pulled %s: image ID %s, want the pinned config digest %s", pin.Ref, pulledID, pin.ConfigDigest)
	}

	// --- delete ---------------------------------------------------------------------------------
	before, err := e.ClusterObjects(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if len(before.Containers) == 0 || len(before.Networks) == 0 || len(before.Volumes) == 0 {
		t.Fatalf("expected the cluster's containers, network and volumes before delete, have %s", before)
	}
	start := time.Now()
	if err := k3dclient.ClusterDelete(ctx, runtimes.Docker, cl.cluster, k3d.ClusterDeleteOpts{}); err != nil {
		t.Fatalf("k3d ClusterDelete: %v", err)
	}
	cl.deleted = true
	t.Logf("ClusterDelete: %s", time.Since(start).Round(time.Millisecond))
	after, err := e.ClusterObjects(ctx, name, before.Volumes...)
	if err != nil {
		t.Fatal(err)
	}
	if !after.Empty() {
		t.Errorf("left after ClusterDelete: %s (had %s)", after, before)
	}
	if _, err := e.API.NetworkInspect(ctx, netName, network.InspectOptions{}); err == nil {
		t.Errorf("network %s still exists after ClusterDelete", netName)
	}
}

// The Compose profile on Podman: the project's network exists first with a pinned subnet, the
// k3d cluster joins it (k3d's external network) instead of making its own, and deleting the
// cluster leaves the project's network in place.
func TestK3dClusterJoinsAPodmanNetwork(t *testing.T) {
	b := podmanbed.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := b.Engine
	name := "pbed-" + strings.ToLower(rand.Text()[:8])
	netName := "pbed-compose-" + strings.ToLower(rand.Text()[:8])
	// A subnet of the bed's pool that Podman would not hand out next (it allocates upwards).
	subnet := "10.231." + strconv.Itoa(200+int(time.Now().UnixNano()%50)) + ".0/24"
	created, err := e.API.NetworkCreate(ctx, netName, network.CreateOptions{
		Driver: "bridge",
		IPAM:   &network.IPAM{Config: []network.IPAMConfig{{Subnet: subnet}}},
		Labels: map[string]string{"com.docker.compose.project": netName, "com.docker.compose.network": "development"},
	})
	if err != nil {
		t.Fatalf("create the project network %s (%s): %v", netName, subnet, err)
	}
	t.Cleanup(func() { _ = e.API.NetworkRemove(context.Background(), created.ID) })

	cl := runCluster(ctx, t, v1alpha5.SimpleConfig{
		TypeMeta:   configtypes.TypeMeta{APIVersion: "k3d.io/v1alpha5", Kind: "Simple"},
		ObjectMeta: configtypes.ObjectMeta{Name: name},
		Servers:    1,
		Image:      b.Node.Ref,
		Network:    netName,
		ExposeAPI:  v1alpha5.SimpleExposureOpts{Host: "127.0.0.1", HostIP: "127.0.0.1", HostPort: strconv.Itoa(freePort(t))},
		Options: v1alpha5.SimpleConfigOptions{
			K3dOptions:        v1alpha5.SimpleConfigOptionsK3d{Wait: true, Timeout: 3 * time.Minute, DisableLoadbalancer: true},
			KubeconfigOptions: v1alpha5.SimpleConfigOptionsKubeconfig{UpdateDefaultKubeconfig: false, SwitchCurrentContext: false},
		},
	})
	server, err := e.API.ContainerInspect(ctx, "k3d-"+name+"-server-0")
	if err != nil {
		t.Fatal(err)
	}
	ep, ok := server.NetworkSettings.Networks[netName]
	if !ok || !netip.MustParsePrefix(subnet).Contains(netip.MustParseAddr(ep.IPAddress)) {
		t.Fatalf("node not on the project network %s (%s): %+v", netName, subnet, server.NetworkSettings.Networks)
	}
	if server.Config.Labels["k3d.cluster.network.external"] != "true" {
		t.Errorf("k3d did not record %s as an external network: labels %v", netName, server.Config.Labels)
	}
	waitNodeReady(ctx, t, cl.kube, "k3d-"+name+"-server-0")
	if _, err := e.API.NetworkInspect(ctx, "k3d-"+name, network.InspectOptions{}); err == nil {
		t.Errorf("k3d made a network of its own beside the project's")
	}
	if err := k3dclient.ClusterDelete(ctx, runtimes.Docker, cl.cluster, k3d.ClusterDeleteOpts{}); err != nil {
		t.Fatalf("k3d ClusterDelete: %v", err)
	}
	cl.deleted = true
	if _, err := e.API.NetworkInspect(ctx, netName, network.InspectOptions{}); err != nil {
		t.Errorf("the project network %s is gone after ClusterDelete: %v", netName, err)
	}
	if after, err := e.ClusterObjects(ctx, name); err != nil || len(after.Containers) != 0 {
		t.Errorf("left after ClusterDelete: %s %v", after, err)
	}
}

// An image built or loaded into Podman without a registry part is recorded under localhost/:
// what `docker load` of a docker-save tarball tagged occ-bed/… leaves in Podman, and how a
// lookup by the short name still finds it (the engine's own short-name resolution).
func TestPodmanRecordsLocalImagesUnderLocalhost(t *testing.T) {
	e := podmanbed.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	spec, err := dockerbed.BusyboxImage()
	if err != nil {
		t.Fatal(err)
	}
	img, err := e.EnsureImage(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	ins, err := e.API.ImageInspect(ctx, img.Tag)
	if err != nil {
		t.Fatalf("inspect by the short name %s: %v", img.Tag, err)
	}
	if want := "localhost/" + img.Tag; !slices.Contains(ins.RepoTags, want) {
		t.Errorf("loaded %s: RepoTags %v, want %s", img.Tag, ins.RepoTags, want)
	}
	if ins.ID != img.ID {
		t.Errorf("loaded %s: ID %s, want the config digest %s", img.Tag, ins.ID, img.ID)
	}
	// The list API (what k3d's import searches) reports the same localhost/ name.
	list, err := e.API.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("reference", "localhost/"+img.Tag))})
	if err != nil || len(list) != 1 || !slices.Contains(list[0].RepoTags, "localhost/"+img.Tag) {
		t.Errorf("image list for localhost/%s: %v %+v", img.Tag, err, list)
	}
}

type runningCluster struct {
	cluster *k3d.Cluster
	kube    kubernetes.Interface
	rest    *rest.Config
	deleted bool
}

// runCluster creates a cluster as a provider does (transform, process, validate, ClusterRun),
// deletes it when the test ends unless the test did, and connects to it through the kubeconfig
// k3d produces.
func runCluster(ctx context.Context, t testing.TB, simple v1alpha5.SimpleConfig) *runningCluster {
	t.Helper()
	cc, err := k3dconfig.TransformSimpleToClusterConfig(ctx, runtimes.Docker, simple, "")
	if err != nil {
		t.Fatalf("k3d transform: %v", err)
	}
	if cc, err = k3dconfig.ProcessClusterConfig(*cc); err != nil {
		t.Fatalf("k3d process: %v", err)
	}
	if err := k3dconfig.ValidateClusterConfig(ctx, runtimes.Docker, *cc); err != nil {
		t.Fatalf("k3d validate: %v", err)
	}
	rc := &runningCluster{}
	t.Cleanup(func() {
		if !rc.deleted {
			_ = k3dclient.ClusterDelete(context.Background(), runtimes.Docker, &cc.Cluster, k3d.ClusterDeleteOpts{})
		}
	})
	start := time.Now()
	if err := k3dclient.ClusterRun(ctx, runtimes.Docker, cc); err != nil {
		t.Fatalf("k3d ClusterRun: %v", err)
	}
	t.Logf("ClusterRun: %s", time.Since(start).Round(time.Millisecond))
	if rc.cluster, err = k3dclient.ClusterGet(ctx, runtimes.Docker, &k3d.Cluster{Name: simple.Name}); err != nil {
		t.Fatal(err)
	}
	kc, err := k3dclient.KubeconfigGet(ctx, runtimes.Docker, rc.cluster)
	if err != nil {
		t.Fatalf("k3d KubeconfigGet: %v", err)
	}
	if rc.rest, err = clientcmd.NewDefaultClientConfig(*kc, nil).ClientConfig(); err != nil {
		t.Fatal(err)
	}
	if rc.kube, err = kubernetes.NewForConfig(rc.rest); err != nil {
		t.Fatal(err)
	}
	return rc
}

// importUntilPresent imports tag with k3d and checks that the node's containerd lists it,
// retrying twice: k3d's exec wait can report an exec finished before it ran (the Docker bed's
// README has the details), on Podman as on Docker.
func importUntilPresent(ctx context.Context, t testing.TB, e *dockerbed.Engine, node string, cluster *k3d.Cluster, tag string, mode k3d.ImportMode) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		if err := k3dclient.ImageImportIntoClusterMulti(ctx, runtimes.Docker, []string{tag}, cluster, k3d.ImageImportOpts{Mode: mode}); err != nil {
			t.Fatalf("k3d image import (%s) of %s: %v", mode, tag, err)
		}
		list, err := e.Exec(ctx, node, true, "ctr", "-n", "k8s.io", "images", "ls", "-q")
		if err != nil || list.ExitCode != 0 {
			t.Fatalf("ctr images ls: %v %s", err, list.Stderr)
		}
		if slices.Contains(strings.Fields(list.Stdout), tag) {
			return
		}
		if attempt == 3 {
			t.Fatalf("k3d reported the %s import of %s done %d times, but the node's containerd does not list it:\n%s", mode, tag, attempt, list.Stdout)
		}
		t.Logf("k3d reported the %s import of %s done, but the node does not list it; importing again", mode, tag)
	}
}

// waitNodeReady polls the API (through the published port) until the node is registered and
// Ready; the stand-in's kubelet registers it within seconds of k3s starting.
func waitNodeReady(ctx context.Context, t testing.TB, kube kubernetes.Interface, name string) *corev1.Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var lastErr error
	for {
		n, err := kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			for _, c := range n.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					return n
				}
			}
			lastErr = fmt.Errorf("conditions %+v", n.Status.Conditions)
		} else {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			t.Fatalf("Node %s not Ready through the API: %v", name, lastErr)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func internalIP(n *corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// ctrTarget returns the target (manifest) digest of image ref in `ctr images ls` output.
func ctrTarget(out, ref string) string {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == ref {
			return f[2]
		}
	}
	return ""
}

// configDigest reads a manifest from the node's containerd content store and returns its
// config digest.
func configDigest(ctx context.Context, t testing.TB, e *dockerbed.Engine, id, manifest string) string {
	t.Helper()
	r, err := e.Exec(ctx, id, true, "ctr", "-n", "k8s.io", "content", "get", manifest)
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("ctr content get %s: %v %s", manifest, err, r.Stderr)
	}
	var m struct {
		Config struct {
			Digest string `json:"digest"`
		} `json:"config"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &m); err != nil {
		t.Fatalf("manifest %s: %v: %s", manifest, err, r.Stdout)
	}
	return m.Config.Digest
}
