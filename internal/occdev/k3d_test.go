package occdev_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/charts/chartstest"
	"github.com/openclaw/occ/internal/occdev/cluster/k3d"
	"github.com/openclaw/occ/internal/occdev/helmrelease"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/observe"
	"github.com/openclaw/occ/internal/occdev/occdevtest"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/progress"
)

// A developer on a laptop with Docker runs `occ dev up` (the default k3d provider, the
// Kubernetes-only profile) and later `occ dev down`, next to a k3d cluster of their own, images
// they pulled themselves and their own kubeconfig. One bed and one unrelated cluster serve every
// scenario; each scenario that needs a cluster of occ's makes its own, as `up` would.
func TestK3dDevEnvironment(t *testing.T) {
	// The binary is built first, with the Go caches of the environment the test started in (the
	// bed gives the user a HOME of their own); TestMain removes it once every test has run.
	startBuild()
	b := newK3dBed(t, nil)
	unrelated := b.createUnrelatedCluster(t)
	// The node and tools images were pulled by the unrelated cluster's owner: they existed before
	// every run, so no run may remove them.
	nodeID, toolsID := b.imageID(t, b.set.K3s.Image.DigestReference()), b.imageID(t, b.set.K3d.ToolsImage.DigestReference())
	if nodeID == "" || toolsID == "" {
		t.Fatal("the node and tools images are not present before the runs")
	}
	t.Cleanup(func() {
		unrelated.assertUntouched(t, b)
		b.assertUserKubeconfig(t)
		if b.imageID(t, b.set.K3s.Image.DigestReference()) != nodeID || b.imageID(t, b.set.K3d.ToolsImage.DigestReference()) != toolsID {
			t.Errorf("the node or tools image that existed before was removed or replaced")
		}
	})

	t.Run("up status and down through the library", func(t *testing.T) { testUpStatusDown(t, b) })
	t.Run("routing controllers from pins that record their images", func(t *testing.T) { testRoutingControllers(t, b, false) })
	t.Run("routing controllers in the Compose profile", func(t *testing.T) { testRoutingControllers(t, b, true) })
	t.Run("a third profile registered by a test runs up status reload and down", func(t *testing.T) { testThirdProfile(t, b) })
	t.Run("up status and down through the built CLI", func(t *testing.T) { testBuiltCLI(t, b) })
	t.Run("the default Compose profile publishes the Gateway on the node", func(t *testing.T) { testComposeProfile(t, b) })
	t.Run("status sees a changed image then a missing cluster then one not ours", func(t *testing.T) { testStatusOfChangedEnvironment(t, b) })
	t.Run("a wrong pin is refused naming both digests", func(t *testing.T) { testWrongPin(t, b) })
	t.Run("a re-tagged local image is refused naming both digests", func(t *testing.T) { testRetaggedImage(t, b) })
	t.Run("a chart that ignores the image values is refused", func(t *testing.T) { testChartIgnoresImages(t, b) })
	t.Run("the v0.1 Gateway chart installs with a node resolver", func(t *testing.T) { testV01GatewayChartInstalls(t, b) })
	t.Run("a chart that ignores the supervisor key is refused", func(t *testing.T) { testChartIgnoresSupervisorKey(t, b) })
	t.Run("a manifest without the Agent Sandbox CRDs is refused", func(t *testing.T) { testManifestWithoutCRDs(t, b) })
	t.Run("Ctrl-C during cluster creation leaves nothing", func(t *testing.T) { testInterruptDuringCreation(t, b) })
	t.Run("a failed cluster creation keeps the state for down", func(t *testing.T) { testCreationFails(t, b) })
	t.Run("a failure after each step", func(t *testing.T) { testFailureAfterEachStep(t, b) })
	t.Run("SIGKILL after each step then down", func(t *testing.T) { testSignalAtEachStep(t, b, syscall.SIGKILL, killSubset) })
	t.Run("Ctrl-C after each step", func(t *testing.T) { testSignalAtEachStep(t, b, syscall.SIGINT, killSubsetOtherEngines) })
	t.Run("SIGKILL during down then down again", func(t *testing.T) { testKillDuringDown(t, b) })
}

