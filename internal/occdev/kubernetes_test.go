package occdev_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/occ/internal/installation"
	kubewait "github.com/openclaw/occ/internal/kube"
	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/controlplane/kubernetes"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/engine/locate"
	"github.com/openclaw/occ/internal/occdev/helmrelease"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/observe"
	"github.com/openclaw/occ/internal/occdev/profile/kubeprofile"
	"github.com/openclaw/occ/internal/occdev/profile/oce"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/testbed"
	"github.com/openclaw/occ/internal/testbed/oceapi"
	"github.com/openclaw/occ/internal/testbed/ocebed"
)

// Canary secrets of the stand-in bootstrap output: the service key and the administrator
// password, which may exist only in their 0600 files.
const (
	canaryKey      = "occ_sk_canary0key0d3adb33f"
	canaryPassword = "canary-admin-password-7e1f"
)

// stepRecords maps each recorded object to the step after which it first appeared in the state.
type stepRecords struct {
	order []string
	step  map[string]string
}

// A developer in an OCE checkout on a laptop with Docker runs the Kubernetes-only profile —
// everything, the OCE control plane included, in one k3d cluster — through `occ dev up
// --control-plane kubernetes` and removes it with `occ dev down`; then the profile's image
// selection refusals and failures, each leaving nothing behind (or the state for `down`). One
// bed serves every scenario; each scenario that needs a cluster makes its own, as `up` would.
func TestKubernetesDevEnvironment(t *testing.T) {
	startBuild() // before the bed moves HOME (and with it Go's build cache)
	b := newKubeBed(t)
	t.Run("up and down through the library", func(t *testing.T) { testKubernetesUpAndDown(t, b) })
	t.Run("selected images and a taken port are refused", func(t *testing.T) { testKubernetesRefusals(t, b) })
	t.Run("failures roll back or keep the state for down", func(t *testing.T) { testKubernetesFailures(t, b) })
	t.Run("a failure after each step", func(t *testing.T) { testKubernetesFailureAfterEachStep(t, b) })
	t.Run("SIGKILL then down", func(t *testing.T) { testKubernetesSignals(t, b, syscall.SIGKILL) })
	t.Run("Ctrl-C", func(t *testing.T) { testKubernetesSignals(t, b, syscall.SIGINT) })
	if c := b.composeCalled(); c != "" {
		t.Errorf("the Kubernetes-only profile ran docker compose: %s", c)
	}
}

