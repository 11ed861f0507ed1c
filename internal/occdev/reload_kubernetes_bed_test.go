package occdev_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/cluster"
	kcp "github.com/openclaw/occ/internal/occdev/controlplane/kubernetes"
	"github.com/openclaw/occ/internal/occdev/helmrelease"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/reload"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/testbed/oceapi"
)

// kubernetesReloadSteps are the steps of a Kubernetes-only profile's reload, in order.
var kubernetesReloadSteps = []string{
	"Check the recorded environment",
	"Rebuild the control-plane images from the checkout",
	"Import the rebuilt images into the cluster",
	"Verify the rebuilt images in the node",
	"Point the Installation at the rebuilt Agent runtime",
	"Upgrade the OCE release onto the rebuilt controller",
	"Point the Deployments at the rebuilt images",
	"Wait for the Deployments to roll out",
	"Record the rebuilt images and the checkout's commit",
}

// An OCE engineer on the Kubernetes-only profile edits the controller's source and commits:
// `occ dev reload` rebuilds the controller (only it: the Agent runtime does not copy the file),
// imports and verifies it in the node, points the control plane's Deployments at its new digest
// and waits for their rollout (the played kubelet starts the new Pods only with the imported
// image), records the new commit and drops the superseded image from the node. An edit of the
// Agent runtime's Dockerfile rewrites the Installation (file and Secret) and rolls the
// Deployments that mount it. A reload interrupted after any step leaves every Deployment ready on the old or the
// new image and a state the next reload finishes, and so does the built binary killed (SIGKILL) or
// stopped with Ctrl-C after chosen steps; `down` then leaves nothing.
func TestKubernetesReload(t *testing.T) {
	startBuild()
	b := newKubeBed(t)
	ctx := context.Background()
	r := b.run(t, oceapi.Options{Key: canaryKey, Password: canaryPassword})
	ns := kcp.DefaultNamespace
	volumesBefore := b.allVolumes(t)
	var volumes []string
	r.opts.Seams().AfterStep = func(step string) error {
		if step == "Install the OCE chart" {
			st, err := state.Read(r.opts.StateDir)
			if err != nil {
				return err
			}
			kube, _, _ := kubeClientOf(t, st.Cluster)
			r.startWorker(t, kube, ns)
		}
		if len(volumes) == 0 {
			if objs, err := b.Engine.ClusterObjects(context.Background(), r.opts.K3d().ClusterName); err == nil {
				volumes = objs.Volumes
			}
		}
		return nil
	}
	downAtEnd(t, r.opts.StateDir)
	if _, err := occdev.Up(ctx, r.opts); err != nil {
		t.Fatalf("up: %v\nprogress:\n%s\nlog:\n%s", err, r.events, r.log)
	}
	if err := <-r.provisionErr; err != nil {
		t.Errorf("worker stand-in: %v", err)
	}
	dir := r.opts.StateDir
	kube, _, _ := kubeClientOf(t, recordedAccess(t, dir))
	before := mustState(t, dir)
	oldController := recordedRole(before, "controller").InCluster
	runsController := deploymentsRunning(t, kube, ns, oldController)
	if len(runsController) == 0 {
		t.Fatalf("no Deployment of %s runs the controller %s", ns, oldController)
	}

	// The edit and its commit.
	editSource(t, filepath.Join(b.checkout, serverScript), "kubernetes edit")
	const newCommit = "aa1b2d3e4f5a69788796a5b4c3d2e1f00f1e2d3c"
	setCommit(t, b.checkout, newCommit)
	res, err := occdev.Reload(ctx, occdev.ReloadOptions{Options: reload.Options{StateDir: dir}})
	if err != nil {
		t.Fatalf("reload: %v", err)
	}
	after := mustState(t, dir)
	ctl := recordedRole(after, "controller")
	if ctl.InCluster == oldController || !imageOf(res, "controller").Changed || imageOf(res, "runtime").Changed {
		t.Errorf("the controller alone should have changed: %+v (recorded %s, was %s)", res.Images, ctl.InCluster, oldController)
	}
	if res.Commit != newCommit || after.ControlPlane.Commit != newCommit || res.PreviousCommit != b.commit {
		t.Errorf("commit: result %s (previous %s), state %s, want %s", res.Commit, res.PreviousCommit, after.ControlPlane.Commit, newCommit)
	}
	slices.Sort(runsController)
	rolled := slices.Sorted(slices.Values(res.Rolled))
	if !slices.Equal(rolled, runsController) {
		t.Errorf("rolled %q, want exactly the Deployments of the controller %q", rolled, runsController)
	}
	assertDeploymentsOn(t, kube, ns, runsController, ctl.InCluster)
	assertOnlyImported(t, after, ctl.InCluster)
	// The environment's hold moved to the rebuilt controller, and its record with it.
	checkHolds(t, b.engine.Verbs(), dir, nil)
	// Helm's record of the release names what its Deployments run: the upgrade made revision 2,
	// and a reload with nothing changed makes no revision.
	access := recordedAccess(t, dir)
	assertReleaseRuns(t, access, ns, 2, ctl.InCluster, oldController)
	if _, err := occdev.Reload(ctx, occdev.ReloadOptions{Options: reload.Options{StateDir: dir}}); err != nil {
		t.Fatalf("reload with nothing changed: %v", err)
	}
	assertReleaseRuns(t, access, ns, 2, ctl.InCluster, oldController)
	// A reload of one of the Deployments that run the controller rolls only it: the release,
	// whose upgrade would roll the others too, stays; the next full reload upgrades it.
	if len(runsController) < 2 {
		t.Fatalf("the fixture's chart should run the controller in two Deployments: %q", runsController)
	}
	editSource(t, filepath.Join(b.checkout, serverScript), "kubernetes edit of one service")
	one, err := occdev.Reload(ctx, occdev.ReloadOptions{Options: reload.Options{StateDir: dir, Services: runsController[:1]}})
	if err != nil {
		t.Fatalf("reload %s: %v", runsController[0], err)
	}
	oneCtl := imageOf(one, "controller").InCluster
	if !slices.Equal(one.Rolled, runsController[:1]) || oneCtl == ctl.InCluster {
		t.Errorf("reload %s rolled %q onto %s, want it alone onto a new controller", runsController[0], one.Rolled, oneCtl)
	}
	assertDeploymentsOn(t, kube, ns, runsController[:1], oneCtl)
	assertDeploymentsOn(t, kube, ns, runsController[1:], ctl.InCluster)
	assertReleaseRuns(t, access, ns, 2, ctl.InCluster, oneCtl)
	if _, err := occdev.Reload(ctx, occdev.ReloadOptions{Options: reload.Options{StateDir: dir}}); err != nil {
		t.Fatalf("full reload: %v", err)
	}
	assertDeploymentsOn(t, kube, ns, runsController, oneCtl)
	assertReleaseRuns(t, access, ns, 3, oneCtl, ctl.InCluster)

	// A Dockerfile that now names a base image up never pulled is refused before any build:
	// BuildKit would fetch it by itself, unpinned and unknown to down.
	refuseNewBase(t, b.checkout, dir, "Dockerfile", "FROM ${NODE_RUNTIME_BASE_IMAGE} AS runtime")

	// Edits of the controller and the Agent runtime, interrupted after each step: the
	// Installation names the new runtime once the next reload has run.
	for i, step := range kubernetesReloadSteps {
		t.Run(fmt.Sprintf("interrupted after step %d %s", i+1, step), func(t *testing.T) {
			editSource(t, filepath.Join(b.checkout, serverScript), "edit before an interrupted "+step)
			oldRuntime := recordedRole(mustState(t, dir), "runtime").InCluster
			editRuntime(t, b.checkout)
			_, err := occdev.Reload(ctx, reloadFailingAfter(dir, step))
			if err == nil || !strings.Contains(err.Error(), "injected failure") {
				t.Fatalf("reload did not fail after %s: %v", step, err)
			}
			for _, name := range runsController {
				if got := readyReplicas(t, kube, "Deployment", ns, name); got < 1 && step != "Point the Deployments at the rebuilt images" && step != "Upgrade the OCE release onto the rebuilt controller" {
					t.Errorf("after the interrupted reload Deployment %s has %d ready replicas", name, got)
				}
			}
			if _, err := occdev.Reload(ctx, occdev.ReloadOptions{Options: reload.Options{StateDir: dir}}); err != nil {
				t.Fatalf("the next reload: %v", err)
			}
			if rt := recordedRole(mustState(t, dir), "runtime").InCluster; rt == oldRuntime {
				t.Errorf("the edited Agent runtime was not rebuilt into a new image: still %s", rt)
			}
			assertKubernetesReloaded(t, kube, access, ns, dir, runsController)
		})
	}

	// Killed (SIGKILL) or stopped with Ctrl-C (SIGINT) after a step, the built `occ dev reload`
	// leaves every Deployment on its old or its new image, and the next one finishes it.
	repo, _, _ := strings.Cut(recordedRole(mustState(t, dir), "controller").InCluster, "@")
	sig := reloadSignalEnv{
		profile: "Kubernetes-only", bin: buildOCC(t), dir: dir, workDir: b.checkout, env: os.Environ(),
		edit: func(t *testing.T) {
			editSource(t, filepath.Join(b.checkout, serverScript), "edit before a signalled reload")
			editRuntime(t, b.checkout)
		},
		running: func(t *testing.T) map[string]string {
			out := map[string]string{"the Installation's Agent runtime": installationRuntime(t, dir)}
			for _, name := range runsController {
				out["Deployment "+name] = deploymentImageOf(t, kube, ns, name, repo)
			}
			return out
		},
		statusWants:    []string{"k3d cluster:   exists"},
		assertReloaded: func(t *testing.T) { assertKubernetesReloaded(t, kube, access, ns, dir, runsController) },
		// Inside the Helm upgrade, while its pre-upgrade migration Job runs: a kill leaves the
		// release pending-upgrade, which Helm refuses to touch until the next reload recovers it.
		during: []reloadSignalDuring{{
			name: "inside the Helm upgrade",
			arm:  func(t *testing.T) <-chan struct{} { return helmPending(t, kube, ns, kcp.ReleaseName, "upgrade") },
			killed: func(t *testing.T) {
				rel, err := helmrelease.Status(helmrelease.Release{Access: access, Namespace: ns, Name: kcp.ReleaseName})
				if err != nil || rel == nil || rel.Info.Status != release.StatusPendingUpgrade {
					t.Fatalf("the kill did not meet the Helm upgrade: the release is %+v (%v), want pending-upgrade", rel, err)
				}
			},
		}},
	}
	// -run 'TestKubernetesReload/kill' runs both matrices.
	t.Run("kill SIGKILL", func(t *testing.T) { testReloadSignals(t, sig, syscall.SIGKILL) })
	t.Run("kill SIGINT", func(t *testing.T) { testReloadSignals(t, sig, syscall.SIGINT) })

	// `down` removes the cluster with every image any reload imported.
	// A reload interrupted once the rebuilt images are in the node, recorded but not yet run,
	// is finished by `down` as well.
	editSource(t, filepath.Join(b.checkout, serverScript), "edit before an interrupted reload that down finishes")
	editRuntime(t, b.checkout)
	if _, err := occdev.Reload(ctx, reloadFailingAfter(dir, "Verify the rebuilt images in the node")); err == nil {
		t.Fatal("the interrupted reload succeeded")
	}
	if st := mustState(t, dir); len(clusterImagesOf(st, recordedRole(st, "runtime").InCluster)) != 2 {
		t.Errorf("the interrupted reload should have recorded the rebuilt runtime beside the running one: %q", clusterImagesOf(st, recordedRole(st, "runtime").InCluster))
	}
	if _, err := occdev.Down(ctx, occdev.DownOptions{StateDir: dir}); err != nil {
		t.Fatalf("down: %v", err)
	}
	if !dirGone(dir) {
		t.Errorf("the state directory %s survived down", dir)
	}
	if left := b.leftovers(t, r.opts.K3d().ClusterName, volumes); len(left) > 0 {
		t.Errorf("down left: %v", left)
	}
	if extra := b.newVolumes(t, volumesBefore, r.opts.K3d().ClusterName); len(extra) > 0 {
		t.Errorf("volumes left after down: %v", extra)
	}
	if c := b.composeCalled(); c != "" {
		t.Errorf("the Kubernetes-only profile ran docker compose: %s", c)
	}
}

