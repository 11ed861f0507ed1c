package k3d_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/go-connections/nat"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/cluster/k3d"
	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/engine/locate"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/progress"
)

// An engineer who has their own kubeconfig and their own k3d cluster runs `occ dev up` with the
// k3d provider, uses the cluster, and runs `occ dev down`: occ's cluster is recorded before it
// exists, reachable through occ's own kubeconfigs (one for the host, one for containers on the
// cluster network), shaped as the reference's cluster, and afterwards gone without a trace;
// the engineer's kubeconfig, home directory and cluster are exactly as before, and a cluster of
// the same name that is not occ's is refused, never touched.
func TestCreateUseDeleteLeavesOthersUntouched(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	b := startBed(t, ctx)

	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", "")
	userKubeconfig := "apiVersion: v1\nkind: Config\ncurrent-context: work\nclusters:\n- name: work\n  cluster:\n    server: https://work.example.invalid:6443\ncontexts:\n- name: work\n  context:\n    cluster: work\n    user: me\nusers:\n- name: me\n  user:\n    token: canary-user-token\n"
	if err := os.MkdirAll(filepath.Join(home, ".kube"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".kube", "config"), []byte(userKubeconfig), 0o600); err != nil {
		t.Fatal(err)
	}
	homeBefore := snapshotTree(t, home)

	// The engineer's own cluster: another name, another owner.
	otherReq := b.request(t, newRecorder(t))
	other, err := b.provider.Create(ctx, otherReq)
	if err != nil {
		t.Fatalf("create the unrelated cluster: %v", err)
	}
	otherID := k3d.Identity{Name: other.Name, Owner: otherReq.Owner, UID: other.UID}
	b.deleteAtEnd(t, otherID)
	otherBefore := containerStates(t, ctx, b, other.Name)

	rec := newRecorder(t)
	req := b.request(t, rec)
	nodePortHost, err := k3d.FreeLoopbackPort()
	if err != nil {
		t.Fatal(err)
	}
	req.Publish = []k3d.PortMapping{{HostPort: nodePortHost, NodePort: 30080}}
	containersAtFirstRecord := -1
	rec.onRecord = func(state.Object) {
		if containersAtFirstRecord < 0 {
			containersAtFirstRecord = len(containersOf(t, ctx, b.engine, req.Name))
		}
	}
	c, err := b.provider.Create(ctx, req)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	id := k3d.Identity{Name: req.Name, Owner: req.Owner, UID: c.UID}
	b.deleteAtEnd(t, id)

	// Recorded before anything existed, then with its identity.
	if containersAtFirstRecord != 0 {
		t.Errorf("the first record was made when %d containers of the cluster existed, want 0", containersAtFirstRecord)
	}
	if objs := rec.all(); len(objs) != 1 || objs[0].Type != k3d.TypeCluster || objs[0].Name != req.Name || objs[0].Labels[k3d.OwnerLabel] != req.Owner || c.UID == "" {
		t.Errorf("records = %+v, want one %s %s labelled with owner %s", objs, k3d.TypeCluster, req.Name, req.Owner)
	}

	// The kubeconfig works and reaches this cluster (the kube-system UID is the identity).
	kube := clientFor(t, c.Kubeconfig, c.Context, nil)
	ks, err := kube.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil || string(ks.UID) != c.UID {
		t.Fatalf("kube-system through the kubeconfig: %v (UID %s, want %s)", err, ks.UID, c.UID)
	}
	if c.Server != "https://127.0.0.1:"+strconv.Itoa(req.APIPort) || c.Context != "k3d-"+req.Name {
		t.Errorf("server %s context %s", c.Server, c.Context)
	}
	checkMode(t, c.Kubeconfig, 0o600)
	checkMode(t, c.ContainerKubeconfig, 0o644)
	if filepath.Dir(c.Kubeconfig) != req.StateDir || filepath.Dir(c.ContainerKubeconfig) != req.StateDir {
		t.Errorf("kubeconfigs %s, %s are not in the state directory %s", c.Kubeconfig, c.ContainerKubeconfig, req.StateDir)
	}
	// The container kubeconfig names server-0 on the Docker network, and server-0's serving
	// certificate carries that name: reach the published port while verifying as that name.
	inside, err := clientcmd.LoadFromFile(c.ContainerKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if got := inside.Clusters[inside.Contexts[c.Context].Cluster].Server; got != "https://"+c.NodeContainer+":6443" || got != c.ContainerServer {
		t.Errorf("container kubeconfig server = %s, want https://%s:6443", got, c.NodeContainer)
	}
	viaName := clientFor(t, c.ContainerKubeconfig, c.Context, func(cfg *rest.Config) {
		cfg.Host = c.Server
		cfg.TLSClientConfig.ServerName = c.NodeContainer
	})
	if _, err := viaName.Discovery().ServerVersion(); err != nil {
		t.Errorf("the API does not serve a certificate for %s: %v", c.NodeContainer, err)
	}

	// The reference's shape: one server and no load balancer, the pinned image, the API and the
	// NodePort on 127.0.0.1 of server-0, legacy iptables, kubelet image GC off, the admission
	// file mounted read-only, the owner label.
	names := containerNames(containersOf(t, ctx, b.engine, req.Name))
	if !slices.Contains(names, c.NodeContainer) || slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, "serverlb") || strings.Contains(n, "agent") }) {
		t.Errorf("cluster containers %v, want server-0 (and k3d's tools node) only", names)
	}
	server, err := b.engine.API.ContainerInspect(ctx, c.NodeContainer)
	if err != nil {
		t.Fatal(err)
	}
	if server.Config.Image != req.NodeImage.DigestReference() {
		t.Errorf("node image %s, want %s", server.Config.Image, req.NodeImage.DigestReference())
	}
	if server.Config.Labels[k3d.OwnerLabel] != req.Owner {
		t.Errorf("owner label = %q, want %q", server.Config.Labels[k3d.OwnerLabel], req.Owner)
	}
	if !slices.Contains(server.Config.Env, "IPTABLES_MODE=legacy") {
		t.Errorf("node env %v lacks IPTABLES_MODE=legacy", server.Config.Env)
	}
	for _, a := range []string{"--kubelet-arg=image-gc-high-threshold=100", "--kubelet-arg=image-gc-low-threshold=99", "--kubelet-arg=eviction-hard=imagefs.available<5%,nodefs.available<5%",
		"--kube-controller-manager-arg=kube-api-qps=200", "--kube-controller-manager-arg=kube-api-burst=400"} {
		if !slices.Contains(server.Args, a) {
			t.Errorf("node args %v lack %s", server.Args, a)
		}
	}
	// The engine's view of what is published (k3d writes the API port without its protocol).
	checkBinding(t, server.NetworkSettings.Ports, "6443/tcp", req.APIPort)
	checkBinding(t, server.NetworkSettings.Ports, "30080/tcp", nodePortHost)
	admission := false
	for _, m := range server.Mounts {
		if m.Destination == "/etc/occ-development/pod-security-admission.yaml" && m.Source == filepath.Join(req.StateDir, k3d.AdmissionFile) && !m.RW {
			admission = true
		}
	}
	if !admission {
		t.Errorf("node mounts %+v lack the admission file read-only", server.Mounts)
	}

	// The apiserver really runs with the admission configuration: a privileged Pod in a
	// restricted namespace is admitted only with the exempt RuntimeClass.
	checkAdmission(t, ctx, kube)

	st, err := b.provider.Inspect(ctx, id)
	if err != nil || st.State != k3d.StateExists || !st.UIDVerified || !st.Running {
		t.Fatalf("Inspect = %+v, %v; want exists, running, UID verified", st, err)
	}

	// A cluster of that name that is not this environment's is refused and left alone: by
	// owner (Create and Delete) and by kube-system UID (Inspect).
	clash := req
	clash.Name, clash.StateDir = other.Name, t.TempDir()
	clash.APIPort, _ = k3d.FreeLoopbackPort()
	clash.Publish = nil
	clash.Recorder = newRecorder(t)
	if _, err := b.provider.Create(ctx, clash); err == nil || !strings.Contains(err.Error(), "not created by this environment") {
		t.Errorf("Create over the engineer's cluster = %v, want a refusal", err)
	}
	if err := b.provider.Delete(ctx, k3d.Identity{Name: other.Name, Owner: req.Owner}); !errors.Is(err, k3d.ErrNotOurs) {
		t.Errorf("Delete of the engineer's cluster as ours = %v, want ErrNotOurs", err)
	}
	forged := otherID
	forged.UID = "00000000-0000-0000-0000-000000000000"
	if st, err := b.provider.Inspect(ctx, forged); err != nil || st.State != k3d.StateNotOurs || !strings.Contains(st.Reason, other.UID) {
		t.Errorf("Inspect with another UID = %+v, %v; want not ours naming the live UID", st, err)
	}
	if err := b.provider.Delete(ctx, forged); !errors.Is(err, k3d.ErrNotOurs) {
		t.Errorf("Delete with another UID = %v, want ErrNotOurs", err)
	}

	// down: everything of the cluster goes, including the anonymous volumes of the node image.
	objs, err := b.Engine.ClusterObjects(ctx, req.Name)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs.Volumes) == 0 {
		t.Fatalf("found no volumes of the live cluster (%s); the leftover check below would prove nothing", objs)
	}
	if err := b.provider.Delete(ctx, id); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	left, err := b.Engine.ClusterObjects(ctx, req.Name, objs.Volumes...)
	if err != nil {
		t.Fatal(err)
	}
	if !left.Empty() {
		t.Fatalf("after Delete: %s", left)
	}
	if st, err := b.provider.Inspect(ctx, id); err != nil || st.State != k3d.StateMissing {
		t.Errorf("Inspect after Delete = %+v, %v; want missing", st, err)
	}
	if err := b.provider.Delete(ctx, id); err != nil {
		t.Errorf("a repeated Delete = %v, want nil", err)
	}

	// The engineer's things are exactly as they were.
	if after := snapshotTree(t, home); !maps.Equal(after, homeBefore) {
		t.Errorf("the home directory changed:\nbefore %v\nafter  %v", homeBefore, after)
	}
	if after := containerStates(t, ctx, b, other.Name); !maps.Equal(after, otherBefore) {
		t.Errorf("the unrelated cluster's containers changed:\nbefore %v\nafter  %v", otherBefore, after)
	}
	if st, err := b.provider.Inspect(ctx, otherID); err != nil || st.State != k3d.StateExists || !st.UIDVerified {
		t.Errorf("the unrelated cluster after down = %+v, %v", st, err)
	}
}

