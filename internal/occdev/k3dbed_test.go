package occdev_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/opencontainers/image-spec/identity"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/openclaw/occ/internal/gateway/emulator"
	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/charts/chartstest"
	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/cluster/k3d"
	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/engine/locate"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/progress"
	"github.com/openclaw/occ/internal/syncbuf"
	"github.com/openclaw/occ/internal/testbed/dockerbed"
	"github.com/openclaw/occ/internal/testbed/podmanbed"
)

// k3dBed is the Docker + k3d bed of the flow's tests: the private engine with the k3s stand-in
// node and k3d tools images, the three OpenShell stand-in images served by digest from the
// bed's registry, the stand-in charts' archive, an Agent Sandbox manifest whose controller runs
// from an image the node holds, the gateway emulator for the Health check, and a user's HOME
// with a kubeconfig of their own.
type k3dBed struct {
	*dockerbed.Bed
	t testing.TB
	// engine is occ's own kind of connection to the bed's engine, for assertions.
	engine *docker.Engine
	// set is the pin set of a normal run; product holds its three OpenShell pins with the config
	// digest the registry push produced (what the node must hold).
	set     *pins.Set
	product []productPin
	pinFile string
	archive string
	gateway *emulator.Server
	// userKubeconfig is $HOME/.kube/config, and userKubeconfigData its bytes before any run.
	userKubeconfig     string
	userKubeconfigData []byte
	// kind is the engine the bed runs on (docker or podman), which `up` is told to use and the
	// state must record.
	kind engine.Kind
}

type productPin struct {
	pin    pins.Image
	config string
	// local is the image's content tag in the engine (the bed loads every image under one).
	local string
}

// chartFiles replaces files of the stand-in OpenShell archive (chartstest.Options.Files).
type chartFiles map[string]string

func newK3dBed(t testing.TB, files chartFiles) *k3dBed {
	t.Helper()
	return newK3dBedOn(t, files, state.EngineDocker)
}

// newK3dBedOn is newK3dBed on the given engine. On Podman the bed's machinery runs on the
// Podman bed, the developer's CONTAINER_HOST names the Podman socket, and their DOCKER_HOST
// still names the Docker bed (as on a laptop with both), so every `up`, `status` and `down` of
// the bed proves it reached the engine it chose and recorded rather than DOCKER_HOST's.
func newK3dBedOn(t testing.TB, files chartFiles, kind engine.Kind) *k3dBed {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b := &k3dBed{t: t, kind: kind}
	dockerHost := os.Getenv("DOCKER_HOST")
	if kind == state.EnginePodman {
		b.Bed = podmanbed.Start(t)
	} else {
		b.Bed = dockerbed.Start(t)
	}
	ep, source, err := locate.DockerPlace(locate.Env{})
	if err != nil {
		t.Fatal(err)
	}
	if kind == state.EnginePodman {
		t.Setenv("CONTAINER_HOST", b.Engine.Host)
		t.Setenv("DOCKER_HOST", dockerHost)
	}
	if b.engine, err = docker.ConnectAs(ctx, ep, source, engine.Docker); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.engine.Close() })
	if b.engine.Identity.Kind != kind {
		t.Fatalf("the bed's engine at %s identifies as %s, want %s", b.engine.Endpoint, b.engine.Name(), kind.Name())
	}

	fixture := chartstest.New(t, t.TempDir(), chartstest.Options{Files: files})
	b.archive = fixture.ArchivePath
	b.set = fixture.Pins
	// The stand-in node is pinned under the pinned k3s release's tag, from which occ reads the
	// Kubernetes version of the Gateway chart's offline render; occ pulls and runs it by digest.
	node := parsePin(t, b.Node.Ref)
	node.Tag = b.set.K3s.Image.Tag
	b.set.K3s.Image = node
	b.set.K3d.ToolsImage = parsePin(t, b.Tools.Ref)
	for _, role := range []string{dockerbed.RoleGateway, dockerbed.RoleSandbox, dockerbed.RoleSupervisor} {
		b.product = append(b.product, b.provideProduct(t, role))
	}
	b.set.OpenShell.Images = pins.Images{Gateway: b.product[0].pin, Sandbox: b.product[1].pin, Supervisor: b.product[2].pin}

	manifest := k3dAgentSandboxManifest(b.set.OpenShell.Images)
	sum := sha256.Sum256(manifest)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(manifest) }))
	t.Cleanup(srv.Close)
	b.set.AgentSandbox.Manifest = pins.Artifact{URL: srv.URL + "/sandbox.yaml", SHA256: hex.EncodeToString(sum[:])}
	b.pinFile = b.writePins(b.set)

	gw, err := emulator.Start(emulator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Close)
	b.gateway = gw

	// A user with a kubeconfig of their own: `up` must never write it or switch its context.
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("KUBECONFIG", "")
	os.Unsetenv("KUBECONFIG")
	b.userKubeconfig = filepath.Join(home, ".kube", "config")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["work"] = &clientcmdapi.Cluster{Server: "https://10.20.30.40:6443"}
	cfg.AuthInfos["me"] = &clientcmdapi.AuthInfo{Token: "user-token-" + strings.ToLower(rand.Text())}
	cfg.Contexts["work"] = &clientcmdapi.Context{Cluster: "work", AuthInfo: "me", Namespace: "team"}
	cfg.CurrentContext = "work"
	if err := os.MkdirAll(filepath.Dir(b.userKubeconfig), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := clientcmd.WriteToFile(*cfg, b.userKubeconfig); err != nil {
		t.Fatal(err)
	}
	if b.userKubeconfigData, err = os.ReadFile(b.userKubeconfig); err != nil {
		t.Fatal(err)
	}
	return b
}