// assertKubernetesReloaded requires the environment in dir after a reload that finished: the
// Deployments that run the controller run the recorded one, rolled out; the node holds only the
// recorded controller and Agent runtime of theirs; the release names the controller; the
// Installation file and Secret both name the recorded runtime.
func assertKubernetesReloaded(t *testing.T, kube kubernetes.Interface, access cluster.Access, ns, dir string, runsController []string) {
	t.Helper()
	st := mustState(t, dir)
	ctl, rt := recordedRole(st, "controller"), recordedRole(st, "runtime")
	assertDeploymentsOn(t, kube, ns, runsController, ctl.InCluster)
	assertOnlyImported(t, st, ctl.InCluster)
	assertOnlyImported(t, st, rt.InCluster)
	assertReleaseRuns(t, access, ns, 0, ctl.InCluster, "")
	inst, err := os.ReadFile(st.InstallationPath)
	if err != nil {
		t.Fatal(err)
	}
	sec, err := kube.CoreV1().Secrets(ns).Get(context.Background(), kcp.InstallationSecret, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(inst), rt.InCluster) || string(sec.Data[kcp.InstallationKey]) != string(inst) {
		t.Errorf("the Installation file and Secret do not both name the runtime %s", rt.InCluster)
	}
}

// deploymentImageOf is the image of the container of Deployment name that runs an image of repo.
func deploymentImageOf(t *testing.T, kube kubernetes.Interface, ns, name, repo string) string {
	t.Helper()
	d, err := kube.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if strings.HasPrefix(c.Image, repo+"@") {
			return c.Image
		}
	}
	t.Fatalf("Deployment %s runs no image of %s", name, repo)
	return ""
}