// Ctrl-C while k3d creates the cluster (as its node container is created, and as it is started):
// Create returns the cancellation, the record made before creation stays, the rollback leaves no
// container, network or volume of the cluster, and a later `occ dev down` finds nothing to do.
func TestCancelDuringCreationLeavesNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	b := startBed(t, ctx)
	for _, at := range []events.Action{events.ActionCreate, events.ActionStart} {
		t.Run(string(at), func(t *testing.T) {
			rec := newRecorder(t)
			req := b.request(t, rec)
			id := k3d.Identity{Name: req.Name, Owner: req.Owner}
			b.deleteAtEnd(t, id)

			createCtx, interrupt := context.WithCancel(ctx)
			defer interrupt()
			msgs, errs := b.engine.API.Events(createCtx, events.ListOptions{Filters: filters.NewArgs(
				filters.Arg("type", string(events.ContainerEventType)),
				filters.Arg("event", string(at)),
				filters.Arg("container", "k3d-"+req.Name+"-server-0"),
			)})
			// The node's volumes are read before the interrupt, so their removal can be checked.
			volumes := make(chan []string, 1)
			go func() {
				defer interrupt()
				select {
				case m := <-msgs:
					var vs []string
					if ins, err := b.engine.API.ContainerInspect(ctx, m.Actor.ID); err == nil {
						for _, mt := range ins.Mounts {
							if mt.Type == "volume" {
								vs = append(vs, mt.Name)
							}
						}
					}
					volumes <- vs
				case <-errs:
					volumes <- nil
				}
			}()
			_, err := b.provider.Create(createCtx, req)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Create = %v, want the cancellation", err)
			}
			vs := <-volumes
			if len(vs) == 0 {
				t.Fatalf("the interrupt came before server-0 existed (no volumes seen); the test proves nothing")
			}
			if objs := rec.all(); len(objs) == 0 || objs[0].Type != k3d.TypeCluster || objs[0].Name != req.Name {
				t.Errorf("records after the interrupt = %+v, want the cluster kept", objs)
			}
			left, err := b.Engine.ClusterObjects(ctx, req.Name, vs...)
			if err != nil {
				t.Fatal(err)
			}
			if !left.Empty() {
				t.Fatalf("after the interrupted Create: %s", left)
			}
			if err := b.provider.Delete(ctx, id); err != nil {
				t.Fatalf("down after the interrupt: %v", err)
			}
			if left, _ := b.Engine.ClusterObjects(ctx, req.Name, vs...); !left.Empty() {
				t.Fatalf("after down: %s", left)
			}
		})
	}
}