// testKubernetesUpAndDown: a developer runs `occ dev up --control-plane kubernetes` in an OCE checkout on Docker and
// later `occ dev down`. Up builds the controller and Agent runtime from the checkout (and holds
// them, so another build of their tags before the import takes nothing away), pulls
// PostgreSQL and the OpenShell images by digest, creates a k3d cluster on its own network that
// publishes the API proxy's NodePort on loopback, imports and verifies the images, installs the
// sandbox platform, then the OCE control plane in the cluster from the checkout's chart (waited
// for as helm --wait does: the real controllers of the k3s stand-in run the StatefulSet, the Job
// and the Deployments, whose Pods the played kubelet makes ready only with the imported images),
// copies the bootstrap key through the reader Pod and verifies it, waits for the bootstrap
// Namespace, and prints the reference's summary. After every step everything of this state in
// the cluster is recorded. The generated passwords and the key appear nowhere but in the cluster
// and their 0600 files. Down deletes the recorded cluster and leaves no container, network,
// volume, pulled image or state directory, and never runs Compose.
func testKubernetesUpAndDown(t *testing.T, b *kubeBed) {
	const buildStep = "Build the controller and Agent runtime images from the checkout"
	r := b.run(t, oceapi.Options{Key: canaryKey, Password: canaryPassword})
	ns := kubernetes.DefaultNamespace
	recs := &stepRecords{step: map[string]string{}}
	var volumes []string
	var unrecorded []string
	var taken map[string]string
	r.opts.Seams().AfterStep = func(step string) error {
		st, err := state.Read(r.opts.StateDir)
		if err != nil {
			return nil // before the state is claimed
		}
		for _, o := range st.Objects {
			if _, seen := recs.step[o.String()]; !seen {
				recs.step[o.String()] = step
				recs.order = append(recs.order, o.String())
			}
		}
		if step == buildStep {
			// Another environment's build (or the developer's own docker build -t) takes both
			// tags between this run's builds and its import.
			taken = takeTags(t, b.engine.Verbs(), controlplane.DefaultControllerTag, controlplane.DefaultRuntimeTag)
		}
		if st.Cluster.Kubeconfig == "" {
			return nil
		}
		// Everything of this state in the cluster is recorded, after every step: a failure here
		// would leave nothing `down` does not know of. The cluster is listed before the records
		// are read again, because a lane beside this step may still be recording and creating
		// (record first, then create): what the listing saw was recorded before it was read.
		owned := ownedObjects(t, st.Cluster, st.Owner())
		if st, err = state.Read(r.opts.StateDir); err != nil {
			t.Errorf("read the state after step %s: %v", step, err)
			return nil
		}
		for _, obj := range uncovered(st, owned) {
			unrecorded = append(unrecorded, obj+" (after "+step+")")
		}
		if step == "Install the OCE chart" {
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

	started := time.Now()
	sum, err := occdev.Up(context.Background(), r.opts)
	if err != nil {
		t.Fatalf("up: %v\nprogress:\n%s\nlog:\n%s", err, r.events, r.log)
	}
	took := time.Since(started)
	t.Logf("occ dev up --control-plane kubernetes took %s", took.Round(time.Millisecond))
	if len(unrecorded) > 0 {
		t.Errorf("objects of this state existed in the cluster without a record: %v", unrecorded)
	}
	if err := <-r.provisionErr; err != nil {
		t.Errorf("worker stand-in: %v", err)
	}

	// The summary, as the reference prints it.
	oce := sum.OCE
	if oce == nil || oce.APIURL != fmt.Sprintf("http://127.0.0.1:%d", devPort(r.opts)) || oce.InstallationID != r.api.InstallationID ||
		oce.AdminEmail != kubernetes.AdminEmail || oce.KeyFile != filepath.Join(r.opts.StateDir, controlplane.KeyFileName) ||
		oce.PasswordFile != filepath.Join(r.opts.StateDir, kubernetes.PasswordFileName) || !strings.Contains(oce.ControlPlane, b.checkout+" at "+b.commit[:12]) ||
		oce.Namespace != r.api.NamespaceID || !strings.Contains(oce.RuntimeImage, "openclaw-enterprise-runtime@sha256:") || sum.ControlPlane != "" {
		t.Errorf("summary: %+v, OCE %+v", sum, oce)
	}
	if want := "occ dev down --state-dir " + r.opts.StateDir; sum.DownCommand != want {
		t.Errorf("down command %q, want %q", sum.DownCommand, want)
	}
	if len(taken) != 2 {
		t.Errorf("no other build took the built images' tags after the step %q: %v", buildStep, taken)
	}
	checkHolds(t, b.engine.Verbs(), r.opts.StateDir, taken)
	// The real base images of both builds (the controller's runtime stage is FROM
	// ${NODE_RUNTIME_BASE_IMAGE}, the Agent runtime has both bases), by digest, with where each is
	// used, in the summary and the state.
	if len(oce.BaseImages) != 2 || !strings.HasPrefix(oce.BaseImages[0], b.nodeBase+" for Dockerfile:10 (stage dependencies") ||
		!strings.HasPrefix(oce.BaseImages[1], b.nodeRuntimeBase+" for Dockerfile:42 (stage runtime, FROM ${NODE_RUNTIME_BASE_IMAGE})") {
		t.Errorf("summary base images: %q", oce.BaseImages)
	}
	if st, err := state.Read(r.opts.StateDir); err != nil {
		t.Error(err)
	} else if bases := st.ControlPlane.BaseImages; len(bases) != 2 || bases[0].Reference != b.nodeBase || bases[1].Reference != b.nodeRuntimeBase ||
		!strings.HasPrefix(bases[0].ID, "sha256:") || !slices.Contains(bases[1].Uses, "deploy/runtime/Dockerfile:68 (stage runtime, FROM ${NODE_RUNTIME_BASE_IMAGE})") ||
		!slices.Contains(bases[0].Uses, "deploy/runtime/Dockerfile:39 (stage openclaw-dependency-inputs, FROM ${NODE_BASE_IMAGE})") {
		t.Errorf("recorded base images: %+v", bases)
	}

	access := recordedAccess(t, r.opts.StateDir)
	kube, _, _ := kubeClientOf(t, access)
	ctx := context.Background()

	// Every object of items 2-3 exists, carries this state's label and is recorded, and which
	// step made it is known.
	st, err := state.Read(r.opts.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	wantObjects := []string{
		"v1 Secret " + ns + "/" + kubernetes.PostgresBootstrapSecret,
		"v1 PersistentVolumeClaim " + ns + "/" + kubernetes.PostgresDataClaim,
		"v1 PersistentVolumeClaim " + ns + "/" + kubernetes.BootstrapClaim,
		"v1 Pod " + ns + "/" + kubernetes.PreparePod,
		"apps/v1 StatefulSet " + ns + "/" + kubernetes.Postgres,
		"v1 Service " + ns + "/" + kubernetes.Postgres,
		"networking.k8s.io/v1 NetworkPolicy " + ns + "/" + kubernetes.PostgresEgressPolicy,
		"networking.k8s.io/v1 NetworkPolicy " + ns + "/" + kubernetes.KubernetesEgressPolicy,
		"v1 Secret " + ns + "/" + kubernetes.InstallationSecret,
		"v1 Secret " + ns + "/" + kubernetes.DatabaseSecret,
		"v1 Secret " + ns + "/" + kubernetes.AuthSecret,
		"Helm release " + ns + "/" + kubernetes.ReleaseName,
		"rbac.authorization.k8s.io/v1 ClusterRoleBinding " + kubernetes.TenantWorkerBinding,
		"rbac.authorization.k8s.io/v1 ClusterRoleBinding " + kubernetes.TenantConfigurationBinding,
		"rbac.authorization.k8s.io/v1 ClusterRoleBinding " + kubernetes.TenantSecretsBinding,
		"apps/v1 Deployment " + ns + "/" + kubernetes.ProxyDeployment,
		"v1 Service " + ns + "/" + kubernetes.ProxyService,
		"networking.k8s.io/v1 NetworkPolicy " + ns + "/openclaw-development-openshell-ingress",
		"networking.k8s.io/v1 NetworkPolicy " + ns + "/openclaw-enterprise-openshell-egress",
		"rbac.authorization.k8s.io/v1 ClusterRole openclaw-development-openshell-workspace-rbac",
		"rbac.authorization.k8s.io/v1 ClusterRoleBinding openclaw-development-openshell-workspace-rbac",
	}
	var table strings.Builder
	for _, o := range recs.order {
		fmt.Fprintf(&table, "  %-92s %s\n", o, recs.step[o])
	}
	t.Logf("records, with the step after which each first appeared:\n%s", table.String())
	for _, w := range wantObjects {
		if recs.step[w] == "" || !st.Has(objectNamed(st, w)) {
			t.Errorf("%s is not recorded", w)
		}
	}
	owned := ownedObjects(t, access, st.Owner())
	live := names(owned)
	for _, w := range wantObjects {
		if !strings.HasPrefix(w, "Helm release") && !slices.Contains(live, w) {
			t.Errorf("%s does not exist with this state's label (live: %v)", w, live)
		}
	}
	// The reader Pod is removed (gone, or being deleted: the played kubelet finishes a graceful
	// deletion on its own time) and its record forgotten (the package tests show it was recorded
	// before it was created).
	if slices.ContainsFunc(owned, func(o liveObject) bool { return o.object == kubernetes.ReaderPod && !o.deleting }) || st.Has(objectNamed(st, "v1 Pod "+ns+"/"+kubernetes.ReaderPod)) {
		t.Errorf("the reader Pod is still there or still recorded (live %v)", live)
	}

	// The workloads run the imported images by their verified in-cluster digests.
	verified := map[string]bool{}
	for _, ref := range sum.Images {
		verified[ref] = true
	}
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var controllerRef string
	for _, p := range pods.Items {
		for _, c := range append(append([]corev1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...) {
			// The launcher's own Pods never pull; the chart's keep its pull policy (the node
			// has the image by that reference either way).
			if !verified[c.Image] || p.Labels[occdev.LabelDevState] != "" && c.ImagePullPolicy != corev1.PullNever {
				t.Errorf("Pod %s container %s runs %s (%s), not a verified imported image (with pullPolicy Never for the launcher's Pods)", p.Name, c.Name, c.Image, c.ImagePullPolicy)
			}
			if strings.Contains(c.Image, "openclaw-enterprise-controller@sha256:") {
				controllerRef = c.Image
			}
		}
		if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodSucceeded {
			t.Errorf("Pod %s is %s", p.Name, p.Status.Phase)
		}
	}
	if controllerRef == "" {
		t.Error("no Pod runs the controller built from the checkout")
	}

	// The proxy is on NodePort 30080, published by k3d on 127.0.0.1 at OPENCLAW_DEV_PORT on the
	// cluster's own network; the Installation is in Secret occ-installation-startup.
	svc, err := kube.CoreV1().Services(ns).Get(ctx, kubernetes.ProxyService, metav1.GetOptions{})
	if err != nil || svc.Spec.Type != corev1.ServiceTypeNodePort || svc.Spec.Ports[0].NodePort != kubernetes.ProxyNodePort {
		t.Errorf("proxy Service: %+v, %v", svc.Spec, err)
	}
	server, err := b.engine.API.ContainerInspect(ctx, access.NodeAddress)
	if err != nil {
		t.Fatal(err)
	}
	if bind := server.HostConfig.PortBindings["30080/tcp"]; len(bind) != 1 || bind[0].HostIP != "127.0.0.1" || bind[0].HostPort != fmt.Sprint(devPort(r.opts)) {
		t.Errorf("server-0 publishes 30080/tcp as %+v", bind)
	}
	if nets := server.NetworkSettings.Networks; len(nets) != 1 || nets["k3d-"+r.opts.K3d().ClusterName] == nil {
		t.Errorf("server-0 networks: %v, want only its own", nets)
	}
	instFile, err := os.ReadFile(sum.Installation)
	if err != nil {
		t.Fatal(err)
	}
	secret, err := kube.CoreV1().Secrets(ns).Get(ctx, kubernetes.InstallationSecret, metav1.GetOptions{})
	if err != nil || !bytes.Equal(secret.Data[kubernetes.InstallationKey], instFile) {
		t.Errorf("Secret %s does not hold the Installation's exact bytes (%v)", kubernetes.InstallationSecret, err)
	}
	inst, err := installation.Parse(instFile)
	if err != nil {
		t.Fatalf("the Installation does not parse: %v", err)
	}
	var runtimeRef string
	for ref := range verified {
		if strings.Contains(ref, "openclaw-enterprise-runtime@sha256:") {
			runtimeRef = ref
		}
	}
	for _, want := range []string{
		"mode: inCluster", "http://openshell-gateway." + ns + ".svc.cluster.local:8080",
		"gateway: " + runtimeRef, "agent: " + runtimeRef, "requireImmutableDigest: true",
		"gatewayStorageClassName: local-path", "kubernetes.io/hostname: k3d-" + r.opts.K3d().ClusterName + "-server-0", "127.0.0.1/32",
	} {
		if runtimeRef == "" || !strings.Contains(string(instFile), want) {
			t.Errorf("the Installation lacks %q:\n%s", want, instFile)
		}
	}
	if strings.Contains(string(instFile), "kubeconfigPath") || inst.OpenShellBackend() == nil {
		t.Errorf("the Installation names a kubeconfig or no OpenShell backend:\n%s", instFile)
	}

	// The key and the password: in their 0600 files, verified against the live Installation
	// through the proxy's address, read through the reader Pod.
	for _, f := range []struct{ path, content string }{{oce.KeyFile, string(r.api.KeyFile())}, {oce.PasswordFile, canaryPassword}} {
		fi, err := os.Stat(f.path)
		data, _ := os.ReadFile(f.path)
		if err != nil || fi.Mode().Perm() != 0o600 || string(data) != f.content {
			t.Errorf("%s: mode %v, %v; content matches: %v", f.path, fi.Mode(), err, string(data) == f.content)
		}
	}
	if calls := r.exec.Calls(); len(calls) != 2 || !strings.Contains(calls[0], ns+"/"+kubernetes.ReaderPod+"/reader "+oceapi.PasswordFile) {
		t.Errorf("exec calls: %v", calls)
	}
	reqs := strings.Join(r.api.Requests(), "\n")
	for _, want := range []string{"GET /api/auth/session 200", "GET /installation 200", "GET /namespaces/" + r.api.NamespaceID + " 200"} {
		if !strings.Contains(reqs, want) {
			t.Errorf("the API was not asked %q; it served:\n%s", want, reqs)
		}
	}

	// Status shows the profile's objects, all present.
	status, err := occdev.GetStatus(ctx, occdev.StatusOptions{StateDir: r.opts.StateDir})
	if err != nil {
		t.Fatal(err)
	}
	present := map[string]bool{}
	for _, o := range status.Objects {
		if o.Type == kubeobj.TypeObject || o.Type == helmrelease.TypeRelease {
			present[o.Name] = o.State == state.Present
		}
	}
	for _, name := range []string{kubernetes.PostgresBootstrapSecret, kubernetes.Postgres, kubernetes.ReleaseName, kubernetes.ProxyDeployment, kubernetes.InstallationSecret} {
		if !present[name] {
			t.Errorf("status does not show %s present: %+v", name, status.Objects)
		}
	}

	// `occ dev status` (the built binary) shows the control plane and its objects, in text and
	// as JSON.
	bin := buildOCC(t)
	statusText, err := exec.Command(bin, "dev", "status", "-v", "--state-dir", r.opts.StateDir).CombinedOutput()
	if err != nil {
		t.Fatalf("occ dev status: %v\n%s", err, statusText)
	}
	for _, want := range []string{"OCE checkout:  " + b.checkout + " at " + b.commit, "API:           " + oce.APIURL, "Key file:      " + oce.KeyFile,
		kubernetes.ProxyDeployment, kubernetes.ReleaseName, kubernetes.InstallationSecret, kubernetes.PostgresDataClaim} {
		if !strings.Contains(string(statusText), want) {
			t.Errorf("occ dev status lacks %q:\n%s", want, statusText)
		}
	}
	statusCLIJSON, err := exec.Command(bin, "dev", "status", "--state-dir", r.opts.StateDir, "-o", "json").Output()
	var cliStatus observe.Status
	if err != nil || json.Unmarshal(statusCLIJSON, &cliStatus) != nil || cliStatus.ControlPlane == nil || cliStatus.ControlPlane.Checkout != b.checkout {
		t.Fatalf("occ dev status -o json: %v\n%s", err, statusCLIJSON)
	}
	// Status names the control plane's images and the bases its builds were made from, as
	// recorded: each base by digest.
	if len(cliStatus.ControlPlane.Images) == 0 || len(cliStatus.ControlPlane.BaseImages) == 0 {
		t.Errorf("occ dev status -o json lists %d control-plane images and %d base images, want both:\n%s", len(cliStatus.ControlPlane.Images), len(cliStatus.ControlPlane.BaseImages), statusCLIJSON)
	}
	for _, bi := range cliStatus.ControlPlane.BaseImages {
		if !strings.Contains(bi.Reference, "@sha256:") || !strings.Contains(string(statusText), bi.Reference) {
			t.Errorf("base image %q: not a digest reference, or missing from occ dev status:\n%s", bi.Reference, statusText)
		}
	}
	for _, im := range cliStatus.ControlPlane.Images {
		if !strings.Contains(string(statusText), im.Role+": "+im.Reference) {
			t.Errorf("occ dev status lacks the %s image %s:\n%s", im.Role, im.Reference, statusText)
		}
	}

	// A Pod naming the controller's repository at a digest that was never imported does not
	// run: the node holds the images by exactly the references the control plane uses.
	stray := strings.SplitN(controllerRef, "@", 2)[0] + "@sha256:" + strings.Repeat("0", 64)
	if _, err := kube.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "not-imported"},
		Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: stray, ImagePullPolicy: corev1.PullNever}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	never, err := kubewait.WaitForPod(wctx, kube, ns, "", func(p *corev1.Pod) bool {
		return p.Name == "not-imported" && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Waiting != nil
	})
	wcancel()
	if err != nil {
		t.Fatalf("the Pod of an image that was not imported: %v", err)
	}
	if w := never.Status.ContainerStatuses[0].State.Waiting; w.Reason != "ErrImageNeverPull" || never.Status.Phase != corev1.PodPending {
		t.Errorf("the Pod of an image that was not imported: phase %s, waiting %+v; want Pending with ErrImageNeverPull", never.Status.Phase, w)
	}

	// occ dev logs reads every workload of the running environment.
	logs := checkKubernetesLogs(t, b, bin, r.opts.StateDir)

	// The secrets canary: the generated credentials (really used: they are in the cluster's
	// Secrets), the key and the password appear in no output, log, state or status.
	boot, err := kube.CoreV1().Secrets(ns).Get(ctx, kubernetes.PostgresBootstrapSecret, metav1.GetOptions{})
	if err != nil || !strings.HasPrefix(string(boot.Data[kubernetes.PostgresPasswordKey]), testbed.CanaryHex) {
		t.Fatalf("the canary credentials were not used: %v", err)
	}
	sumJSON, _ := json.Marshal(sum)
	statusJSON, _ := json.Marshal(status)
	stateJSON, err := os.ReadFile(filepath.Join(r.opts.StateDir, state.FileName))
	if err != nil {
		t.Fatal(err)
	}
	k3dLog, _ := os.ReadFile(filepath.Join(r.opts.StateDir, "k3d.log"))
	assertNoSecrets(t, map[string]string{
		"progress": r.events.String(), "log": r.log.String(), "summary": string(sumJSON), "status": string(statusJSON),
		"state.json": string(stateJSON), "k3d log": string(k3dLog), "Installation": string(instFile),
		"occ dev status": string(statusText), "occ dev status -o json": string(statusCLIJSON), "occ dev logs": logs,
	})

	// Down deletes the recorded cluster, which holds everything of the profile.
	started = time.Now()
	res, err := occdev.Down(ctx, occdev.DownOptions{StateDir: r.opts.StateDir, Log: r.log})
	if err != nil {
		t.Fatalf("down: %v", err)
	}
	t.Logf("occ dev down took %s", time.Since(started).Round(time.Millisecond))
	if !dirGone(r.opts.StateDir) {
		t.Errorf("the state directory %s survived down", r.opts.StateDir)
	}
	if left := b.leftovers(t, r.opts.K3d().ClusterName, volumes); len(left) > 0 {
		t.Errorf("down left: %v", left)
	}
	if c := b.composeCalled(); c != "" {
		t.Errorf("the Kubernetes-only profile ran docker compose: %s", c)
	}
	if !slices.ContainsFunc(res.Removed, func(s string) bool { return strings.HasPrefix(s, "k3d cluster ") }) {
		t.Errorf("down did not remove the cluster: %+v", res)
	}
	containers, err := b.engine.API.ContainerList(ctx, container.ListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range containers {
		if strings.Contains(strings.Join(c.Names, ","), r.opts.K3d().ClusterName) {
			t.Errorf("container %v survived down", c.Names)
		}
	}
}

// objectNamed finds the record whose String is s.
func objectNamed(st state.State, s string) state.Object {
	for _, o := range st.Objects {
		if o.String() == s {
			return o
		}
	}
	return state.Object{Type: "missing", Name: s}
}

// assertNoSecrets fails for every place that holds a generated credential, the key or the
// administrator password.
func assertNoSecrets(t *testing.T, places map[string]string) {
	t.Helper()
	for what, text := range places {
		for _, secret := range []string{testbed.CanaryHex, canaryKey, canaryPassword} {
			if strings.Contains(text, secret) {
				t.Errorf("a secret (%s…) leaked into the %s", secret[:8], what)
			}
		}
	}
}

var errInjected = errors.New("injected failure")

// The Node bases the fixture checkout's Dockerfiles fetch without overrides: occ's pinned
// NODE_BASE_IMAGE for the root Dockerfile, and the two digests the Dockerfiles default to.
const (
	pinnedNodeBase         = "docker.io/library/node:24-bookworm@sha256:3d27e5c11e5786e309ec3e03f93ae536eb36e6e5eb3714d5eb3300a36157add0"
	fixtureSlimBase        = "docker.io/library/node:24-bookworm-slim@sha256:3638d9a6fe4030bd716be989438248074489337ba3275657f93595428be4fc03"
	fixtureRuntimeNodeBase = "docker.io/library/node:24-bookworm@sha256:934240a162082fd8b8a2f90cd5114446443f1eba1c5378f6687167ca405e6584"
)

// A developer previews `occ dev up --control-plane kubernetes` in an OCE checkout: the dry run
// lists the profile's image steps beside the cluster's creation, every in-cluster object with
// the step that makes it, the key copy and the waits, and the plan names the checkout, the API
// URL and the images; nothing is created or contacted.
func TestKubernetesProfileDryRun(t *testing.T) {
	dir := t.TempDir()
	checkout := ocebed.Checkout(t, "0123456789abcdef0123456789abcdef01234567")
	stateDir := filepath.Join(dir, "state")
	dr, err := occdev.PlanUp(context.Background(), occdev.UpOptions{
		StateDir: stateDir, ControlPlane: occdev.ControlPlaneKubernetes, OCE: occdev.OCEOptions{Repository: checkout}, Settings: kubernetesSettings(occdev.KubernetesOptions{DevPort: 3100}),
		CacheDir: filepath.Join(dir, "cache"), Docker: locate.Env{Getenv: func(k string) string {
			if k == "DOCKER_HOST" {
				return "unix:///nonexistent/docker.sock"
			}
			return ""
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	op, _ := dr.Plan.OCE.(*kubeprofile.Document)
	if op == nil || op.Kubernetes == nil || op.Checkout != checkout || op.Commit != "0123456789abcdef0123456789abcdef01234567" || op.Kubernetes.APIURL != "http://127.0.0.1:3100" ||
		op.KeyFile != filepath.Join(stateDir, controlplane.KeyFileName) || op.Kubernetes.PostgresImage == "" || dr.ControlPlane != "" {
		t.Fatalf("plan: %+v (control plane %q)", op, dr.ControlPlane)
	}
	kp := op.Kubernetes
	var all strings.Builder
	var basePulls []string
	var walk func(steps []occdev.PlannedStep, lane string)
	walk = func(steps []occdev.PlannedStep, lane string) {
		for _, s := range steps {
			fmt.Fprintf(&all, "[%s] %s: %s %s\n", lane, s.Name, strings.Join(s.Creates, "; "), s.Note)
			if s.Name == "Pull the base images of the control-plane builds" {
				for _, img := range s.Images {
					basePulls = append(basePulls, img.Reference)
				}
			}
			for _, l := range s.Lanes {
				walk(l.Steps, l.Name)
			}
		}
	}
	walk(dr.Steps, "")
	for _, want := range []string{
		// Every base of every stage the two builds need, by digest, with where it comes from:
		// occ's pin for the root Dockerfile's NODE_BASE_IMAGE (it has no default), the
		// Dockerfiles' own defaults for the rest, NODE_RUNTIME_BASE_IMAGE of both runtime stages.
		"[cluster] Pull the base images of the control-plane builds: image " + pinnedNodeBase + " in the engine (pulled by digest; from occ's pin oce.nodeBaseImage (embedded pins.yaml); for Dockerfile:10 (stage dependencies, FROM ${NODE_BASE_IMAGE}))",
		"image " + fixtureSlimBase + " in the engine (pulled by digest; from the default of ARG NODE_RUNTIME_BASE_IMAGE (Dockerfile:9); for Dockerfile:42 (stage runtime, FROM ${NODE_RUNTIME_BASE_IMAGE}), deploy/runtime/Dockerfile:13 (stage repository-client-build, FROM ${NODE_RUNTIME_BASE_IMAGE}), deploy/runtime/Dockerfile:68 (stage runtime, FROM ${NODE_RUNTIME_BASE_IMAGE}))",
		"image " + fixtureRuntimeNodeBase + " in the engine (pulled by digest; from the default of ARG NODE_BASE_IMAGE (deploy/runtime/Dockerfile:9); for deploy/runtime/Dockerfile:29 (stage openclaw-source, FROM ${NODE_BASE_IMAGE}), deploy/runtime/Dockerfile:36",
		"(target runtime, NODE_BASE_IMAGE=" + pinnedNodeBase + ")",
		"[cluster] Build the controller and Agent runtime images from the checkout: file " + filepath.Join(stateDir, "image-build.log") + " (0600; the build output); image openclaw-enterprise-controller:kubernetes-quickstart in the engine (built through the engine's BuildKit from " + checkout,
		"[cluster] Pull the PostgreSQL image: image " + kp.PostgresImage,
		"Pull the PostgreSQL image: image " + kp.PostgresImage + " in the Docker engine (pulled by digest unless the engine has it; an image that was there is left alone by down; imported into the node with the control plane's other images)",
		"Import the control plane's images into the cluster: image openclaw-enterprise-controller:kubernetes-quickstart in the node's containerd (built, by its image ID; imported); image openclaw-enterprise-runtime:kubernetes-quickstart in the node's containerd (built, by its image ID; imported); image " + kp.PostgresImage + " in the node's containerd (PostgreSQL; imported)",
		"[] Create the PostgreSQL bootstrap Secret: Secret oce-system/postgres-bootstrap",
		"[] Create the control-plane Secrets: Secret oce-system/occ-installation-startup",
		"[] Install the OCE chart: Helm release oce-system/openclaw-enterprise",
		"[] Start the development API proxy: Deployment oce-system/occ-development-api-proxy; Service oce-system/occ-development-api (NodePort 30080)",
		"[] Wait for the OCE API through the development proxy:  nothing created; polls GET http://127.0.0.1:3100/api/auth/session",
		"[] Copy and verify the bootstrap service key: Pod oce-system/bootstrap-key-reader (temporary",
		"[] Wait for the bootstrap Namespace to be ready",
	} {
		if !strings.Contains(all.String(), want) {
			t.Errorf("the dry run lacks %q:\n%s", want, all.String())
		}
	}
	// The base pulls are typed images, one per base, as -o json shows them.
	if want := []string{pinnedNodeBase, fixtureSlimBase, fixtureRuntimeNodeBase}; strings.Join(basePulls, " ") != strings.Join(want, " ") {
		t.Errorf("base pulls described as images %v, want %v", basePulls, want)
	}
	if _, err := os.Stat(stateDir); !os.IsNotExist(err) {
		t.Errorf("the dry run created the state directory")
	}
}

// kubernetesSettings gives the Kubernetes-only profile its own settings.
func kubernetesSettings(k occdev.KubernetesOptions) map[occdev.ControlPlane]any {
	return map[occdev.ControlPlane]any{occdev.ControlPlaneKubernetes: k}
}

// devPort is the OCE API's port the options give the Kubernetes-only profile.
func devPort(o occdev.UpOptions) int {
	k, _ := o.Settings[occdev.ControlPlaneKubernetes].(occdev.KubernetesOptions)
	return k.DevPort
}

// takeTags builds a small image of its own under each tag, as another environment's build of
// the same checkout (or the developer's own `docker build -t`) would, and returns the image each
// tag names now. The images go when the test ends (by ID: a later build may have taken the tag).
func takeTags(t testing.TB, eng engine.Engine, tags ...string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\nCOPY other /other\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, tag := range tags {
		if err := os.WriteFile(filepath.Join(dir, "other"), []byte("another build of "+tag+" "+t.Name()), 0o644); err != nil {
			t.Fatal(err)
		}
		res, err := eng.Build(context.Background(), engine.BuildRequest{ContextDir: dir, Dockerfile: "Dockerfile", Tag: tag, NetworkMode: "none"})
		if err != nil {
			t.Fatal(err)
		}
		out[tag] = res.ID
		t.Cleanup(func() {
			if ins, err := eng.Image(context.Background(), tag); err == nil && ins.ID == res.ID {
				_ = eng.Untag(context.Background(), tag)
			}
			_ = eng.Untag(context.Background(), res.ID)
		})
	}
	return out
}

// checkHolds: every control-plane image the run built for the cluster is held by a recorded tag
// of its own, named after its repository and the environment, which names the image the state
// records; and a tag another build took (taken) names that other image.
func checkHolds(t testing.TB, eng engine.Engine, stateDir string, taken map[string]string) {
	t.Helper()
	st, err := state.Read(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[string]string{}
	for _, o := range st.Objects {
		if o.Type == images.TypeBuildHold {
			recorded[o.Name] = o.ID
		}
	}
	builds, err := oce.ReadBuilds(stateDir)
	if err != nil {
		t.Fatal(err)
	}
	holds := 0
	for _, b := range builds {
		if !b.Imported {
			continue
		}
		holds++
		i := slices.IndexFunc(st.ControlPlane.Images, func(img state.ControlPlaneImage) bool { return img.Role == b.Role })
		if i < 0 {
			t.Errorf("the state records no %s image", b.Role)
			continue
		}
		id := st.ControlPlane.Images[i].ID
		hold, err := images.HoldTag(b.Tag, st)
		if err != nil {
			t.Fatal(err)
		}
		if recorded[hold] != id {
			t.Errorf("the state records the hold %s on %q, want the built %s image %s", hold, recorded[hold], b.Role, id)
		}
		if ins, err := eng.Image(context.Background(), hold); err != nil || ins.ID != id {
			t.Errorf("the hold %s names %q (%v), want the built %s image %s", hold, ins.ID, err, b.Role, id)
		}
		if other, ok := taken[b.Tag]; ok {
			if ins, err := eng.Image(context.Background(), b.Tag); err != nil || ins.ID != other {
				t.Errorf("%s names %q (%v), want the other build's %s", b.Tag, ins.ID, err, other)
			}
		}
	}
	if holds == 0 || len(recorded) != holds {
		t.Errorf("%d built images, %d holds recorded: %v", holds, len(recorded), recorded)
	}
}