// setCommit moves the checkout's branch to commit, as a developer's commit does.
func setCommit(t *testing.T, checkout, commit string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(checkout, ".git", "refs", "heads", "main"), []byte(commit+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// deploymentsRunning names the Deployments of ns with a container running image.
func deploymentsRunning(t *testing.T, kube kubernetes.Interface, ns, image string) []string {
	t.Helper()
	list, err := kube.AppsV1().Deployments(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range list.Items {
		if slices.ContainsFunc(d.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Image == image }) {
			out = append(out, d.Name)
		}
	}
	return out
}

// assertDeploymentsOn requires each Deployment to run image, rolled out and ready.
func assertDeploymentsOn(t *testing.T, kube kubernetes.Interface, ns string, names []string, image string) {
	t.Helper()
	for _, name := range names {
		d, err := kube.AppsV1().Deployments(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(d.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Image == image }) {
			t.Errorf("Deployment %s does not run %s", name, image)
		}
		if s := d.Status; s.UpdatedReplicas != s.Replicas || s.ReadyReplicas < 1 || s.ObservedGeneration < d.Generation {
			t.Errorf("Deployment %s has not rolled out: %+v", name, s)
		}
	}
}

// clusterImagesOf lists the images of ref's repository the state records in the node.
func clusterImagesOf(st state.State, ref string) []string {
	repo, _, _ := strings.Cut(ref, "@")
	var imported []string
	for _, o := range st.Objects {
		if o.Type == images.TypeClusterImage && o.Name == repo {
			imported = append(imported, o.Name+"@"+o.Digest)
		}
	}
	return imported
}

// assertOnlyImported requires the state to record, of ref's repository, only ref in the node.
func assertOnlyImported(t *testing.T, st state.State, ref string) {
	t.Helper()
	repo, _, _ := strings.Cut(ref, "@")
	imported := clusterImagesOf(st, ref)
	if !slices.Equal(imported, []string{ref}) {
		t.Errorf("the state records %q of %s in the node, want only %s", imported, repo, ref)
	}
}

// refuseNewBase replaces the FROM line from of the checkout's Dockerfile rel by a base image no
// `up` pulled, checks that reload refuses it (naming the line and the image, building nothing,
// changing no record) and puts the line back.
func refuseNewBase(t *testing.T, checkout, dir, rel, from string) {
	t.Helper()
	path := filepath.Join(checkout, filepath.FromSlash(rel))
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const other = "docker.io/library/node:25-bookworm-slim@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	edited := strings.Replace(string(orig), from, "FROM "+other+" AS runtime", 1)
	if edited == string(orig) {
		t.Fatalf("%s has no line %q", rel, from)
	}
	if err := os.WriteFile(path, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := os.WriteFile(path, orig, 0o644); err != nil {
			t.Fatal(err)
		}
	}()
	before, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	buildLog, _ := os.ReadFile(filepath.Join(dir, "image-build.log"))
	_, err = occdev.Reload(context.Background(), occdev.ReloadOptions{Options: reload.Options{StateDir: dir}})
	if err == nil || !strings.Contains(err.Error(), "the checkout's Dockerfiles name base images occ dev up did not pull") ||
		!strings.Contains(err.Error(), rel+":") || !strings.Contains(err.Error(), "now fetches "+other) || !strings.Contains(err.Error(), "occ dev down --state-dir "+dir) {
		t.Fatalf("reload with a new base image: %v", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "state.json"))
	if string(after) != string(before) {
		t.Error("the refused reload changed the state")
	}
	if log, _ := os.ReadFile(filepath.Join(dir, "image-build.log")); string(log) != string(buildLog) {
		t.Error("the refused reload built something")
	}
}

// assertReleaseRuns requires the OCE release's latest revision (revision, unless 0) to be
// deployed with a manifest that names image and not old (unless empty).
func assertReleaseRuns(t *testing.T, access cluster.Access, ns string, revision int, image, old string) {
	t.Helper()
	rel, err := helmrelease.Status(helmrelease.Release{Access: access, Namespace: ns, Name: kcp.ReleaseName})
	if err != nil || rel == nil {
		t.Fatalf("read the OCE release: %v (%v)", err, rel)
	}
	switch {
	case revision != 0 && rel.Version != revision:
		t.Errorf("the OCE release is at revision %d, want %d", rel.Version, revision)
	case rel.Info.Status != release.StatusDeployed:
		t.Errorf("the OCE release's revision %d is %s, want deployed", rel.Version, rel.Info.Status)
	case !strings.Contains(rel.Manifest, image):
		t.Errorf("the OCE release's revision %d does not name %s", rel.Version, image)
	case old != "" && strings.Contains(rel.Manifest, old):
		t.Errorf("the OCE release's revision %d still names %s", rel.Version, old)
	}
}

// helmPending returns a channel closed when release name in namespace ns gets a revision
// pending-<op> (Helm's storage Secret says so while it works on it).
func helmPending(t *testing.T, kube kubernetes.Interface, ns, name, op string) <-chan struct{} {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	seen, err := watchHelmPending(ctx, kube, ns, name, op)
	if err != nil {
		t.Fatal(err)
	}
	return seen
}

// watchHelmPending is helmPending's watch, for a caller that is not the test's goroutine: the
// channel is closed at the first pending-<op> revision, the watch ends with ctx.
func watchHelmPending(ctx context.Context, kube kubernetes.Interface, ns, name, op string) (<-chan struct{}, error) {
	w, err := kube.CoreV1().Secrets(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=" + name + ",status=pending-" + op})
	if err != nil {
		return nil, fmt.Errorf("watch the Helm release %s in namespace %s: %w", name, ns, err)
	}
	seen := make(chan struct{})
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			if ev.Type == watch.Added || ev.Type == watch.Modified {
				close(seen)
				return
			}
		}
	}()
	return seen, nil
}