// clusterRequest is the flow's request for a cluster of the bed named name, recorded by rec,
// with the node's resolver dns (the zero value: k3d's own handling).
func (b *bed) clusterRequest(t *testing.T, rec *memRecorder, name string, dns k3d.NodeDNS) cluster.Request {
	t.Helper()
	set, err := pins.Default()
	if err != nil {
		t.Fatal(err)
	}
	set.K3s.Image = b.node
	dir := rec.dir.Path()
	return cluster.Request{
		Name:                    name,
		KubeconfigFile:          filepath.Join(dir, "kubeconfig"),
		ContainerKubeconfigFile: filepath.Join(dir, "container-kubeconfig"),
		Engine:                  b.engine.Endpoint,
		Pins:                    set,
		Owner:                   rec.owner(),
		Recorder:                rec,
		Settings:                k3d.Settings{PodSecurityExemptRuntimeClasses: []string{"openshell-sandbox"}, DNS: dns},
	}
}

// A failure of the caller at the hand-over (req.Ready: the flow could not record or use the
// cluster) while k3d still finishes the cluster fails Ensure with that failure, after k3d has
// stopped, and the rollback leaves no container, network or volume of the cluster; the record
// stays for down, which then finds nothing.
func TestReadyFailureRollsTheClusterBack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b := startBed(t, ctx)
	rec := newRecorder(t)
	req := b.clusterRequest(t, rec, uniqueName(t), k3d.NodeDNS{})
	id := k3d.Identity{Name: req.Name, Owner: req.Owner}
	b.deleteAtEnd(t, id)
	var volumes []string
	cause := errors.New("the flow could not record the cluster")
	req.Ready = func(ctx context.Context, a cluster.Access) error {
		if ins, err := b.engine.API.ContainerInspect(ctx, a.NodeAddress); err == nil {
			for _, mt := range ins.Mounts {
				if mt.Type == "volume" {
					volumes = append(volumes, mt.Name)
				}
			}
		}
		return cause
	}
	p := &k3d.ClusterProvider{ToolsImage: b.Tools.Ref}
	defer p.Close()
	_, err := p.Ensure(ctx, req)
	if !errors.Is(err, cause) || !strings.Contains(err.Error(), "rolled back: no container, network or volume of it is left") {
		t.Fatalf("Ensure = %v, want the hand-over's failure, rolled back", err)
	}
	if len(volumes) == 0 {
		t.Fatal("req.Ready saw no volumes of server-0: the hand-over came before the node existed, or never")
	}
	if objs := rec.all(); len(objs) != 1 || objs[0].Type != k3d.TypeCluster || objs[0].Name != req.Name {
		t.Errorf("records after the failed hand-over = %+v, want the cluster kept for down", objs)
	}
	if left, err := b.Engine.ClusterObjects(ctx, req.Name, volumes...); err != nil || !left.Empty() {
		t.Fatalf("after the failed hand-over: %s (%v)", left, err)
	}
	if err := b.provider.Delete(ctx, id); err != nil {
		t.Fatalf("down after the failed hand-over: %v", err)
	}
}