// provideProduct builds the bed's image of role, pushes it to the bed's registry and loads it into
// the engine, and returns it pinned as occ pins images: repository:tag@sha256:<index digest>.
func (b *k3dBed) provideProduct(t testing.TB, role string) productPin {
	t.Helper()
	spec, err := dockerbed.ProductImage(role)
	if err != nil {
		t.Fatal(err)
	}
	p, err := b.Provide(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	key, err := spec.Key()
	if err != nil {
		t.Fatal(err)
	}
	local, err := spec.Tag()
	if err != nil {
		t.Fatal(err)
	}
	return productPin{pin: parsePin(t, p.Repo+":"+key+"@"+p.Digest), config: p.ConfigDigest, local: local}
}

func parsePin(t testing.TB, ref string) pins.Image {
	t.Helper()
	img, err := pins.ParseImage(ref)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// writePins writes set as a pin file of the test's own.
func (b *k3dBed) writePins(set *pins.Set) string {
	b.t.Helper()
	data, err := yaml.Marshal(set)
	if err != nil {
		b.t.Fatal(err)
	}
	path := filepath.Join(b.t.TempDir(), "pins.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.t.Fatal(err)
	}
	return path
}

// clusterName is a fresh cluster name for one run (the rule: occ-dev-…, at most 32).
func clusterName() string { return "occ-dev-f" + strings.ToLower(rand.Text()[:10]) }

// options are the settings of one `up` on the bed: a new k3d cluster for the Kubernetes-only
// profile, the stand-in pins and archive, and the Health check through the emulator (a
// port-forward needs a real kubelet, which the stand-in node plays).
func (b *k3dBed) options(t testing.TB) occdev.UpOptions {
	stateDir := filepath.Join(t.TempDir(), "state")
	t.Cleanup(func() { downLeftover(t, stateDir) })
	return occdev.UpOptions{
		StateDir:        stateDir,
		ClusterProvider: occdev.ProviderK3d,
		ClusterSettings: occdev.K3dSettings(k3d.ClusterOptions{ClusterName: clusterName()}),
		ControlPlane:    occdev.ControlPlaneKubernetes,
		PinFile:         b.pinFile,
		ArchiveFile:     b.archive,
		CacheDir:        filepath.Join(t.TempDir(), "cache"),
		GatewayEndpoint: b.gateway.Addr(),
		StartupTimeout:  3 * time.Minute,
		OCCCommand:      "occ",
		Log:             &syncbuf.Buffer{},
		Engine:          locate.Choice(b.kind),
	}
}

// downLeftover runs down for a state a test left behind (it failed before its own down, or
// kept the state on purpose and ended), so that no cluster outlives its test on the shared
// engine and meets the next test or the next run.
func downLeftover(t testing.TB, stateDir string) {
	if _, err := os.Stat(filepath.Join(stateDir, state.FileName)); err != nil {
		return
	}
	if _, err := occdev.Down(context.Background(), occdev.DownOptions{StateDir: stateDir, Log: io.Discard}); err != nil {
		t.Logf("down of the state the test left in %s: %v", stateDir, err)
	}
}

// k3dAgentSandboxManifest is the Agent Sandbox stand-in of the k3d bed: the chartstest manifest
// with its controller running from an image the node holds, because the stand-in node reaches no
// registry. The real controller image is pulled by the node itself and waits for none of the
// images occ imports; the bed's controller runs the imported OpenShell Gateway image (pullPolicy
// Never), the one the Gateway's own Pod waits for anyway, so the stand-in makes the platform wait
// for no image a real cluster would not (the Sandbox and supervisor images are only named, for
// Sandboxes, and may still be on their way when the controller and the Gateway start).
func k3dAgentSandboxManifest(imgs pins.Images) []byte {
	m := chartstest.AgentSandboxManifest()
	m = strings.Replace(m, "image: registry.k8s.io/agent-sandbox/agent-sandbox-controller:v0.5.2",
		"image: "+imgs.Gateway.DigestReference()+"\n          imagePullPolicy: Never", 1)
	return []byte(m)
}

// productRefs are the digest references of the three OpenShell pins.
func (b *k3dBed) productRefs() []string {
	var refs []string
	for _, p := range b.product {
		refs = append(refs, p.pin.DigestReference())
	}
	return refs
}

// imageID returns the engine's image ID of ref, or "" when the engine does not have it.
//
// On Podman a digest reference names an image only while it is one of the image's names:
// Podman resolves NAME@DIGEST to any local image that ever held manifest DIGEST, so once occ's
// pull is untagged the reference still resolves to the image under its other names (the bed's
// content tag), which is not something occ left behind. The bed's own client reads Podman's
// RepoDigests as Podman lists them (under the image's names); occ's API for Podman adds the
// reference asked for, so it cannot tell.
func (b *k3dBed) imageID(t testing.TB, ref string) string {
	t.Helper()
	ins, err := b.Engine.API.ImageInspect(context.Background(), ref)
	if cerrdefs.IsNotFound(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	if b.kind == state.EnginePodman && strings.Contains(ref, "@") && !slices.Contains(ins.RepoDigests, ref) {
		return ""
	}
	return ins.ID
}

// forgetProducts removes the product pins' digest references from the engine (untag only), so
// a run starts with the engine lacking them, as on a laptop that never pulled them.
func (b *k3dBed) forgetProducts(t testing.TB) {
	t.Helper()
	for _, ref := range b.productRefs() {
		// Removing a reference that is not one of its names deletes the whole image on Podman.
		if b.imageID(t, ref) != "" {
			b.Engine.Forget(ref)
		}
	}
	for _, ref := range b.productRefs() {
		if id := b.imageID(t, ref); id != "" {
			t.Fatalf("%s is still in the engine (%s) before the run", ref, id)
		}
	}
}

// leftovers describes what the engine still holds of a run: containers, networks and volumes of
// the cluster (volumes also by the names seen while it existed), occ's tags named after the
// cluster (staging tags, holds on built images), and the product
// images `up` pulled (none was present before).
func (b *k3dBed) leftovers(t testing.TB, name string, volumes []string) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	objs, err := b.Engine.ClusterObjects(ctx, name, volumes...)
	if err != nil {
		t.Fatal(err)
	}
	if !objs.Empty() {
		out = append(out, "cluster objects: "+objs.String())
	}
	list, err := b.Engine.API.ImageList(ctx, image.ListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range list {
		for _, tag := range im.RepoTags {
			if strings.HasPrefix(tag, "occ.local/") && strings.HasSuffix(tag, ":"+name) {
				out = append(out, "occ's tag "+tag)
			}
		}
	}
	for _, ref := range b.productRefs() {
		if id := b.imageID(t, ref); id != "" {
			out = append(out, "pulled image "+ref+" ("+id+")")
		}
	}
	return out
}

// volumesOf are the volumes the engine holds of a cluster now (labelled, or mounted by its
// containers), noted while it exists: once its containers are gone, anonymous volumes can no
// longer be traced to it.
func (b *k3dBed) volumesOf(t testing.TB, name string) []string {
	t.Helper()
	objs, err := b.Engine.ClusterObjects(context.Background(), name)
	if err != nil {
		t.Errorf("list objects of cluster %s: %v", name, err)
		return nil
	}
	return objs.Volumes
}

// assertUserKubeconfig checks the user's kubeconfig is byte for byte what it was.
func (b *k3dBed) assertUserKubeconfig(t testing.TB) {
	t.Helper()
	data, err := os.ReadFile(b.userKubeconfig)
	if err != nil || !bytes.Equal(data, b.userKubeconfigData) {
		t.Errorf("the user's kubeconfig %s changed (%v):\n%s", b.userKubeconfig, err, data)
	}
	entries, err := os.ReadDir(filepath.Dir(b.userKubeconfig))
	if err != nil || len(entries) != 1 {
		t.Errorf("~/.kube holds %d entries, want only config (%v)", len(entries), err)
	}
}

// nodeCtr runs ctr in the node's CRI namespace and returns what it printed; a failure ends the
// test.
func (b *k3dBed) nodeCtr(t testing.TB, node string, args ...string) string {
	t.Helper()
	res, err := b.Engine.Exec(context.Background(), node, false, append([]string{"ctr", "-n", "k8s.io"}, args...)...)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("ctr %s in %s: %v %s", strings.Join(args, " "), node, err, res.Stderr)
	}
	return res.Stdout
}

// nodeConfigDigests reads, straight from the node's containerd, the config digest of every image
// name it holds (following an index to its one manifest): independent of occ's own verification.
func (b *k3dBed) nodeConfigDigests(t testing.TB, node string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(b.nodeCtr(t, node, "images", "ls")), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		digest := f[2]
		for range 3 {
			var doc struct {
				Config    struct{ Digest string }
				Manifests []struct{ Digest string }
			}
			if err := json.Unmarshal([]byte(b.nodeCtr(t, node, "content", "get", digest)), &doc); err != nil {
				t.Fatalf("content %s: %v", digest, err)
			}
			if doc.Config.Digest != "" {
				out[f[0]] = doc.Config.Digest
				break
			}
			if len(doc.Manifests) != 1 {
				break
			}
			digest = doc.Manifests[0].Digest
		}
	}
	return out
}

// nodeUnpacked reports whether the node's snapshotter holds the image of config unpacked: a
// snapshot keyed by the chain ID of its whole layer stack.
func (b *k3dBed) nodeUnpacked(t testing.TB, node, config string) bool {
	t.Helper()
	var img ocispec.Image
	if err := json.Unmarshal([]byte(b.nodeCtr(t, node, "content", "get", config)), &img); err != nil || len(img.RootFS.DiffIDs) == 0 {
		t.Fatalf("config %s in %s has no layers (%v)", config, node, err)
	}
	return strings.Contains(b.nodeCtr(t, node, "snapshots", "ls"), identity.ChainID(img.RootFS.DiffIDs).String())
}

// kubeClient is a client of the recorded cluster, from the state's kubeconfig.
func kubeClient(t testing.TB, access cluster.Access) kubernetes.Interface {
	t.Helper()
	cfg, err := kubeobj.RESTConfig(access)
	if err != nil {
		t.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(cfg)
}

// unrelatedCluster is a k3d cluster someone else made in the same engine (another owner), which
// no run may touch: its containers are compared by ID and its API by kube-system UID.
type unrelatedCluster struct {
	provider   *k3d.Provider
	id         k3d.Identity
	containers []string
}

func (b *k3dBed) createUnrelatedCluster(t testing.TB) *unrelatedCluster {
	t.Helper()
	ctx := context.Background()
	rec, err := state.Create(filepath.Join(t.TempDir(), "other-state"), state.State{Profile: "kubernetes", Cluster: state.Cluster{Provider: k3d.Name}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	// Someone else's cluster uses the same node and tools images, which they pulled first: for
	// occ's runs these images existed before, so `down` must leave them.
	for _, img := range []pins.Image{b.set.K3s.Image, b.set.K3d.ToolsImage} {
		if _, err := images.Present(ctx, images.PresentOptions{Engine: b.engine.Verbs(), Image: img, Recorder: rec}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { b.Engine.Forget(b.set.K3s.Image.DigestReference(), b.set.K3d.ToolsImage.DigestReference()) })
	p, err := k3d.New(k3d.Options{Engine: b.engine, ToolsImage: b.set.K3d.ToolsImage.DigestReference()})
	if err != nil {
		t.Fatal(err)
	}
	port := freeLoopbackPort(t)
	req := k3d.Request{Name: "occ-dev-u" + strings.ToLower(rand.Text()[:10]), Owner: rec.State().Owner(), NodeImage: b.set.K3s.Image,
		StateDir: t.TempDir(), Settings: k3d.Settings{APIPort: port}, Recorder: rec}
	c, err := p.Create(ctx, req)
	if err != nil {
		t.Fatalf("create the unrelated cluster: %v", err)
	}
	u := &unrelatedCluster{provider: p, id: k3d.Identity{Name: req.Name, Owner: req.Owner, UID: c.UID}}
	t.Cleanup(func() {
		if err := p.Delete(context.Background(), u.id); err != nil {
			t.Errorf("cleanup of the unrelated cluster: %v", err)
		}
	})
	u.containers = b.containerIDs(t, req.Name)
	if len(u.containers) == 0 {
		t.Fatal("the unrelated cluster has no containers")
	}
	return u
}

func (b *k3dBed) containerIDs(t testing.TB, name string) []string {
	t.Helper()
	cs, err := b.engine.API.ContainerList(context.Background(), container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", "k3d.cluster="+name))})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range cs {
		if c.State != "running" {
			t.Errorf("container %v of cluster %s is %s", c.Names, name, c.State)
		}
		ids = append(ids, c.ID)
	}
	slices.Sort(ids)
	return ids
}

// assertUntouched checks the unrelated cluster is exactly as it was: the same running containers,
// and its API still answering with its kube-system UID.
func (u *unrelatedCluster) assertUntouched(t testing.TB, b *k3dBed) {
	t.Helper()
	if got := b.containerIDs(t, u.id.Name); !slices.Equal(got, u.containers) {
		t.Errorf("the unrelated cluster's containers changed: %v, want %v", got, u.containers)
	}
	st, err := u.provider.Inspect(context.Background(), u.id)
	if err != nil || st.State != k3d.StateExists || !st.UIDVerified {
		t.Errorf("the unrelated cluster: %+v (%v), want it to exist with its kube-system UID", st, err)
	}
}

// stepTimes records every step's end (and the time the run took), from the progress events.
type stepTimes struct {
	mu    sync.Mutex
	lines []stepTime
	begin map[string]time.Time
	start time.Time
}

type stepTime struct {
	Step, Lane   string
	Start, Took  time.Duration
	Failed       bool
	Concurrently bool
}

func newStepTimes() *stepTimes { return &stepTimes{begin: map[string]time.Time{}, start: time.Now()} }

func (s *stepTimes) sink(e progress.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch e.Kind {
	case progress.Begin:
		s.begin[e.Step] = time.Now()
	case progress.End:
		s.lines = append(s.lines, stepTime{Step: e.Step, Lane: e.Lane, Start: s.begin[e.Step].Sub(s.start), Took: e.Elapsed, Failed: e.Err != nil})
	}
}

func (s *stepTimes) table() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, l := range s.lines {
		lane := l.Lane
		if lane == "" {
			lane = "-"
		}
		b.WriteString(strings.Join([]string{padRight(l.Step, 62), padRight(lane, 10), padLeft(l.Start.Round(10*time.Millisecond).String(), 8), padLeft(l.Took.Round(10*time.Millisecond).String(), 8)}, " ") + "\n")
	}
	return b.String()
}

func padRight(s string, n int) string { return s + strings.Repeat(" ", max(0, n-len(s))) }
func padLeft(s string, n int) string  { return strings.Repeat(" ", max(0, n-len(s))) + s }

// field returns what follows label on the first line of out that starts with it (after the
// indentation), with the padding trimmed.
func field(out, label string) string {
	for _, l := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), label); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}

// stateGone reports whether dir no longer exists.
func stateGone(dir string) bool {
	_, err := os.Stat(dir)
	return errors.Is(err, fs.ErrNotExist)
}

// readyReplicas reads a workload's ready replicas in the recorded cluster.
func readyReplicas(t testing.TB, kc kubernetes.Interface, kind, ns, name string) int32 {
	t.Helper()
	ctx := context.Background()
	switch kind {
	case "StatefulSet":
		s, err := kc.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s.Status.ReadyReplicas
	default:
		d, err := kc.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d.Status.ReadyReplicas
	}
}
