package kubernetes

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/occ/internal/kube"
	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/cluster/k3d"
	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/testbed/dockerbed"
	"github.com/openclaw/occ/internal/testbed/ocebed"
)

// k3dCommit is the fixture checkout's commit in the k3d test.
const k3dCommit = "5e2c1d0b9a8f7e6d5c4b3a29180f7e6d5c4b3a29"

type syncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}
func (l *syncLog) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.buf.String() }

// pinOfRef parses a digest reference into a pin.
func pinOfRef(t *testing.T, ref string) pins.Image {
	t.Helper()
	p, err := pins.ParseImage(ref)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// `occ dev up --control-plane kubernetes` on Docker, with the libraries of the profile and no
// flow: a k3d cluster on its own network publishing the API proxy's NodePort 30080 on host
// loopback; the controller and Agent runtime built from the fixture checkout through the
// engine's BuildKit, PostgreSQL pulled by digest, all imported with the three OpenShell images
// in one pass and verified in the node; then the in-cluster control plane with the fixture
// chart. The real kube-controller-manager and scheduler of the k3s stand-in run the StatefulSet,
// the Job and the Deployments, whose Pods the played kubelet marks ready only because their
// images are in the node under exactly the verified digest references: a Pod naming an image
// that was not imported stays ErrImageNeverPull. The key is then copied through the reader Pod
// (exec and the API through their seams: the bed has no kubelet to exec in and no kube-proxy to
// route the proxy), and deleting the cluster leaves nothing on the engine.
func TestControlPlaneInAK3dClusterRunsTheImportedImages(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bed := dockerbed.Start(t)
	loc, err := docker.Locate(docker.LocateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := docker.Connect(ctx, loc.Endpoint, loc.Source)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	dir, err := state.Create(filepath.Join(t.TempDir(), "state"), state.State{Profile: "kubernetes", Cluster: state.Cluster{Provider: k3d.Name}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dir.Close() })
	owner := dir.State().Owner()

	// The pinned images of the cluster and of the platform, pulled by digest from the bed's
	// registry as Docker Hub and ghcr.io serve them in production.
	present := func(ref string) images.Local {
		t.Helper()
		l, err := images.Present(ctx, images.PresentOptions{API: eng.API, Image: pinOfRef(t, ref), Recorder: dir})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { bed.Engine.Forget(ref) })
		return l
	}
	provide := func(spec dockerbed.ImageSpec) images.Local {
		t.Helper()
		p, err := bed.Provide(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		return present(p.Ref)
	}
	node, tools := present(bed.Node.Ref), present(bed.Tools.Ref)
	log := &syncLog{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("k3d log:\n%s", log.String())
		}
	})
	provider, err := k3d.New(k3d.Options{Engine: eng, ToolsImage: tools.Pin.DigestReference(), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	apiPort, err := k3d.FreeLoopbackPort()
	if err != nil {
		t.Fatal(err)
	}
	proxyPort, err := k3d.FreeLoopbackPort()
	if err != nil {
		t.Fatal(err)
	}
	name := "occ-dev-k" + strings.ToLower(suffix(t))
	started := time.Now()
	c, err := provider.Create(ctx, k3d.Request{
		Name: name, Owner: owner, NodeImage: node.Pin, StateDir: dir.Path(), APIPort: apiPort,
		Ports: []k3d.PortMapping{{HostPort: proxyPort, NodePort: ProxyNodePort}}, Recorder: dir,
	})
	if err != nil {
		t.Fatalf("create the cluster: %v", err)
	}
	t.Logf("cluster %s created in %s", name, time.Since(started).Round(time.Millisecond))
	deleted := false
	t.Cleanup(func() {
		if !deleted {
			_ = provider.Delete(context.Background(), k3d.Identity{Name: name, Owner: owner, UID: c.UID})
		}
	})

	// Its own network (no Compose network), and NodePort 30080 of server-0 on host loopback.
	server, err := eng.API.ContainerInspect(ctx, c.NodeContainer)
	if err != nil {
		t.Fatal(err)
	}
	if nets := server.NetworkSettings.Networks; len(nets) != 1 || nets["k3d-"+name] == nil || c.Network != "k3d-"+name {
		t.Errorf("server-0 networks %v (cluster network %s), want only its own k3d-%s", keys(nets), c.Network, name)
	}
	binding := server.HostConfig.PortBindings["30080/tcp"]
	if len(binding) != 1 || binding[0].HostIP != "127.0.0.1" || binding[0].HostPort != fmt.Sprint(proxyPort) {
		t.Errorf("server-0 publishes 30080/tcp as %+v, want 127.0.0.1:%d", binding, proxyPort)
	}

	// The control-plane images: built from the checkout (the Node base pulled by digest first),
	// PostgreSQL by its digest, and the OpenShell images, imported in one pass and verified.
	checkout := ocebed.Checkout(t, k3dCommit)
	nodeBase := provide(ocebed.NodeSpec(t))
	pg := provide(ocebed.PostgresSpec(t))
	var openshell []images.Local
	for _, role := range []string{dockerbed.RoleGateway, dockerbed.RoleSandbox, dockerbed.RoleSupervisor} {
		spec, err := dockerbed.ProductImage(role)
		if err != nil {
			t.Fatal(err)
		}
		openshell = append(openshell, provide(spec))
	}
	tags := controlplane.ImageTags{Controller: "occ-test/controller-" + name + ":kubernetes-quickstart", Runtime: "occ-test/runtime-" + name + ":kubernetes-quickstart"}
	t.Cleanup(func() {
		for _, tag := range []string{tags.Controller, tags.Runtime} {
			_, _ = eng.API.ImageRemove(context.Background(), tag, image.RemoveOptions{})
		}
	})
	started = time.Now()
	built, err := controlplane.PrepareControlPlaneImages(ctx, eng.API, controlplane.ImageOptions{
		Checkout: checkout, Commit: k3dCommit, NodeBaseImage: nodeBase.Pin.DigestReference(), Tags: tags, NetworkMode: "none",
	})
	if err != nil {
		t.Fatalf("build the control-plane images: %v", err)
	}
	t.Logf("controller and runtime built in %s", time.Since(started).Round(time.Millisecond))
	controller, err := images.Built(ctx, eng.API, built.Controller.Reference, built.Controller.ID)
	if err != nil {
		t.Fatal(err)
	}
	runtime, err := images.Built(ctx, eng.API, built.Runtime.Reference, built.Runtime.ID)
	if err != nil {
		t.Fatal(err)
	}
	importer := provider.Importer(name)
	started = time.Now()
	staged, err := images.Import(ctx, images.ImportOptions{API: eng.API, Importer: importer, Images: append([]images.Local{controller, runtime, pg}, openshell...), Recorder: dir})
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	verified, err := images.VerifyInNode(ctx, images.VerifyOptions{API: eng.API, Node: importer.NodeContainer(), Images: staged, Recorder: dir})
	if err != nil {
		t.Fatalf("verify in the node: %v", err)
	}
	t.Logf("six images imported and verified in %s", time.Since(started).Round(time.Millisecond))
	ref := map[string]string{}
	for _, v := range verified {
		ref[v.Pin.Name()] = v.Reference
		if !digestReference.MatchString(v.Reference) {
			t.Errorf("in-cluster reference %s is not a digest reference", v.Reference)
		}
	}
	controllerRef, runtimeRef, pgRef := ref[controller.Pin.Name()], ref[runtime.Pin.Name()], ref[pg.Pin.Name()]
	if controllerRef != controller.Pin.Name()+"@"+built.Controller.ID || runtimeRef != runtime.Pin.Name()+"@"+built.Runtime.ID {
		t.Errorf("controller and runtime in the cluster as %s and %s, want their repositories at their config digests %s, %s", controllerRef, runtimeRef, built.Controller.ID, built.Runtime.ID)
	}

	// The in-cluster control plane, through the flow's recording connection.
	access := cluster.Access{Provider: k3d.Name, Name: name, Kubeconfig: c.Kubeconfig, Context: c.Context, Server: c.Server, UID: c.UID, NodeAddress: c.NodeContainer, Network: c.Network}
	conn, err := kubeobj.Connect(access, kubeobj.Options{Owner: owner, Recorder: dir})
	if err != nil {
		t.Fatal(err)
	}
	const ns = DefaultNamespace
	if err := platform.EnsureNamespace(ctx, conn, ns); err != nil {
		t.Fatal(err)
	}
	netw, err := eng.API.NetworkInspect(ctx, c.Network, network.InspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var subnets []string
	for _, cfg := range netw.IPAM.Config {
		subnets = append(subnets, cfg.Subnet)
	}
	installation, _ := writeInstallation(t)
	ch, err := LoadChart(checkout)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := New(conn, Config{
		Namespace: ns, ControllerImage: controllerRef, PostgresImage: pgRef, HostAPIPort: proxyPort,
		InstallationFile: installation, Chart: ch, NodeNetwork: c.Network, NodeSubnets: subnets, StartupTimeout: 3 * time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	started = time.Now()
	for _, s := range cp.Steps() {
		stepStart := time.Now()
		if err := s.Run(ctx); err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		t.Logf("step %q: %s", s.Name, time.Since(stepStart).Round(time.Millisecond))
	}
	t.Logf("in-cluster control plane up in %s", time.Since(started).Round(time.Millisecond))
	values, err := cp.Values(ctx)
	if err != nil {
		t.Fatal(err)
	}
	api, err := netip.ParseAddrPort(strings.TrimSuffix(values.Cluster.CIDRs[0], "/32") + fmt.Sprintf(":%d", values.Cluster.Port))
	if err != nil || !netip.MustParsePrefix(subnets[0]).Contains(api.Addr()) {
		t.Errorf("the chart admits the API at %s (%v), outside the cluster network %v", values.Cluster.CIDRs, err, subnets)
	}

	// Every workload ran on the imported images, by their verified digest references.
	pods, err := conn.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, p := range pods.Items {
		for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
			if cs.Image != controllerRef && cs.Image != pgRef {
				t.Errorf("Pod %s container %s runs %s, not an imported digest reference", p.Name, cs.Name, cs.Image)
			}
			if cs.State.Running == nil && cs.State.Terminated == nil {
				t.Errorf("Pod %s container %s did not run: %+v", p.Name, cs.Name, cs.State)
			}
		}
		role := p.Labels[labelComponent] + p.Labels["app"]
		switch {
		case p.Name == PreparePod:
			role = PreparePod
		case p.Labels[labelName] == DevelopmentClient:
			role = ProxyDeployment
		}
		seen[role] = true
	}
	for _, want := range []string{"api", "worker", "initialization", Postgres, PreparePod, ProxyDeployment} {
		if !seen[want] {
			t.Errorf("no Pod of %q ran (seen %v)", want, seen)
		}
	}
	job, err := conn.Kube.BatchV1().Jobs(ns).Get(ctx, ReleaseName+"-initialization", metav1.GetOptions{})
	if err != nil || job.Status.Succeeded != 1 {
		t.Errorf("initialization Job: %+v, %v", jobStatus(job), err)
	}
	if rel := cp.Release(); rel == nil || rel.Info.Status != "deployed" {
		t.Errorf("release %+v", cp.Release())
	}

	// A Pod naming the controller's repository at a digest that was never imported is not run:
	// the node holds the images by exactly the references the control plane uses.
	stray := controller.Pin.Name() + "@" + runtime.ID
	if _, err := conn.Ensure(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "not-imported", Namespace: ns},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
			Name: "c", Image: stray, ImagePullPolicy: corev1.PullNever,
		}}},
	}, kubeobj.Converge); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	never, err := kube.WaitForPod(wctx, conn.Kube, ns, "", func(p *corev1.Pod) bool {
		return p.Name == "not-imported" && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil
	})
	wcancel()
	if err != nil {
		t.Fatalf("the Pod of a not-imported image: %v", err)
	}
	if w := never.Status.ContainerStatuses[0].State.Waiting; w.Reason != "ErrImageNeverPull" || never.Status.Phase != corev1.PodPending {
		t.Errorf("the Pod of a not-imported image: phase %s, waiting %+v; want Pending with ErrImageNeverPull", never.Status.Phase, w)
	}

	// The key through a reader Pod that really becomes ready on the imported controller image;
	// exec through its seam and the Installation through its stand-in API.
	const id = "ins_0a1b2c3d-0000-4000-8000-000000000001"
	dest, err := controlplane.ResolveKeyDestination("", dir.Path())
	if err != nil {
		t.Fatal(err)
	}
	keyAPI := installationAPI(t, "occ_sk_canary_91d2", id)
	res, err := CopyBootstrapKey(ctx, conn, &volumeExec{t: t, files: bootstrapFiles(testPassword)},
		controlplane.KeyInstaller{StateDir: dir.Path(), Destination: dest, APIURL: keyAPI.URL},
		KeyCopy{Namespace: ns, ControllerImage: controllerRef, PasswordFile: filepath.Join(dir.Path(), PasswordFileName), Timeout: time.Minute})
	if err != nil {
		t.Fatalf("copy the key: %v", err)
	}
	if res.InstallationID != id {
		t.Errorf("Installation ID %s", res.InstallationID)
	}
	if data, err := os.ReadFile(dest.Path); err != nil || string(data) != testKey {
		t.Errorf("key file: %q, %v", data, err)
	}

	// The cluster holds everything of the profile: deleting it leaves nothing on the engine.
	started = time.Now()
	if err := provider.Delete(ctx, k3d.Identity{Name: name, Owner: owner, UID: c.UID}); err != nil {
		t.Fatalf("delete the cluster: %v", err)
	}
	deleted = true
	t.Logf("cluster deleted in %s", time.Since(started).Round(time.Millisecond))
	if left, err := bed.Engine.ClusterObjects(ctx, name); err != nil || !left.Empty() {
		t.Errorf("after deleting the cluster: %s, %v", left, err)
	}
}

func jobStatus(j *batchv1.Job) any {
	if j == nil {
		return nil
	}
	return j.Status
}