// Bad requests fail before anything exists: a node image the engine does not hold (occ never
// lets k3d pull), a network to join that does not exist, an API port already taken.
func TestCreateRefusesBeforeCreatingAnything(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b := startBed(t, ctx)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	cases := []struct {
		name   string
		change func(*k3d.Request)
		want   string
	}{
		{"node image absent", func(r *k3d.Request) {
			r.NodeImage.Digest = "sha256:" + strings.Repeat("0", 64)
		}, "node image"},
		{"network missing", func(r *k3d.Request) {
			r.Network = "occ-test-no-such-network-" + strings.ToLower(r.Name[len(r.Name)-6:])
		}, "does not exist"},
		{"API port taken", func(r *k3d.Request) { r.APIPort = busy.Addr().(*net.TCPAddr).Port }, "already in use"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := newRecorder(t)
			req := b.request(t, rec)
			c.change(&req)
			_, err := b.provider.Create(ctx, req)
			var re *k3d.RequestError
			if !errors.As(err, &re) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Create = %v, want a RequestError mentioning %q", err, c.want)
			}
			if objs := rec.all(); len(objs) != 0 {
				t.Errorf("records %+v after a refused request", objs)
			}
			if left, _ := b.Engine.ClusterObjects(ctx, req.Name); !left.Empty() {
				t.Errorf("refused request left %s", left)
			}
		})
	}
}