// testUpStatusDown: `up` creates the cluster, imports and verifies the three images (the node's
// own containerd holds each under its pinned reference with the config digest the registry
// served) and installs the platform (the Gateway and the Agent Sandbox controller become ready,
// which the played kubelet grants only when their images are in the node: pullPolicy Never);
// `status` sees it all; `down` leaves nothing of it.
func testUpStatusDown(t *testing.T, b *k3dBed) {
	ctx := context.Background()
	b.forgetProducts(t)
	opts := b.options(t)
	downAtEnd(t, opts.StateDir)
	times := newStepTimes()
	// The Sandbox image's lane is held after its import until the Gateway is installed, ready and
	// healthy: its install waits only for the image its chart starts (the Gateway's), so it
	// overlaps the import and verification of the images it merely names for Sandboxes.
	healthy := make(chan struct{})
	var once sync.Once
	opts.Progress = func(e progress.Event) {
		times.sink(e)
		if e.Kind == progress.End && e.Step == "Check Gateway health" && e.Err == nil {
			once.Do(func() { close(healthy) })
		}
	}
	opts.Seams().AfterStep = func(name string) error {
		if name != "Import the OpenShell Sandbox image into the cluster" {
			return nil
		}
		select {
		case <-healthy:
			return nil
		case <-time.After(3 * time.Minute):
			return errors.New("the Gateway did not become healthy while the Sandbox image waited to be verified: its install waits for more than the images its chart starts")
		}
	}
	sum, err := occdev.Up(ctx, opts)
	t.Logf("up: step, lane, start, took:\n%s", times.table())
	if err != nil {
		t.Fatalf("up: %v\nlog:\n%s", err, opts.Log)
	}
	assertImportBesidePlatform(t, opts, times)
	assertPlatformBesideClusterFinish(t, b, opts, times)
	name, dir := opts.K3d().ClusterName, opts.StateDir
	node := "k3d-" + name + "-server-0"
	vols := b.volumesOf(t, name)

	if sum.ClusterProvider != "k3d" || sum.Cluster != name || sum.Context != "k3d-"+name || sum.Kubeconfig != filepath.Join(dir, "kubeconfig") ||
		sum.ContainerKubeconfig != filepath.Join(dir, "container-kubeconfig") || !strings.HasPrefix(sum.APIServer, "https://127.0.0.1:") ||
		!strings.Contains(sum.Engine, b.Engine.Socket) || sum.DownCommand != "occ dev down --state-dir "+dir || len(sum.Images) != 3 ||
		!strings.Contains(sum.ControlPlane, "not started") {
		t.Errorf("summary: %+v", sum)
	}
	for file, mode := range map[string]os.FileMode{sum.Kubeconfig: 0o600, sum.ContainerKubeconfig: 0o644, dir: os.ModeDir | 0o700} {
		if fi, err := os.Stat(file); err != nil || fi.Mode() != mode {
			t.Errorf("%s: mode %v (%v), want %v", file, fi.Mode(), err, mode)
		}
	}

	st, err := state.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Engine == nil || st.Engine.Endpoint != b.Engine.Host || st.Engine.Kind != b.kind || st.Cluster.Provider != "k3d" || st.Cluster.UID == "" || st.Cluster.NodeAddress != node {
		t.Errorf("recorded engine %+v, cluster %+v", st.Engine, st.Cluster)
	}
	count := map[state.Type]int{}
	for _, o := range st.Objects {
		count[o.Type]++
		if o.Type == images.TypeClusterImage && !slices.ContainsFunc(b.product, func(p productPin) bool { return p.pin.Name() == o.Name && p.pin.Digest == o.Digest && p.config == o.ID }) {
			t.Errorf("cluster image record %+v is not a product pin with its config digest", o)
		}
	}
	// The node and tools images existed: only the three product pulls are recorded.
	// Each pull is recorded as a pulled image, whichever engine it went into.
	if count[k3d.TypeCluster] != 1 || count[images.TypePulledImage] != 3 || count[images.TypeClusterImage] != 3 || count[helmrelease.TypeRelease] != 1 || count[kubeobj.TypeObject] == 0 {
		t.Errorf("records by type: %v", count)
	}

	digests := b.nodeConfigDigests(t, node)
	for _, p := range b.product {
		if got := digests[p.pin.DigestReference()]; got != p.config {
			t.Errorf("node %s holds %s with config %q, want %s (the registry's)", node, p.pin.DigestReference(), got, p.config)
		}
	}
	// The import unpacks each image into the node's snapshotter as it goes, ready for a Pod.
	for _, p := range b.product {
		if !b.nodeUnpacked(t, node, p.config) {
			t.Errorf("node %s holds %s without its unpacked snapshot", node, p.pin.DigestReference())
		}
	}
	kc := kubeClient(t, st.Cluster)
	if n := readyReplicas(t, kc, "StatefulSet", "oce-system", occdev.GatewayServiceName); n != 1 {
		t.Errorf("Gateway StatefulSet has %d ready replicas", n)
	}
	if n := readyReplicas(t, kc, "Deployment", "agent-sandbox-system", "agent-sandbox-controller"); n != 1 {
		t.Errorf("Agent Sandbox controller has %d ready replicas", n)
	}
	pods, err := kc.CoreV1().Pods("oce-system").List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("Gateway pods: %v (%v)", pods, err)
	}
	if c := pods.Items[0].Spec.Containers[0]; c.Image != b.product[0].pin.DigestReference() || c.ImagePullPolicy != corev1.PullNever {
		t.Errorf("Gateway container runs %s with pullPolicy %s", c.Image, c.ImagePullPolicy)
	}

	status, err := occdev.GetStatus(ctx, occdev.StatusOptions{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if status.ClusterState != observe.ClusterExists || status.Engine != b.Engine.Host || status.EngineKind != b.kind || !status.Reachable || len(status.Images) != 3 {
		t.Errorf("status: cluster %q (%s), engine %q, reachable %v, %d images", status.ClusterState, status.ClusterDetail, status.Engine, status.Reachable, len(status.Images))
	}
	for _, im := range status.Images {
		if im.State != observe.ImageDigestMatches {
			t.Errorf("status of %s: %s (%s)", im.Reference, im.State, im.Detail)
		}
	}
	for _, o := range status.Objects {
		if o.State != state.Present {
			t.Errorf("status of %s %s: %s (%s)", o.Type, o.Name, o.State, o.Detail)
		}
	}
	b.assertUserKubeconfig(t)

	start := time.Now()
	res, err := occdev.Down(ctx, occdev.DownOptions{StateDir: dir})
	if err != nil {
		t.Fatalf("down: %v", err)
	}
	t.Logf("down took %s and removed %d records", time.Since(start).Round(time.Millisecond), len(res.Removed))
	if left := b.leftovers(t, name, vols); len(left) > 0 {
		t.Errorf("after down: %v", left)
	}
	if !stateGone(dir) {
		t.Errorf("state directory %s left after down", dir)
	}
}

// assertPlatformBesideClusterFinish requires, on Docker, the platform's first object to be
// created before the cluster's step ended: the k3d provider hands the cluster over once its API
// answers (cluster.Request.Ready), and the platform is installed while k3d finishes the cluster.
// On Podman, whose creation may be retried with a new node, the hand-over waits for k3d's end.
func assertPlatformBesideClusterFinish(t *testing.T, b *k3dBed, opts occdev.UpOptions, times *stepTimes) {
	t.Helper()
	end := map[string]time.Duration{}
	times.mu.Lock()
	for _, l := range times.lines {
		end[l.Step] = l.Start + l.Took
	}
	times.mu.Unlock()
	create, namespace := end["Create k3d cluster "+opts.K3d().ClusterName], end["Create the platform namespace"]
	if create == 0 || namespace == 0 {
		t.Fatalf("no end of the cluster's step (%s) or of the platform namespace's (%s)", create, namespace)
	}
	if b.kind == state.EnginePodman {
		if namespace < create {
			t.Errorf("on Podman the platform namespace was created at %s, before the cluster's step ended at %s", namespace, create)
		}
		return
	}
	if namespace >= create {
		t.Errorf("the platform namespace was created at %s, after the cluster's step ended at %s: the platform waited for k3d to finish the cluster", namespace, create)
	}
}

// pullAndImport is the group that creates the cluster while each OpenShell image is pulled,
// imported and verified in a lane of its own, the cluster's own images are checked in another,
// and the platform is installed in the last: the k3d lane first (the other lanes wait on its
// cluster), the platform lane last (it waits on the image lanes before it).
var pullAndImport = map[string][]string{
	"k3d":        nil, // its one step names the cluster
	"gateway":    imageLaneSteps("OpenShell Gateway"),
	"sandbox":    imageLaneSteps("OpenShell Sandbox"),
	"supervisor": imageLaneSteps("OpenShell supervisor"),
	"import":     {"Check that the engine's images carry the pinned digests"},
	"platform": {"Create the platform namespace", "Create RuntimeClass " + occdev.RuntimeClassName, "Apply the Agent Sandbox manifest",
		"Create the Gateway JWT key Secret", "Apply the development NetworkPolicies and RBAC", "Install the OpenShell Gateway chart",
		"Wait for the Agent Sandbox controller and the Gateway", "Check Gateway health"},
}

// pullAndImportGroup names that group.
const pullAndImportGroup = "Create the cluster and install the platform while pulling, importing and verifying the images"

// imageLaneSteps are the steps of one OpenShell image's lane, by the image's title.
func imageLaneSteps(title string) []string {
	return []string{"Pull the " + title + " image", "Import the " + title + " image into the cluster",
		"Verify the " + title + " image in the node and tag it for the chart"}
}

// assertImportBesidePlatform: each OpenShell image was pulled, imported and verified in its own
// lane beside the cluster's creation, the cluster's own images were checked in another, and the
// platform (its objects, the Gateway, the wait and its Health) was installed by the last lane of
// the same group (each step ran in its lane); the group ends before the Installation is written.
func assertImportBesidePlatform(t *testing.T, opts occdev.UpOptions, times *stepTimes) {
	t.Helper()
	ran := map[string]string{}
	times.mu.Lock()
	for _, l := range times.lines {
		ran[l.Step] = l.Lane
	}
	times.mu.Unlock()
	for lane, steps := range pullAndImport {
		for _, s := range steps {
			if got, ok := ran[s]; !ok || got != lane {
				t.Errorf("step %q ran in lane %q (ran: %v), want lane %q", s, got, ok, lane)
			}
		}
	}
	dr := planUp(t, opts)
	index := map[string]int{}
	for i, s := range dr.Steps {
		index[s.Name] = i
	}
	var create *occdev.PlannedStep
	var walk func([]occdev.PlannedStep)
	walk = func(steps []occdev.PlannedStep) {
		for i := range steps {
			if steps[i].Name == pullAndImportGroup {
				create = &steps[i]
			}
			for _, l := range steps[i].Lanes {
				walk(l.Steps)
			}
		}
	}
	walk(dr.Steps)
	if create == nil {
		t.Fatal("the flow has no group that creates the cluster while pulling and importing the images")
	}
	lanes, order := map[string][]string{}, []string{}
	for _, l := range create.Lanes {
		order = append(order, l.Name)
		lanes[l.Name] = nil
		for _, st := range l.Steps {
			lanes[l.Name] = append(lanes[l.Name], st.Name)
		}
	}
	if want := []string{"Create k3d cluster " + opts.K3d().ClusterName}; !reflect.DeepEqual(lanes["k3d"], want) || order[0] != "k3d" || order[len(order)-1] != "platform" {
		t.Errorf("the cluster group's lanes are %q in order %q, want the k3d lane %q first and the platform lane last", lanes, order, want)
	}
	delete(lanes, "k3d")
	want := maps.Clone(pullAndImport)
	delete(want, "k3d")
	if !reflect.DeepEqual(lanes, want) {
		t.Errorf("the cluster group's other lanes are %q, want %q", lanes, want)
	}
	if cluster, inst := index["Fetch the artifacts while preparing the cluster"], index["Write the Installation"]; cluster != 2 || inst != 3 {
		t.Errorf("the cluster's group is step %d and the Installation step %d, want 3 and 4 (nothing of the platform left between them)", cluster+1, inst+1)
	}
}

// testBuiltCLI runs the shipped binary the way a user would: the dry run lists the cluster and
// the images with their digests, `up` prints the summary with the exact `down` command, `status`
// shows the cluster and the imported images, `down` leaves nothing.
func testBuiltCLI(t *testing.T, b *k3dBed) {
	b.forgetProducts(t)
	bin := buildOCC(t)
	opts := b.options(t)
	downAtEnd(t, opts.StateDir)
	// The user selects the node image with OCC_DEVELOPMENT_K3S_IMAGE by its release tag, in a
	// repository of their own registry (a mirror): up resolves the tag there, says so, pulls
	// that digest and creates the node from it; down removes the image it pulled.
	// Podman's API resolves no tag: there up refuses the tag, saying so, and the user gives the
	// image by digest.
	selected := b.tagNodeImage(t, "occ-bed/mirror/k3s")
	run := func(args ...string) (string, string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(t.TempDir(), "cache"), "OCC_DEVELOPMENT_STATE_DIRECTORY="+opts.StateDir,
			"OCC_DEVELOPMENT_K3S_IMAGE="+selected.String())
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		return out.String(), errOut.String(), err
	}
	up := []string{"dev", "up", "--cluster-provider", "k3d", "--control-plane", "kubernetes", "--cluster-name", opts.K3d().ClusterName,
		"--pin-file", b.pinFile, "--openshell-archive", b.archive, "--gateway-endpoint", opts.GatewayEndpoint, "--startup-timeout", "3m", "--engine", string(b.kind)}

	out, errOut, err := run(append(up, "--dry-run", "-v")...)
	if err != nil {
		t.Fatalf("dry run: %v\n%s\n%s", err, out, errOut)
	}
	for _, want := range append(b.productRefs(), "k3d cluster "+opts.K3d().ClusterName, "Engine:          "+b.kind.Name()+" "+b.engine.Identity.Version+" at "+b.Engine.Host, "Create k3d cluster "+opts.K3d().ClusterName,
		"Import the OpenShell Gateway image into the cluster", "pullPolicy Never", "Control plane:   would not start",
		"k3sNode: "+selected.String(), "(the k3s image OCC_DEVELOPMENT_K3S_IMAGE selects, "+selected.String()+")") {
		if !strings.Contains(out, want) {
			t.Errorf("dry run lacks %q:\n%s", want, out)
		}
	}
	if !stateGone(opts.StateDir) {
		t.Fatal("the dry run created the state directory")
	}

	resolved := selected.Name() + "@" + b.set.K3s.Image.Digest
	if b.kind == state.EnginePodman {
		_, errOut, err = run(up...)
		if err == nil || !strings.Contains(errOut, "Podman's API resolves no tag to a digest") || !strings.Contains(errOut, selected.String()+"@sha256:<digest>") {
			t.Fatalf("up on Podman with a node image by tag: %v\n%s", err, errOut)
		}
		if left := b.leftovers(t, opts.K3d().ClusterName, nil); len(left) > 0 || !stateGone(opts.StateDir) || b.imageID(t, resolved) != "" {
			t.Fatalf("the refused tag left %v (state gone: %v)", left, stateGone(opts.StateDir))
		}
		selected.Digest = b.set.K3s.Image.Digest
	}
	out, errOut, err = run(up...)
	if err != nil {
		t.Fatalf("occ dev up: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	t.Logf("occ dev up:\n%s", out)
	if selected.Digest == "" && !strings.Contains(out, selected.String()+" is a tag (from OCC_DEVELOPMENT_K3S_IMAGE): resolved to "+b.set.K3s.Image.Digest) {
		t.Errorf("up does not say which digest the selected tag resolved to:\n%s", out)
	}
	if node, err := b.engine.API.ContainerInspect(context.Background(), "k3d-"+opts.K3d().ClusterName+"-server-0"); err != nil || node.Config.Image != resolved {
		t.Errorf("the node does not run the selected image by its resolved digest %s: %v", resolved, err)
	} else if b.kind != state.EnginePodman && b.imageID(t, resolved) == "" {
		// (Podman names an image by digest only while the digest is one of its names: the
		// node running it, checked above, is what shows it there.)
		t.Errorf("the selected image %s is not in the engine", resolved)
	}
	for label, want := range map[string]string{
		"Engine:":        b.kind.Name() + " " + b.engine.Identity.Version + " at " + b.Engine.Host,
		"Context:":       "k3d-" + opts.K3d().ClusterName,
		"Kubeconfig:":    filepath.Join(opts.StateDir, "kubeconfig") + " (written by occ; your kubeconfig and current context are untouched)",
		"Containers:":    filepath.Join(opts.StateDir, "container-kubeconfig"),
		"Images:":        b.product[0].pin.DigestReference() + " (verified in the node)",
		"Control plane:": "not started",
	} {
		if got := field(out, label); !strings.HasPrefix(got, want) {
			t.Errorf("up summary %s %q, want it to start with %q", label, got, want)
		}
	}
	if !strings.Contains(out, b.Engine.Host) || !strings.HasSuffix(out, "Remove everything it created with:\n  "+bin+" dev down --state-dir "+opts.StateDir+"\n") {
		t.Errorf("up output lacks the engine or ends without the exact down command")
	}
	vols := b.volumesOf(t, opts.K3d().ClusterName)

	out, errOut, err = run("dev", "status")
	t.Logf("occ dev status:\n%s", out)
	if err != nil {
		t.Fatalf("occ dev status: %v\n%s\n%s", err, out, errOut)
	}
	if !strings.Contains(out, "k3d cluster:   exists") || strings.Count(out, ": digest matches") != 3 || !strings.Contains(out, "Engine:        "+b.Engine.Host) ||
		!strings.Contains(out, "Nodes:         k3d-"+opts.K3d().ClusterName+"-server-0 (Ready, v") {
		t.Errorf("status:\n%s", out)
	}
	b.assertUserKubeconfig(t)

	out, errOut, err = run("dev", "down")
	t.Logf("occ dev down:\n%s", out)
	if err != nil {
		t.Fatalf("occ dev down: %v\n%s\n%s", err, out, errOut)
	}
	if !strings.Contains(out, "removed k3d cluster "+opts.K3d().ClusterName) {
		t.Errorf("down output:\n%s", out)
	}
	if left := b.leftovers(t, opts.K3d().ClusterName, vols); len(left) > 0 {
		t.Errorf("after occ dev down: %v", left)
	}
	if id := b.imageID(t, resolved); id != "" {
		t.Errorf("down left the selected node image it pulled: %s (%s)", resolved, id)
	}
	if !stateGone(opts.StateDir) {
		t.Error("state directory left after occ dev down")
	}
}

// tagNodeImage copies the bed's node image (its index, every entry) into repo of the bed's
// registry under its k3s release tag, as a mirror serves it, and returns that tag reference (no
// digest): the same digest under another name, which no engine holds before the run.
func (b *k3dBed) tagNodeImage(t *testing.T, repo string) pins.Image {
	t.Helper()
	src, err := name.ParseReference(b.set.K3s.Image.DigestReference(), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(src)
	if err != nil {
		t.Fatalf("read the node image from the bed's registry: %v", err)
	}
	img := pins.Image{Registry: b.set.K3s.Image.Registry, Repository: repo, Tag: b.set.K3s.Image.Tag}
	dst, err := name.NewTag(img.String(), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err == nil {
			err = remote.WriteIndex(dst, idx)
		}
		if err != nil {
			t.Fatalf("copy the node image's index to %s: %v", dst, err)
		}
		return img
	}
	one, err := desc.Image()
	if err == nil {
		err = remote.Write(dst, one)
	}
	if err != nil {
		t.Fatalf("copy the node image to %s: %v", dst, err)
	}
	return img
}

// testComposeProfile: `occ dev up` with no profile chosen (Compose, the default) makes the same
// cluster and platform, with the Gateway as NodePort 30051 and an Installation that reaches it at
// the node's name on the cluster's Docker network, where the Compose control plane runs; the
// container kubeconfig names the node there too. Run outside an OCE checkout, `up` stops after
// the sandbox platform, and the summary says exactly how to add the control plane.
func testComposeProfile(t *testing.T, b *k3dBed) {
	ctx := context.Background()
	b.forgetProducts(t)
	opts := b.options(t)
	opts.ControlPlane = ""
	downAtEnd(t, opts.StateDir)
	sum, err := occdev.Up(ctx, opts)
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	node := "k3d-" + opts.K3d().ClusterName + "-server-0"
	if sum.Namespace != "openshell-system" || sum.GatewayEndpoint != "http://"+node+":30051" || !strings.Contains(sum.ControlPlane, "no OpenClaw Enterprise checkout found") ||
		!strings.Contains(sum.ControlPlane, "To add the OCE control plane, remove this environment (occ dev down --state-dir "+opts.StateDir+") and run occ dev up again from an OpenClaw Enterprise checkout, or with --repository <checkout>") {
		t.Errorf("summary: %+v", sum)
	}
	st, err := state.Read(opts.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := kubeClient(t, st.Cluster).CoreV1().Services("openshell-system").Get(ctx, occdev.GatewayServiceName, metav1.GetOptions{})
	if err != nil || svc.Spec.Type != corev1.ServiceTypeNodePort || svc.Spec.Ports[0].NodePort != occdev.GatewayNodePort {
		t.Errorf("Gateway Service: %+v (%v)", svc.Spec, err)
	}
	kc, err := os.ReadFile(sum.ContainerKubeconfig)
	if err != nil || !strings.Contains(string(kc), "server: https://"+node+":6443") {
		t.Errorf("container kubeconfig (%v):\n%s", err, kc)
	}
	vols := b.volumesOf(t, opts.K3d().ClusterName)
	if _, err := occdev.Down(ctx, occdev.DownOptions{StateDir: opts.StateDir}); err != nil {
		t.Fatalf("down: %v", err)
	}
	if left := b.leftovers(t, opts.K3d().ClusterName, vols); len(left) > 0 || !stateGone(opts.StateDir) {
		t.Errorf("after down: %v (state gone: %v)", left, stateGone(opts.StateDir))
	}
}

// testStatusOfChangedEnvironment: after `up`, someone re-tags an imported image in the node,
// then deletes the cluster (k3d cluster delete), then creates another cluster of the same name.
// `status` reports the image's digest as differing, then the cluster as missing, then as not
// ours; `down` leaves the other cluster alone (its containers untouched), forgets what was
// recorded inside the recorded cluster without contacting the other one, removes the images it
// pulled, and deletes the state directory.
func testStatusOfChangedEnvironment(t *testing.T, b *k3dBed) {
	ctx := context.Background()
	b.forgetProducts(t)
	opts := b.options(t)
	downAtEnd(t, opts.StateDir)
	if _, err := occdev.Up(ctx, opts); err != nil {
		t.Fatalf("up: %v", err)
	}
	status := func() *observe.Status {
		t.Helper()
		st, err := occdev.GetStatus(ctx, occdev.StatusOptions{StateDir: opts.StateDir})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	node := "k3d-" + opts.K3d().ClusterName + "-server-0"
	// The Gateway's pinned name in the node now points at the sandbox image's content.
	gw, sb := b.product[0].pin.DigestReference(), b.product[1].pin.DigestReference()
	if res, err := b.Engine.Exec(ctx, node, false, "ctr", "-n", "k8s.io", "images", "tag", "--force", sb, gw); err != nil || res.ExitCode != 0 {
		t.Fatalf("re-tag in the node: %v %s", err, res.Stderr)
	}
	st := status()
	for _, im := range st.Images {
		want := observe.ImageDigestMatches
		if im.Reference == gw {
			want = observe.ImageDigestDiffers
		}
		if im.State != want {
			t.Errorf("status of %s after the re-tag: %s (%s), want %s", im.Reference, im.State, im.Detail, want)
		}
	}

	rec, err := state.Read(opts.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	var id k3d.Identity
	for _, o := range rec.Objects {
		if o.Type == k3d.TypeCluster {
			if id, err = k3d.IdentityOf(o, rec.Cluster.UID); err != nil {
				t.Fatal(err)
			}
		}
	}
	p, err := k3d.New(k3d.Options{Engine: b.engine, ToolsImage: b.set.K3d.ToolsImage.DigestReference()})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Delete(ctx, id); err != nil {
		t.Fatalf("delete the cluster behind occ's back: %v", err)
	}
	if st := status(); st.ClusterState != observe.ClusterMissing || st.Reachable {
		t.Errorf("status after the cluster was deleted: %q (%s), reachable %v", st.ClusterState, st.ClusterDetail, st.Reachable)
	}

	other, err := state.Create(filepath.Join(t.TempDir(), "someone-else"), state.State{Profile: "kubernetes", Cluster: state.Cluster{Provider: k3d.Name}})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	port := freeLoopbackPort(t)
	theirs := k3d.Request{Name: opts.K3d().ClusterName, Owner: other.State().Owner(), NodeImage: b.set.K3s.Image, StateDir: t.TempDir(), Settings: k3d.Settings{APIPort: port}, Recorder: other}
	c, err := p.Create(ctx, theirs)
	if err != nil {
		t.Fatalf("someone else's cluster of the same name: %v", err)
	}
	theirID := k3d.Identity{Name: theirs.Name, Owner: theirs.Owner, UID: c.UID}
	t.Cleanup(func() {
		if err := p.Delete(context.Background(), theirID); err != nil {
			t.Errorf("cleanup of the other cluster: %v", err)
		}
	})
	containers := b.containerIDs(t, opts.K3d().ClusterName)
	if st := status(); st.ClusterState != observe.ClusterNotOurs || !strings.Contains(st.ClusterDetail, "owner label") {
		t.Errorf("status with another cluster of the name: %q (%s)", st.ClusterState, st.ClusterDetail)
	}

	res, err := occdev.Down(ctx, occdev.DownOptions{StateDir: opts.StateDir})
	if err != nil {
		t.Fatalf("down: %v", err)
	}
	if len(res.LeftAlone) != 1 || res.LeftAlone[0] != "k3d cluster "+opts.K3d().ClusterName {
		t.Errorf("left alone: %v, want only the other cluster", res.LeftAlone)
	}
	if got := b.containerIDs(t, opts.K3d().ClusterName); !slices.Equal(got, containers) {
		t.Errorf("down touched the other cluster's containers: %v, want %v", got, containers)
	}
	if st, err := p.Inspect(ctx, theirID); err != nil || st.State != "exists" || !st.UIDVerified {
		t.Errorf("the other cluster after down: %+v (%v)", st, err)
	}
	if !stateGone(opts.StateDir) {
		t.Error("state directory left after down")
	}
	for _, ref := range b.productRefs() {
		if id := b.imageID(t, ref); id != "" {
			t.Errorf("pulled image %s left after down", ref)
		}
	}
}

var (
	buildOnce sync.Once
	buildDone = make(chan struct{})
	builtOCC  string
	buildErr  error
)

// startBuild builds cmd/occ once per test binary in the background, with the Makefile's
// settings and the environment as it is now (HOME decides where Go's build cache is).
func startBuild() {
	buildOnce.Do(func() {
		cmd := exec.Command("go", "build", "-trimpath", "-o", "", "./cmd/occ")
		dir, err := os.MkdirTemp("", "occ-bin-")
		if err != nil {
			buildErr = err
			close(buildDone)
			return
		}
		builtOCC = filepath.Join(dir, "occ")
		cmd.Args[4] = builtOCC
		cmd.Dir = filepath.Join("..", "..")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		go func() {
			defer close(buildDone)
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("go build ./cmd/occ: %v\n%s", err, out)
			}
		}()
	})
}

// removeBuild removes the binary's directory once the build (if one started) has finished.
func removeBuild() {
	buildOnce.Do(func() { close(buildDone) }) // no build started: nothing to wait for
	<-buildDone
	if builtOCC != "" {
		_ = os.RemoveAll(filepath.Dir(builtOCC))
	}
}

// buildOCC waits for the binary startBuild builds.
func buildOCC(t *testing.T) string {
	t.Helper()
	startBuild()
	<-buildDone
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtOCC
}

// downAtEnd runs `down` when a test ends with the state directory still there (a test that
// failed half-way), so the shared engine keeps nothing of it.
func downAtEnd(t *testing.T, dir string) {
	t.Cleanup(func() {
		if stateGone(dir) {
			return
		}
		if _, err := occdev.Down(context.Background(), occdev.DownOptions{StateDir: dir}); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
}

// upFails runs `up` expecting it to fail, and checks the rollback left nothing: no state
// directory, no object of the cluster, no staging tag, no image it pulled.
func upFails(t *testing.T, b *k3dBed, opts occdev.UpOptions, want ...string) error {
	t.Helper()
	downAtEnd(t, opts.StateDir)
	_, err := occdev.Up(context.Background(), opts)
	if err == nil {
		t.Fatal("up succeeded")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
	if !stateGone(opts.StateDir) {
		t.Errorf("state directory kept: %v", err)
	}
	if left := b.leftovers(t, opts.K3d().ClusterName, nil); len(left) > 0 {
		t.Errorf("left after the refusal: %v", left)
	}
	return err
}

// testWrongPin: the pin file names the Gateway with a digest its registry does not serve for
// it (the Sandbox image's): the pull by digest fails, and the refusal names the pinned digest
// and the one the registry serves for the pinned tag, before anything is installed.
func testWrongPin(t *testing.T, b *k3dBed) {
	b.forgetProducts(t)
	set := *b.set
	wrong := set.OpenShell.Images.Gateway
	wrong.Digest = b.product[1].pin.Digest
	set.OpenShell.Images.Gateway = wrong
	opts := b.options(t)
	opts.PinFile = b.writePins(&set)
	upFails(t, b, opts, "the registry serves "+wrong.Name()+":"+wrong.Tag+" as "+b.product[0].pin.Digest, "but the pin says "+wrong.Digest, "the pin is wrong", "rolled back")
}

// testRetaggedImage: the registry cannot be reached, and the engine has an image under the
// pinned name and tag that is something else (retagged or built locally): occ refuses it, naming
// its image ID and the pinned digest, and leaves it alone.
func testRetaggedImage(t *testing.T, b *k3dBed) {
	ctx := context.Background()
	b.forgetProducts(t)
	set := *b.set
	gw := set.OpenShell.Images.Gateway
	gw.Registry = "127.0.0.1:" + deadPort(t)
	set.OpenShell.Images.Gateway = gw
	local := gw.Name() + ":" + gw.Tag
	// The sandbox stand-in's content, re-tagged with the Gateway's pinned name and tag.
	if err := b.engine.API.ImageTag(ctx, b.product[1].local, local); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Engine.Forget(local) })
	localID := b.imageID(t, local)
	opts := b.options(t)
	opts.PinFile = b.writePins(&set)
	upFails(t, b, opts, "the engine has a local "+local+" (image ID "+localID, "that does not carry the pinned "+gw.Digest, "re-tagged or locally built")
	if b.imageID(t, local) != localID {
		t.Error("the re-tagged local image was removed or replaced")
	}
}

// deadPort is a loopback port nothing listens on.
func deadPort(t *testing.T) string {
	t.Helper()
	u := occdevtest.DeadServer(t)
	return u[strings.LastIndex(u, ":")+1:]
}

// testChartIgnoresImages: a Gateway chart whose template hard-codes its image (a values layout
// occ's image values do not reach) is refused when its render is checked, listing the
// offending image and the values keys that were expected to set it; nothing is installed.
func testChartIgnoresImages(t *testing.T, b *k3dBed) {
	b.forgetProducts(t)
	fixture := chartstest.New(t, t.TempDir(), chartstest.Options{Files: map[string]string{
		"deploy/helm/openshell/templates/statefulset.yaml": `apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: openshell-gateway
  namespace: {{ .Release.Namespace }}
spec:
  serviceName: openshell-gateway
  selector:
    matchLabels: {app.kubernetes.io/name: openshell}
  template:
    metadata:
      labels: {app.kubernetes.io/name: openshell}
    spec:
      containers:
        - name: gateway
          image: ghcr.io/nvidia/openshell/gateway:latest
`,
	}})
	set := *b.set
	set.OpenShell.SourceArchive = fixture.Pins.OpenShell.SourceArchive
	opts := b.options(t)
	opts.PinFile, opts.ArchiveFile = b.writePins(&set), fixture.ArchivePath
	upFails(t, b, opts, "Check the images of the rendered Gateway chart", "would make the cluster run images that are not the pinned digests",
		`StatefulSet oce-system/openshell-gateway (openshell/templates/statefulset.yaml) containers[0] gateway: image "ghcr.io/nvidia/openshell/gateway:latest"`,
		"gateway.image.registry, gateway.image.repository, gateway.image.digest", "rolled back")
}

// testInterruptDuringCreation: the user presses Ctrl-C while k3d starts the cluster's node; the
// rollback removes what k3d had made and everything else, and the state directory with it.
func testInterruptDuringCreation(t *testing.T, b *k3dBed) {
	b.forgetProducts(t)
	opts := b.options(t)
	downAtEnd(t, opts.StateDir)
	node := "k3d-" + opts.K3d().ClusterName + "-server-0"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ev, errs := b.engine.API.Events(ctx, events.ListOptions{Filters: filters.NewArgs(
		filters.Arg("type", "container"), filters.Arg("event", "start"), filters.Arg("container", node))})
	var mu sync.Mutex
	var vols []string
	go func() {
		select {
		case <-ev:
			mu.Lock()
			vols = b.volumesOf(t, opts.K3d().ClusterName)
			mu.Unlock()
			cancel() // Ctrl-C
		case <-errs:
		case <-ctx.Done():
		}
	}()
	_, err := occdev.Up(ctx, opts)
	t.Logf("up after Ctrl-C: %v", err)
	if err == nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "rolled back") {
		t.Fatalf("up: %v; want it cancelled and rolled back", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if vols == nil {
		t.Fatalf("the node never started before up ended: %v", err)
	}
	if !stateGone(opts.StateDir) {
		t.Error("state directory kept after an interrupted creation was rolled back")
	}
	if left := b.leftovers(t, opts.K3d().ClusterName, vols); len(left) > 0 {
		t.Errorf("left after Ctrl-C: %v", left)
	}
}

// testCreationFails: k3d itself fails to create the cluster (its start-up timeout passes before
// the node reports k3s up): the rollback removes everything else but keeps the state directory
// with the cluster's record, because a half-made cluster is never assumed gone; `down` then
// checks it from the record and finishes.
func testCreationFails(t *testing.T, b *k3dBed) {
	b.forgetProducts(t)
	opts := b.options(t)
	downAtEnd(t, opts.StateDir)
	opts.StartupTimeout = time.Second
	_, err := occdev.Up(context.Background(), opts)
	t.Logf("up with a failing creation: %v", err)
	if err == nil || !strings.Contains(err.Error(), "Create k3d cluster "+opts.K3d().ClusterName) || !strings.Contains(err.Error(), "is kept with its record") ||
		!strings.Contains(err.Error(), "occ dev down --state-dir "+opts.StateDir) {
		t.Fatalf("up: %v; want the failed creation, the kept state and the down command", err)
	}
	st, err := state.Read(opts.StateDir)
	if err != nil {
		t.Fatalf("state after a failed creation: %v", err)
	}
	if len(st.Objects) != 1 || st.Objects[0].Type != k3d.TypeCluster || st.Objects[0].Name != opts.K3d().ClusterName {
		t.Errorf("kept records: %v, want only the cluster", st.Objects)
	}
	if _, err := occdev.Down(context.Background(), occdev.DownOptions{StateDir: opts.StateDir}); err != nil {
		t.Fatalf("down: %v", err)
	}
	if !stateGone(opts.StateDir) {
		t.Error("state directory left after down")
	}
	if left := b.leftovers(t, opts.K3d().ClusterName, nil); len(left) > 0 {
		t.Errorf("left after down: %v", left)
	}
}

// platformMiddle are the steps whose failure the k3d matrix does not repeat by default:
// once the cluster exists, a failure after any of them is rolled back the same way (the cluster
// is deleted with everything recorded inside it), which the steps around them already show; each
// is shown one by one on the envtest bed (TestFailureAfterEachStepRollsBackCompletely).
var platformMiddle = []string{
	"Create RuntimeClass " + occdev.RuntimeClassName,
	"Apply the Agent Sandbox manifest",
	"Create the Gateway JWT key Secret",
	"Install the OpenShell Gateway chart",
	"Apply the development NetworkPolicies and RBAC",
	"Wait for the Agent Sandbox controller and the Gateway",
	"Check Gateway health",
	// The imports and verifications of the Sandbox and supervisor images fail and roll back
	// exactly as the Gateway image's beside them, which the default matrix runs.
	"Import the OpenShell Sandbox image into the cluster",
	"Import the OpenShell supervisor image into the cluster",
	"Verify the OpenShell Sandbox image in the node and tag it for the chart",
	"Verify the OpenShell supervisor image in the node and tag it for the chart",
}

// allStepsEnv runs the whole k3d failure matrix, every platform step included.
const allStepsEnv = "OCC_TEST_K3D_ALL_STEPS"

// testFailureAfterEachStep: for a failure after each step in turn (lane steps and groups, the
// cluster's creation included), the rollback removes everything recorded so far by any lane,
// and the state directory with it. A failure in one lane cancels the other wherever it is (a
// pull, or k3d half-way through creating the cluster), and that is rolled back too.
func testFailureAfterEachStep(t *testing.T, b *k3dBed) {
	testFailureAfterSteps(t, b, func(step string) string {
		if slices.Contains(platformMiddle, step) {
			return "rolled back like the steps beside it once the cluster exists (the cluster goes, with everything in it; each platform step is failed on the envtest bed, each import like the Gateway image's)"
		}
		return ""
	})
}

// testFailureAfterSteps is testFailureAfterEachStep for the steps skip gives no reason to skip
// (every step with OCC_TEST_K3D_ALL_STEPS=1).
// testFailureSubset is testFailureAfterSteps for the steps of steps (given the run's cluster name,
// they must all be the flow's): the others are skipped with why unless allStepsEnv is set.
func testFailureSubset(t *testing.T, b *k3dBed, steps func(clusterName string) []string, why string) {
	opts := b.options(t)
	names := stepNames(t, opts)
	for _, s := range steps(opts.K3d().ClusterName) {
		if !slices.Contains(names, s) {
			t.Fatalf("the flow has no step %q: %q", s, names)
		}
	}
	testFailureAfterSteps(t, b, func(step string) string {
		for _, s := range steps("") {
			if step == s || strings.HasPrefix(step, "Create k3d cluster ") && s == "Create k3d cluster " {
				return ""
			}
		}
		return why
	})
}

func testFailureAfterSteps(t *testing.T, b *k3dBed, skip func(step string) string) {
	names := stepNames(t, b.options(t))
	if len(names) != 32 {
		t.Fatalf("the k3d flow has %d steps and groups, want 32: %q", len(names), names)
	}
	for i, step := range names {
		t.Run(fmt.Sprintf("after step %d %s", i+1, step), func(t *testing.T) {
			if why := skip(step); why != "" && os.Getenv(allStepsEnv) == "" {
				t.Skipf("%s; set %s=1 to run it here too", why, allStepsEnv)
			}
			b.forgetProducts(t)
			opts := b.options(t)
			// The cluster's step is named after this run's cluster.
			step := stepNames(t, opts)[i]
			downAtEnd(t, opts.StateDir)
			var mu sync.Mutex
			var vols []string
			opts.NoDiagnose = true // a matrix of rollbacks; the bundle has tests of its own
			opts.Seams().AfterStep = func(name string) error {
				if name != step {
					return nil
				}
				mu.Lock()
				vols = b.volumesOf(t, opts.K3d().ClusterName)
				mu.Unlock()
				return errors.New("injected failure")
			}
			_, err := occdev.Up(context.Background(), opts)
			if err == nil || !strings.Contains(err.Error(), "injected failure") || !strings.Contains(err.Error(), step) {
				t.Fatalf("up: %v; want the injected failure after %q", err, step)
			}
			if wantRollback := i > 0; strings.Contains(err.Error(), "rolled back: everything") != wantRollback {
				t.Errorf("rollback (want %v): %v", wantRollback, err)
			}
			if !stateGone(opts.StateDir) {
				t.Errorf("state directory kept: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if left := b.leftovers(t, opts.K3d().ClusterName, vols); len(left) > 0 {
				t.Errorf("left after the rollback: %v", left)
			}
		})
	}
}