// testNetwork makes a Docker network of the test's own, named after the cluster and what it is
// for (occ-test-<suffix of cluster>_<purpose>), removed when the test ends; it returns the
// network's ID and name.
func testNetwork(t *testing.T, ctx context.Context, b *bed, cluster, purpose string) (string, string) {
	t.Helper()
	name := "occ-test-" + cluster[len("occ-dev-"):] + "_" + purpose
	created, err := b.Engine.API.NetworkCreate(ctx, name, network.CreateOptions{Labels: map[string]string{"occ.test": t.Name()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.engine.API.NetworkRemove(context.Background(), created.ID) })
	return created.ID, name
}

// The Compose profile: the cluster joins the Compose project's network, its node is reachable
// there by name, and deleting the cluster leaves that network (not the cluster's) in place.
func TestJoinExistingNetwork(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b := startBed(t, ctx)
	rec := newRecorder(t)
	req := b.request(t, rec)
	netID, netName := testNetwork(t, ctx, b, req.Name, "development")
	req.Network = netName
	c, err := b.provider.Create(ctx, req)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	id := k3d.Identity{Name: req.Name, Owner: req.Owner, UID: c.UID}
	b.deleteAtEnd(t, id)
	if c.Network != netName {
		t.Errorf("cluster network %s, want %s", c.Network, netName)
	}
	server, err := b.engine.API.ContainerInspect(ctx, c.NodeContainer)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := server.NetworkSettings.Networks[netName]; !ok {
		t.Fatalf("server-0 networks %v, want %s", keys(server.NetworkSettings.Networks), netName)
	}
	if _, err := b.engine.API.NetworkInspect(ctx, "k3d-"+req.Name, network.InspectOptions{}); err == nil {
		t.Errorf("k3d made a network of the cluster's own although it joined %s", netName)
	}
	if err := b.provider.Delete(ctx, id); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := b.engine.API.NetworkInspect(ctx, netID, network.InspectOptions{}); err != nil {
		t.Errorf("the joined network is gone after Delete: %v", err)
	}
	if left, _ := b.Engine.ClusterObjects(ctx, req.Name); len(left.Containers)+len(left.Volumes) != 0 {
		t.Errorf("after Delete: %s", left)
	}
}

func checkAdmission(t *testing.T, ctx context.Context, kube kubernetes.Interface) {
	t.Helper()
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "openshell-sandbox"}, Handler: "runc"}
	if _, err := kube.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "restricted", Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDefaultServiceAccount(t, ctx, kube, "restricted")
	pod := func(name string, runtimeClass *string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "restricted"},
			Spec: corev1.PodSpec{
				RuntimeClassName: runtimeClass,
				Containers: []corev1.Container{{Name: "c", Image: "example.invalid/x@sha256:" + strings.Repeat("1", 64),
					SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}},
			},
		}
	}
	// Server-side dry run: admission runs, nothing is stored.
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	if _, err := kube.CoreV1().Pods("restricted").Create(ctx, pod("plain", nil), dry); !apierrors.IsForbidden(err) {
		t.Errorf("a privileged Pod in a restricted namespace = %v, want Forbidden (PodSecurity is not enforcing)", err)
	}
	if _, err := kube.CoreV1().Pods("restricted").Create(ctx, pod("sandbox", ptr.To("openshell-sandbox")), dry); err != nil {
		t.Errorf("a privileged Pod with RuntimeClass openshell-sandbox = %v, want admitted (exempt by the admission file)", err)
	}
}

// waitDefaultServiceAccount waits, on a watch, for the controller-manager to create a new
// namespace's default ServiceAccount, which Pod admission requires.
func waitDefaultServiceAccount(t *testing.T, ctx context.Context, kube kubernetes.Interface, ns string) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	w, err := kube.CoreV1().ServiceAccounts(ns).Watch(wctx, metav1.ListOptions{FieldSelector: "metadata.name=default"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := kube.CoreV1().ServiceAccounts(ns).Get(wctx, "default", metav1.GetOptions{}); err == nil {
		return
	}
	for ev := range w.ResultChan() {
		if ev.Type == watch.Added {
			return
		}
	}
	t.Fatalf("namespace %s got no default ServiceAccount: %v", ns, wctx.Err())
}

func clientFor(t *testing.T, kubeconfig, context string, adjust func(*rest.Config)) kubernetes.Interface {
	t.Helper()
	kc, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*kc, &clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	if adjust != nil {
		adjust(cfg)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func checkMode(t *testing.T, p string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != want {
		t.Errorf("%s mode %v, want %v", p, fi.Mode().Perm(), want)
	}
}

func checkBinding(t *testing.T, pm nat.PortMap, port string, host int) {
	t.Helper()
	b := pm[nat.Port(port)]
	if len(b) != 1 || b[0].HostIP != "127.0.0.1" || b[0].HostPort != strconv.Itoa(host) {
		t.Errorf("binding of %s = %+v, want 127.0.0.1:%d", port, b, host)
	}
}

// snapshotTree maps every path under root to its mode, size and modification time.
func snapshotTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		data := ""
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			data = string(b)
		}
		out[p] = fmt.Sprintf("%v %d %s %q", fi.Mode(), fi.Size(), fi.ModTime().UTC().Format(time.RFC3339Nano), data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func containerStates(t *testing.T, ctx context.Context, b *bed, name string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, c := range containersOf(t, ctx, b.engine, name) {
		out[c.ID] = c.State + " " + strings.Join(c.Names, ",")
	}
	if len(out) == 0 {
		t.Fatalf("cluster %s has no containers", name)
	}
	return out
}

func containerNames(cs []container.Summary) []string {
	var out []string
	for _, c := range cs {
		for _, n := range c.Names {
			out = append(out, strings.TrimPrefix(n, "/"))
		}
	}
	return out
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// A creation that died after k3d made the cluster's network and image volume but before any
// node (a crash, or a killed process): Inspect calls that incomplete, and the recorded cluster's
// down removes exactly those leftovers.
func TestIncompleteLeftoversAreRemoved(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b := startBed(t, ctx)
	name := uniqueName(t)
	id := k3d.Identity{Name: name, Owner: newRecorder(t).owner()}
	labels := map[string]string{"app": "k3d", "k3d.cluster": name}
	if _, err := b.Engine.API.NetworkCreate(ctx, "k3d-"+name, network.CreateOptions{Labels: map[string]string{"app": "k3d"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.engine.API.NetworkRemove(context.Background(), "k3d-"+name) })
	if _, err := b.Engine.API.VolumeCreate(ctx, volume.CreateOptions{Name: "k3d-" + name + "-images", Labels: labels}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.engine.API.VolumeRemove(context.Background(), "k3d-"+name+"-images", true) })
	// Someone else's volume with a k3d-like name but without the cluster's label stays.
	foreign := "k3d-" + name + "-data"
	if _, err := b.Engine.API.VolumeCreate(ctx, volume.CreateOptions{Name: foreign, Labels: map[string]string{"app": "k3d"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.engine.API.VolumeRemove(context.Background(), foreign, true) })

	st, err := b.provider.Inspect(ctx, id)
	if err != nil || st.State != k3d.StateIncomplete || st.Network != "k3d-"+name || len(st.Volumes) != 1 {
		t.Fatalf("Inspect = %+v, %v; want incomplete with the network and the image volume", st, err)
	}
	if err := b.provider.Delete(ctx, id); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if st, err := b.provider.Inspect(ctx, id); err != nil || st.State != k3d.StateMissing {
		t.Fatalf("Inspect after Delete = %+v, %v", st, err)
	}
	if _, err := b.engine.API.VolumeInspect(ctx, foreign); err != nil {
		t.Errorf("the unlabelled volume %s was removed: %v", foreign, err)
	}
}

// The flow drives k3d through cluster.Provider: Check and Describe need no engine, Preflight
// refuses an engine that is not running before anything happens, Ensure records the cluster in
// the state (a record the state's rules accept) and returns the Access the flow records, and the
// Remover built from that recorded Access and engine alone inspects and removes it.
func TestClusterProviderAndRemover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b := startBed(t, ctx)
	rec := newRecorder(t)
	name := uniqueName(t)
	// The node resolves names through a DNS server of the test's, at an address of this host's
	// own (the gateway of a network the node does not join, which it reaches through its own
	// network's gateway): it looks up the registry of the pinned OpenShell images there.
	_, gw := dnsNetwork(t, ctx, b, name)
	srv := k3d.StartDNSServer(t, net.JoinHostPort(gw, "53"), netip.MustParseAddr("192.0.2.10"))
	var notes []string
	var notesMu sync.Mutex
	sink := progress.Sink(func(e progress.Event) {
		if e.Kind == progress.Note {
			notesMu.Lock()
			notes = append(notes, e.Message)
			notesMu.Unlock()
		}
	})
	req := b.clusterRequest(t, rec, name, k3d.NodeDNS{Choice: k3d.DNSGiven, Address: gw, From: dnsSetting, Setting: dnsSetting})
	p := &k3d.ClusterProvider{ToolsImage: b.Tools.Ref}
	defer p.Close()
	if err := p.Check(req); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if d := p.Describe(req); len(d.Creates) == 0 || !strings.Contains(strings.Join(d.Creates, "\n"), req.Name) {
		t.Errorf("Describe = %+v", d)
	}
	bad := req
	bad.Name = "Bad_Name"
	if err := p.Check(bad); err == nil || !strings.Contains(err.Error(), k3d.EnvClusterName) {
		t.Errorf("Check of a bad name = %v", err)
	}
	stopped := req
	stopped.Engine = locate.Endpoint{Socket: filepath.Join(t.TempDir(), "docker.sock")}
	if err := (&k3d.ClusterProvider{}).Preflight(ctx, stopped); err == nil || !strings.Contains(err.Error(), "start Docker") {
		t.Errorf("Preflight against no engine = %v, want what to start", err)
	}
	if err := p.Preflight(ctx, req); err != nil {
		t.Fatalf("Preflight: %v", err)
	}

	// The image lanes import through NodeImporter beside Ensure, into the node Ensure is making.
	type ensured struct {
		access cluster.Access
		err    error
	}
	done := make(chan ensured, 1)
	// The cluster is handed over through req.Ready as soon as its API answers, while k3d still
	// finishes it (the last thing it does is write host.k3d.internal into the node's /etc/hosts,
	// logged here): the kubeconfig written by then reaches the kube-system UID Ensure returns.
	type handed struct {
		access       cluster.Access
		uid          string
		kubeconfigOK bool
		calls        int
	}
	var ready *handed
	calls := 0
	go func() {
		var a cluster.Access
		err := sink.Step("Create k3d cluster "+req.Name, "", func(rep progress.Reporter) error {
			req := req
			req.Progress = rep
			req.Ready = func(ctx context.Context, a cluster.Access) error {
				calls++
				h := &handed{access: a, calls: calls}
				if hosts, err := b.engine.Verbs().Exec(ctx, a.NodeAddress, engine.ExecInput{}, "cat", "/etc/hosts"); err == nil {
					t.Logf("at req.Ready k3d had written host.k3d.internal into the node's /etc/hosts: %v", strings.Contains(hosts.Stdout, "host.k3d.internal"))
				}
				cfg, err := clientcmd.BuildConfigFromFlags("", a.Kubeconfig)
				if err == nil {
					h.kubeconfigOK = true
					if cs, err := kubernetes.NewForConfig(cfg); err == nil {
						if ns, err := cs.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{}); err == nil {
							h.uid = string(ns.UID)
						}
					}
				}
				ready = h
				return nil
			}
			var err error
			a, err = p.Ensure(ctx, req)
			return err
		})
		done <- ensured{a, err}
	}()
	importer, err := p.NodeImporter(ctx, req)
	if err != nil {
		t.Fatalf("NodeImporter: %v", err)
	}
	select {
	case <-done:
		t.Logf("NodeImporter returned after Ensure")
	default:
		t.Logf("NodeImporter returned while Ensure was still creating the cluster")
	}
	if importer.NodeContainer() != "k3d-"+req.Name+"-server-0" || importer.ClusterName() != req.Name {
		t.Errorf("importer of %s/%s, want server-0 of %s", importer.ClusterName(), importer.NodeContainer(), req.Name)
	}
	// The import names an image by a tag (the flow's staging tag), as a save of a digest
	// reference carries no name for ctr to give it.
	early := "occ.local/early-import/" + req.Name + ":staging"
	if err := b.engine.API.ImageTag(ctx, b.Tools.Ref, early); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Engine.Forget(early) })
	if err := importer.ImportImages(ctx, []string{early}, images.Pass{}); err != nil {
		t.Fatalf("import through the early importer: %v", err)
	}
	res := <-done
	access, err := res.access, res.err
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	notesMu.Lock()
	said := strings.Join(notes, "\n")
	notesMu.Unlock()
	if want := "node DNS: k3d-" + req.Name + "-server-0 resolves ghcr.io through " + gw + " (given by " + dnsSetting + ")"; !strings.Contains(said, want) || srv.Queries() == 0 {
		t.Errorf("the cluster step's notes lack %q (%d queries):\n%s", want, srv.Queries(), said)
	}
	t.Cleanup(func() {
		_ = b.provider.Delete(context.Background(), k3d.Identity{Name: req.Name, Owner: req.Owner, UID: access.UID})
	})
	listed, err := b.engine.Verbs().Exec(ctx, importer.NodeContainer(), engine.ExecInput{}, "ctr", "-n", "k8s.io", "images", "ls", "-q")
	if err != nil || listed.ExitCode != 0 {
		t.Fatalf("ctr images ls in the node: %+v, %v", listed, err)
	}
	if !strings.Contains(listed.Stdout, early) {
		t.Errorf("the node lists %q, want the image imported before the cluster was finished (%s)", listed.Stdout, early)
	}

	// An Ensure that refuses (the name is another owner's) fails the early importer beside it
	// instead of leaving it waiting.
	other := &k3d.ClusterProvider{ToolsImage: b.Tools.Ref}
	defer other.Close()
	foreign := req
	foreign.Owner = "another-environment"
	foreign.Recorder = newRecorder(t)
	refused := make(chan error, 1)
	go func() {
		_, err := other.Ensure(ctx, foreign)
		refused <- err
	}()
	if imp, err := other.NodeImporter(ctx, foreign); err == nil || !strings.Contains(err.Error(), "no node to import into") {
		t.Errorf("NodeImporter beside a refused Ensure = %v, %v; want its failure", imp, err)
	}
	if err := <-refused; err == nil || !strings.Contains(err.Error(), "not created by this environment") {
		t.Errorf("Ensure of another owner's cluster = %v, want refused", err)
	}
	if access.Provider != k3d.Name || access.Name != req.Name || access.Kubeconfig != req.KubeconfigFile || access.ContainerKubeconfig != req.ContainerKubeconfigFile ||
		access.UID == "" || access.NodeAddress != "k3d-"+req.Name+"-server-0" || access.Network != "k3d-"+req.Name {
		t.Fatalf("Access = %+v", access)
	}
	switch {
	case ready == nil:
		t.Error("Ensure never handed the cluster over through req.Ready")
	case ready.calls != 1:
		t.Errorf("req.Ready was called %d times, want once", ready.calls)
	case ready.access != access:
		t.Errorf("req.Ready got %+v, Ensure returned %+v", ready.access, access)
	case !ready.kubeconfigOK || ready.uid != access.UID:
		t.Errorf("at req.Ready the kubeconfig %s reached kube-system uid %q (kubeconfig readable: %v), want %s", ready.access.Kubeconfig, ready.uid, ready.kubeconfigOK, access.UID)
	}
	if addr, err := p.NodeAddress(ctx, access); err != nil || addr != access.NodeAddress {
		t.Errorf("NodeAddress = %s, %v", addr, err)
	}
	if err := rec.dir.Update(func(s *state.State) {
		s.Cluster = access
		s.Engine = &state.Engine{Endpoint: req.Engine.String()}
	}); err != nil {
		t.Fatalf("record the access: %v", err)
	}
	recorded := rec.dir.State()
	if len(recorded.Objects) != 1 {
		t.Fatalf("records = %+v", recorded.Objects)
	}
	o := recorded.Objects[0]

	// down's remover, from the record alone (the shell's DOCKER_HOST no longer matters).
	t.Setenv("DOCKER_HOST", "unix:///nonexistent.sock")
	rm := k3d.Remover(recorded.Cluster, docker.Recorded(recorded.Engine))
	if in := rm.Inspect(ctx, o); in.State != state.Present {
		t.Fatalf("Inspect = %+v, want present", in)
	}
	forged := recorded.Cluster
	forged.UID = "00000000-0000-0000-0000-000000000000"
	if r, err := k3d.Remover(forged, docker.Recorded(recorded.Engine)).Remove(ctx, o); err != nil || r.Outcome != state.LeftAlone {
		t.Fatalf("Remove with another UID = %+v, %v; want left alone", r, err)
	}
	if r, err := rm.Remove(ctx, o); err != nil || r.Outcome != state.Removed {
		t.Fatalf("Remove = %+v, %v", r, err)
	}
	if in := rm.Inspect(ctx, o); in.State != state.Missing {
		t.Errorf("Inspect after Remove = %+v, want missing", in)
	}
	if r, err := rm.Remove(ctx, o); err != nil || r.Outcome != state.AlreadyGone {
		t.Errorf("a repeated Remove = %+v, %v; want already gone", r, err)
	}
	if left, _ := b.Engine.ClusterObjects(ctx, req.Name); !left.Empty() {
		t.Errorf("after Remove: %s", left)
	}
}
