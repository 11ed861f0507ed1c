package occdev_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/volume"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/cluster/k3d"
	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/controlplane/compose"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/reload"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/syncbuf"
	"github.com/openclaw/occ/internal/testbed/dockerbed"
	"github.com/openclaw/occ/internal/testbed/ocebed"
)

// fixtureCommit is the commit the fixture checkout copies claim to be at.
const fixtureCommit = "0123456789abcdef0123456789abcdef01234567"

// buildNetworkNone is the user overlay (-f) every run of the bed passes: the test engine has no
// default bridge network, which BuildKit's RUN steps would use (testdata/oce-checkout/README.md).
const buildNetworkNone = "services:\n  migrate: {build: {network: none}}\n  bootstrap: {build: {network: none}}\n  controller: {build: {network: none}}\n  worker-kubernetes: {build: {network: none}}\n"

// composeBed is the k3d bed plus the OCE part: the stand-in images the fixture checkout builds
// from, and where the real docker compose plugin is installed (the k3d bed gives the user a
// HOME of their own).
type composeBed struct {
	*k3dBed
	dockerConfig string
	// nodeBase and nodeRuntimeBase are the stand-in Node bases the bed's registry serves by
	// digest, given as OCC_DEVELOPMENT_NODE_BASE_IMAGE and OCC_DEVELOPMENT_NODE_RUNTIME_BASE_IMAGE
	// (the fixture's Dockerfiles default to Docker Hub digests).
	nodeBase, nodeRuntimeBase string
}

func newComposeBed(t testing.TB) *composeBed {
	t.Helper()
	dockerConfig := os.Getenv("DOCKER_CONFIG")
	if dockerConfig == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		dockerConfig = filepath.Join(home, ".docker")
	}
	if _, err := compose.FindPlugin(context.Background(), compose.FindPluginOptions{DockerConfig: dockerConfig}); err != nil {
		t.Fatalf("%v\n(scripts/testcompose installs it; make test runs it)", err)
	}
	// The stand-in images first: their binary is built with the Go caches of the environment
	// the test started in (the k3d bed gives the user a HOME of their own).
	ocebed.EnsureImages(t, dockerbed.Require(t))
	ocebed.EnsureMetricsImages(t, dockerbed.Require(t))
	b := &composeBed{k3dBed: newK3dBed(t, nil), dockerConfig: dockerConfig}
	b.nodeBase, b.nodeRuntimeBase = provideNodeBases(t, b.k3dBed)
	t.Setenv("DOCKER_CONFIG", dockerConfig)
	return b
}

// provideNodeBases serves the Node stand-in from the bed's registry under the full and the slim
// image's repositories, and returns their digest references.
func provideNodeBases(t testing.TB, b *k3dBed) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var refs []string
	for _, repo := range []string{"occ-bed/oce-node", "occ-bed/oce-node-slim"} {
		spec := ocebed.NodeSpec(t)
		spec.Repo = repo
		p, err := b.Provide(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		key, err := spec.Key()
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, p.Repo+":"+key+"@"+p.Digest)
	}
	return refs[0], refs[1]
}

// composeRun is one `up` of the Compose profile on the bed: its own fixture checkout copy,
// project name, ports and subnet, and the options that run it.
type composeRun struct {
	opts     occdev.UpOptions
	checkout string
	settings ocebed.Settings
}

// run prepares one `up` from a fresh fixture copy. overlays are extra user Compose files (name
// to content) passed after the build-network overlay.
func (b *composeBed) run(t testing.TB, overlays ...string) *composeRun {
	t.Helper()
	r := &composeRun{checkout: ocebed.Checkout(t, fixtureCommit), settings: ocebed.NewSettings(t, b.Engine)}
	r.opts = b.options(t)
	r.opts.ControlPlane = occdev.ControlPlaneCompose
	args := []string{"-f", r.write(t, "build-network.yaml", buildNetworkNone)}
	for i, o := range overlays {
		args = append(args, "-f", r.write(t, fmt.Sprintf("overlay-%d.yaml", i), o))
	}
	r.opts.OCE = occdev.OCEOptions{
		Repository: r.checkout, WorkingDir: r.checkout, ComposeArgs: args,
		ComposeProject: r.settings.Project, Environment: r.settings.Env(),
		NodeBaseImage: b.nodeBase, NodeRuntimeBaseImage: b.nodeRuntimeBase,
	}
	t.Cleanup(func() { b.removeProjectImages(t, r.settings.Project) })
	return r
}

func (r *composeRun) write(t testing.TB, name, content string) string {
	t.Helper()
	p := filepath.Join(r.checkout, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// cliEnv is the environment the built binary runs in for r, as a developer's shell in the
// checkout has it: the run's state directory, Compose project, ports and subnet, the bed's
// Docker config (where the Compose plugin is) and Node bases, and a cache of its own; extra
// (KEY=value) come last.
func (b *composeBed) cliEnv(t testing.TB, r *composeRun, extra ...string) []string {
	t.Helper()
	env := append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(t.TempDir(), "cache"), "OCC_DEVELOPMENT_STATE_DIRECTORY="+r.opts.StateDir,
		compose.EnvProject+"="+r.settings.Project, "DOCKER_CONFIG="+b.dockerConfig,
		controlplane.EnvNodeBaseImage+"="+b.nodeBase, controlplane.EnvNodeRuntimeBaseImage+"="+b.nodeRuntimeBase)
	for k, v := range r.settings.Env() {
		env = append(env, k+"="+v)
	}
	return append(env, extra...)
}

// network is the project's development network.
func (r *composeRun) network() string { return compose.NetworkName(r.settings.Project) }

// removeProjectImages drops the tags occ built for a project (the layers stay cached).
func (b *composeBed) removeProjectImages(t testing.TB, project string) {
	ctx := context.Background()
	imgs, err := b.Engine.API.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("reference", project+"-*"))})
	if err != nil {
		t.Logf("cleanup: list images: %v", err)
		return
	}
	for _, img := range imgs {
		for _, tag := range img.RepoTags {
			_, _ = b.engine.API.ImageRemove(ctx, tag, image.RemoveOptions{})
		}
	}
}

// projectLeftovers lists every container, volume and network of the project on the engine, by
// Compose's label and by the fixture's names, and everything of the cluster.
func (b *composeBed) projectLeftovers(t testing.TB, r *composeRun, clusterVolumes []string) []string {
	t.Helper()
	ctx := context.Background()
	names := compose.Names{
		Volumes:  []string{r.settings.Project + "_occ_postgres_data", r.settings.Project + "_occ_bootstrap_data", r.settings.Project + "_occ_configuration_data"},
		Networks: []string{r.network()},
	}
	res, err := compose.FindResources(ctx, b.engine.Verbs(), r.settings.Project, names)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	if !res.Empty() {
		out = append(out, "Compose project: "+res.String())
	}
	return append(out, b.leftovers(t, r.opts.K3d().ClusterName, clusterVolumes)...)
}

// A developer in an OCE checkout on a laptop with Docker runs the default profile — Kubernetes
// Compute, the OpenShell sandbox driver, the control plane in Compose — through `occ dev up`,
// checks it with `occ dev status` and removes it with `occ dev down`, once through the library
// and once through scripts/dev-up and the built binary from the checkout's directory; then the
// refusals and failures of the profile, each leaving nothing behind (or the state for `down`).
// One bed serves every scenario; each scenario that needs a cluster makes its own, as `up`
// would.
func TestComposeDevEnvironment(t *testing.T) {
	startBuild()
	b := newComposeBed(t)
	t.Run("up status and down through the library", func(t *testing.T) { testComposeUpStatusDown(t, b) })
	t.Run("up status and down through scripts/dev-up from the checkout", func(t *testing.T) { testComposeCLI(t, b) })
	t.Run("Compose model refusals create nothing", func(t *testing.T) { testComposeRefusals(t, b) })
	t.Run("failures roll back or keep the state for down", func(t *testing.T) { testComposeFailures(t, b) })
	t.Run("SIGKILL after each step then down", func(t *testing.T) { testComposeKillAtEachStep(t, b, syscall.SIGKILL) })
	t.Run("Ctrl-C after each step", func(t *testing.T) { testComposeKillAtEachStep(t, b, syscall.SIGINT) })
}

// testComposeUpStatusDown: `up` builds the images, starts the data services, creates the k3d
// cluster on the project's network, installs the platform, writes the Installation with the
// runtime image and the container kubeconfig, starts the API and the worker, waits until both
// are ready, copies and verifies the key, and waits for the bootstrap Namespace, which the
// worker stand-in provisions in the k3d cluster over the Compose network. `status` shows the
// services and the API; the key's secret is in the key file and nowhere else; `down` leaves
// nothing of the project or the cluster, and no state directory.
func testComposeUpStatusDown(t *testing.T, b *composeBed) {
	ctx := context.Background()
	b.forgetProducts(t)
	b.Engine.Forget(b.nodeBase, b.nodeRuntimeBase)
	// The engineer's metrics and logging overlays, as in an OCE checkout, with the bed's
	// stand-in images: the metrics stack starts after the API services except the worker agent,
	// which needs the Docker Compute worker and is left out; the logging Collector starts with
	// the data services, which depend on it and log to it.
	r := b.run(t, ocebed.MetricsOverlay, ocebed.LoggingOverlay)
	r.opts.OCE.ComposeArgs = append([]string{"-f", filepath.Join(r.checkout, "compose.metrics.yaml"), "-f", filepath.Join(r.checkout, "compose.logging.yaml")}, r.opts.OCE.ComposeArgs...)
	promPort, grafanaPort, forwardPort, collectorMetricsPort := freeLoopbackPort(t), freeLoopbackPort(t), freeLoopbackPort(t), freeLoopbackPort(t)
	const grafanaPassword = "grafana-canary-6b1d0c"
	r.opts.OCE.Environment["OCC_PROMETHEUS_PORT"] = fmt.Sprint(promPort)
	r.opts.OCE.Environment["OCC_GRAFANA_PORT"] = fmt.Sprint(grafanaPort)
	r.opts.OCE.Environment["OCC_METRICS_GRAFANA_PASSWORD"] = grafanaPassword
	r.opts.OCE.Environment["OTEL_EXPORTER_OTLP_LOGS_ENDPOINT"] = "http://127.0.0.1:4318/v1/logs"
	r.opts.OCE.Environment["OTEL_COLLECTOR_PORT"] = fmt.Sprint(forwardPort)
	r.opts.OCE.Environment["OTEL_COLLECTOR_METRICS_PORT"] = fmt.Sprint(collectorMetricsPort)
	r.opts.OCE.Environment["OCC_DOCKER_LOGGING_ADDRESS"] = fmt.Sprintf("127.0.0.1:%d", forwardPort)
	// The bases as a checkout gives them, without occ's overrides: compose.yaml's
	// NODE_BASE_IMAGE by tag (the engineer's NODE_BASE_IMAGE, here the stand-in's tag at the
	// bed's registry), and the runtime Dockerfile's ARG defaults by digest (this copy's point at
	// the bed's registry instead of Docker Hub).
	r.opts.OCE.NodeBaseImage, r.opts.OCE.NodeRuntimeBaseImage = "", ""
	nodeTag, _, _ := strings.Cut(b.nodeBase, "@")
	r.opts.OCE.Environment["NODE_BASE_IMAGE"] = nodeTag
	runtimeDockerfile := filepath.Join(r.checkout, "deploy", "runtime", "Dockerfile")
	df, err := os.ReadFile(runtimeDockerfile)
	if err != nil {
		t.Fatal(err)
	}
	moved := strings.NewReplacer(fixtureRuntimeNodeBase, b.nodeBase, fixtureSlimBase, b.nodeRuntimeBase).Replace(string(df))
	if moved == string(df) {
		t.Fatal("the fixture's runtime Dockerfile no longer defaults to the Docker Hub digests")
	}
	if err := os.WriteFile(runtimeDockerfile, []byte(moved), 0o644); err != nil {
		t.Fatal(err)
	}
	downAtEnd(t, r.opts.StateDir)
	times := newStepTimes()
	r.opts.Progress = times.sink
	log := r.opts.Log.(*syncbuf.Buffer)
	// Another environment's build (or the developer's own docker build -t) takes the Agent
	// runtime's tag between this run's build and its import.
	var taken map[string]string
	inner := r.opts.Seams().AfterStep
	r.opts.Seams().AfterStep = func(step string) error {
		if step == "Build the control-plane images from the checkout" {
			taken = takeTags(t, b.engine.Verbs(), controlplane.DefaultRuntimeTag)
		}
		if inner != nil {
			return inner(step)
		}
		return nil
	}
	sum, err := occdev.Up(ctx, r.opts)
	t.Logf("up: step, lane, start, took:\n%s", times.table())
	if err != nil {
		t.Fatalf("up: %v\nlog:\n%s", err, log)
	}
	if len(taken) != 1 {
		t.Errorf("no other build took the Agent runtime's tag: %v", taken)
	}
	checkHolds(t, b.engine.Verbs(), r.opts.StateDir, taken)
	dir, name := r.opts.StateDir, r.opts.K3d().ClusterName
	node := "k3d-" + name + "-server-0"
	vols := b.volumesOf(t, name)

	// The summary: the reference's fields, and the exact down command.
	o := sum.OCE
	if o == nil || sum.ControlPlane != "" {
		t.Fatalf("summary without the control plane: %+v", sum)
	}
	apiURL := fmt.Sprintf("http://127.0.0.1:%d", r.settings.APIPort)
	if o.APIURL != apiURL || !strings.HasPrefix(o.InstallationID, "ins_") || o.KeyFile != filepath.Join(dir, controlplane.KeyFileName) ||
		!strings.HasPrefix(o.ControlPlane, "Compose (project "+r.settings.Project) || o.Drivers != "compute kubernetes, sandbox openshell" ||
		!strings.HasPrefix(o.Namespace, "ns_") || !strings.HasPrefix(o.RuntimeImage, "docker.io/library/openclaw-enterprise-runtime@sha256:") ||
		sum.DownCommand != "occ dev down --state-dir "+dir || sum.Context != "k3d-"+name {
		t.Errorf("summary: %+v, OCE %+v", sum, o)
	}

	// The services run, from the images occ built, with the overlays'; the left-out worker
	// agent does not; the node is on the project's network.
	stack := compose.Stack{Project: r.settings.Project, Engine: b.engine.Verbs()}
	started := []string{"postgres", "collector", "migrate", "bootstrap", "controller", "worker-kubernetes", "prometheus", "grafana", "metrics-api"}
	states, err := stack.Status(ctx, append(started, "worker", "metrics-worker")...)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"postgres": "running (healthy)", "migrate": "exited with code 0", "bootstrap": "exited with code 0", "controller": "running (healthy)", "worker-kubernetes": "running",
		"collector": "running", "grafana": "running", "metrics-api": "running", "prometheus": "running", "worker": "missing", "metrics-worker": "missing"}
	for _, s := range states {
		if s.String() != want[s.Service] {
			t.Errorf("service %s is %s, want %s", s.Service, s, want[s.Service])
		}
	}
	// The plan's order is the order Compose started them in: each service after every service
	// it needs, and each stage after the one before (the Collector with the data services, not
	// after the controller).
	assertStartOrder(t, b, r.settings.Project, started, [][2]string{{"collector", "migrate"}, {"collector", "controller"}, {"bootstrap", "controller"},
		{"worker-kubernetes", "prometheus"}, {"prometheus", "grafana"}, {"prometheus", "metrics-api"}, {"controller", "metrics-api"}})
	// worker-kubernetes has the metrics settings the overlay gives the Docker Compute worker;
	// the controller and worker-kubernetes read the Installation, whatever the logging overlay
	// says.
	for name, env := range map[string][]string{
		"worker-kubernetes": {"OCC_METRICS_ENABLED=true", "OCC_METRICS_HOST=127.0.0.1", "OCC_METRICS_PORT=9464", "OCC_CONFIG_PATH=/run/openclaw-development/installation.yaml"},
		"controller":        {"OCC_METRICS_ENABLED=true", "OCC_CONFIG_PATH=/run/openclaw-development/installation.yaml"},
	} {
		c := serviceContainer(t, b, r.settings.Project, name)
		for _, e := range env {
			if !slices.Contains(c.Config.Env, e) {
				t.Errorf("%s lacks %s: %q", name, e, c.Config.Env)
			}
		}
	}
	// The services log to the Collector through the engine's fluentd driver.
	if err := waitFor(30*time.Second, func() error {
		resp, err := controlplane.NewAPIClient(5 * time.Second).Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", collectorMetricsPort))
		if err != nil {
			return err
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(got), "otelcol_receiver_fluentforward_bytes 0\n") || !strings.Contains(string(got), "otelcol_receiver_fluentforward_bytes ") {
			return fmt.Errorf("the Collector received nothing: %q", got)
		}
		return nil
	}); err != nil {
		t.Errorf("logging: %v", err)
	}
	// The metrics stack answers on its loopback publications.
	for url, body := range map[string]string{fmt.Sprintf("http://127.0.0.1:%d/-/ready", promPort): "Prometheus Server is Ready.", fmt.Sprintf("http://127.0.0.1:%d/api/health", grafanaPort): `"database":"ok"`} {
		resp, err := controlplane.NewAPIClient(5 * time.Second).Get(url)
		if err != nil {
			t.Errorf("GET %s: %v", url, err)
			continue
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(got), body) {
			t.Errorf("GET %s: %d %q", url, resp.StatusCode, got)
		}
	}
	// The summary lists every service of the merged model, started or not and why.
	why := map[string]compose.ServiceStatus{}
	for _, s := range o.Services {
		why[s.Name] = s
	}
	for _, n := range started {
		if !why[n].Started {
			t.Errorf("summary: %s %+v, want started", n, why[n])
		}
	}
	if w := why["worker"]; w.Started || !strings.Contains(w.Why, "Docker Compute worker") {
		t.Errorf("summary: worker %+v", w)
	}
	if w := why["metrics-worker"]; w.Started || !strings.HasPrefix(w.Why, "left out, as it cannot run in this profile: it needs worker (depends_on, network_mode)") {
		t.Errorf("summary: metrics-worker %+v", w)
	}
	// The real base images of the builds: both Node stand-ins by digest, in the summary and the
	// state, each with the Dockerfile lines that use it.
	// The tag was resolved to the digest the registry serves and said so; the digests came in as
	// they were.
	if len(o.BaseImages) != 3 || !strings.HasPrefix(o.BaseImages[0], b.nodeBase+" (resolved from the tag "+nodeTag+") for Dockerfile:10 (stage dependencies") ||
		!strings.HasPrefix(o.BaseImages[1], b.nodeRuntimeBase+" for deploy/runtime/Dockerfile:13") || !strings.HasPrefix(o.BaseImages[2], b.nodeBase+" for deploy/runtime/Dockerfile:29") {
		t.Errorf("summary base images: %q", o.BaseImages)
	}
	server, err := b.engine.API.ContainerInspect(ctx, node)
	if err != nil {
		t.Fatal(err)
	}
	if _, on := server.NetworkSettings.Networks[r.network()]; !on {
		t.Errorf("node %s is on %v, not %s", node, server.NetworkSettings.Networks, r.network())
	}

	// The key: 0600, verified, its secret nowhere else.
	key := readKey(t, o.KeyFile)
	if fi, err := os.Stat(o.KeyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key file %s: %v, mode %v", o.KeyFile, err, fi.Mode())
	}
	if key.Meta.InstallationID != o.InstallationID {
		t.Errorf("key of Installation %s, summary says %s", key.Meta.InstallationID, o.InstallationID)
	}

	// The Installation: kubeconfig authentication with the mounted container kubeconfig, the
	// Gateway on the node's name, the runtime by digest; the controller reached the cluster.
	inst, err := os.ReadFile(sum.Installation)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"mode: kubeconfig", "kubeconfigPath: /run/openclaw-development/kubeconfig", "context: k3d-" + name,
		"endpoint: http://" + node + ":30051", "requireImmutableDigest: true", "gateway: " + o.RuntimeImage, "kubernetes.io/hostname: " + node, "gatewayStorageClassName: local-path"} {
		if !bytes.Contains(inst, []byte(w)) {
			t.Errorf("the Installation lacks %q", w)
		}
	}
	probe := controllerProbe(t, apiURL)
	if !probe.Reachable || probe.Server != "https://"+node+":6443" {
		t.Errorf("the controller's view of the cluster: %+v", probe)
	}
	kc := kubeClient(t, mustState(t, dir).Cluster)
	nsList, err := kc.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: controlplane.NamespaceLabel})
	if err != nil || len(nsList.Items) != 1 || nsList.Items[0].Labels[controlplane.NamespaceLabel] != o.Namespace {
		t.Errorf("bootstrap namespaces in the cluster: %v (%v)", nsList, err)
	}

	// The state records the project and its objects as typed records, and the snapshot.
	st := mustState(t, dir)
	cp := st.ControlPlane
	if cp == nil || cp.Checkout != r.checkout || cp.Commit != fixtureCommit || cp.Compose == nil || cp.Compose.Snapshot != filepath.Join(dir, "compose.yaml") ||
		cp.KeyPath != o.KeyFile || !cp.KeyOwned || cp.InstallationID != o.InstallationID || len(cp.Images) != 2 ||
		strings.Join(cp.Compose.Started, " ") != strings.Join(started, " ") {
		t.Errorf("recorded control plane: %+v", cp)
	}
	if bi := cp.BaseImages; len(bi) != 3 || bi[0].Given != nodeTag || !bi[0].Resolved || bi[0].Reference != b.nodeBase ||
		!strings.HasPrefix(bi[0].Source, "the Compose build argument NODE_BASE_IMAGE of migrate") || !strings.HasPrefix(bi[0].ID, "sha256:") ||
		!slices.Contains(bi[0].Uses, "Dockerfile:10 (stage dependencies, FROM ${NODE_BASE_IMAGE})") ||
		bi[1].Reference != b.nodeRuntimeBase || bi[1].Resolved || bi[1].Source != "the default of ARG NODE_RUNTIME_BASE_IMAGE (deploy/runtime/Dockerfile:10)" ||
		!slices.Contains(bi[1].Uses, "deploy/runtime/Dockerfile:68 (stage runtime, FROM ${NODE_RUNTIME_BASE_IMAGE})") ||
		bi[2].Reference != b.nodeBase || bi[2].Source != "the default of ARG NODE_BASE_IMAGE (deploy/runtime/Dockerfile:9)" {
		t.Errorf("recorded base images: %+v", cp.BaseImages)
	}
	count := map[state.Type]int{}
	for _, obj := range st.Objects {
		count[obj.Type]++
	}
	if count[compose.TypeProject] != 1 || count[compose.TypeServices] != 1 || count[compose.TypeNetwork] != 1 || count[compose.TypeVolume] != 4 || count[k3d.TypeCluster] != 1 || count[images.TypeClusterImage] != 4 {
		t.Errorf("records by type: %v", count)
	}

	// Status adds the services and the API readiness.
	status, err := occdev.GetStatus(ctx, occdev.StatusOptions{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if status.ControlPlane == nil || status.ControlPlane.API != "ready" || len(status.ControlPlane.Services) != len(started) {
		t.Fatalf("status of the control plane: %+v", status.ControlPlane)
	}
	for _, s := range status.ControlPlane.Services {
		if s.State != want[s.Service] {
			t.Errorf("status of %s: %s, want %s", s.Service, s.State, want[s.Service])
		}
	}
	for _, obj := range status.Objects {
		if obj.State != state.Present {
			t.Errorf("status of %s %s: %s (%s)", obj.Type, obj.Name, obj.State, obj.Detail)
		}
	}

	// occ dev logs reads every service of the running environment.
	logs := checkComposeLogs(t, b, dir, apiURL, r.settings.Project)

	// The canary: the key's secret is in the key file and nowhere else.
	said := []string{log.String(), times.table(), fmt.Sprintf("%+v %+v", sum, o), mustJSON(t, status), logs}
	assertSecretNowhere(t, key.Data.Key, dir, o.KeyFile, said)
	// The overlay's Grafana password is in the private snapshot Compose runs from, and in no
	// output and no other file of the state.
	assertSecretNowhere(t, grafanaPassword, dir, filepath.Join(dir, compose.SnapshotName), said)

	// A reload of the edited controller alone recreates the metrics agent that shares its
	// network namespace, which then runs in the new controller's.
	editSource(t, filepath.Join(r.checkout, serverScript), "edit under the metrics agent")
	reloadStart := time.Now()
	rel, err := occdev.Reload(ctx, occdev.ReloadOptions{Options: reload.Options{StateDir: dir, Services: []string{"controller"}}})
	if err != nil {
		t.Fatalf("reload controller: %v", err)
	}
	t.Logf("reload of the controller with its metrics agent took %s", time.Since(reloadStart).Round(time.Millisecond))
	if !slices.Equal(rel.Rolled, []string{"controller", "metrics-api"}) {
		t.Errorf("reload controller recreated %q, want the controller and the agent in its namespace", rel.Rolled)
	}
	ctrl, agent := serviceContainer(t, b, r.settings.Project, "controller"), serviceContainer(t, b, r.settings.Project, "metrics-api")
	if string(agent.HostConfig.NetworkMode) != "container:"+ctrl.ID || !agent.State.Running {
		t.Errorf("metrics-api runs %v in network %s, want the new controller's container:%s", agent.State.Running, agent.HostConfig.NetworkMode, ctrl.ID)
	}

	start := time.Now()
	res, err := occdev.Down(ctx, occdev.DownOptions{StateDir: dir, Log: log})
	if err != nil {
		t.Fatalf("down: %v\nlog:\n%s", err, log)
	}
	t.Logf("down took %s and removed %d records", time.Since(start).Round(time.Millisecond), len(res.Removed))
	order := []string{"Compose services of " + r.settings.Project, "k3d cluster " + name, "Compose project " + r.settings.Project}
	if err := inOrder(log.String(), order); err != nil {
		t.Errorf("down's order: %v\nlog:\n%s", err, log)
	}
	if left := b.projectLeftovers(t, r, vols); len(left) > 0 {
		t.Errorf("after down: %v", left)
	}
	for _, ref := range []string{b.nodeBase, b.nodeRuntimeBase} {
		if id := b.imageID(t, ref); id != "" {
			t.Errorf("after down: the base image %s occ pulled is left (%s)", ref, id)
		}
	}
	if !stateGone(dir) {
		t.Errorf("state directory %s left after down", dir)
	}
}

// assertStartOrder checks the order the engine started the services of project in against
// services, the order the plan gives: before[i][0] must have started no later than before[i][1]
// (a service and one that needs it, or two in consecutive stages; services without such a link
// start side by side, in any order).
func assertStartOrder(t *testing.T, b *composeBed, project string, services []string, before [][2]string) {
	t.Helper()
	at := map[string]time.Time{}
	for _, name := range services {
		c := serviceContainer(t, b, project, name)
		ts, err := time.Parse(time.RFC3339Nano, c.State.StartedAt)
		if err != nil {
			t.Fatalf("%s started at %q: %v", name, c.State.StartedAt, err)
		}
		at[name] = ts
	}
	for _, pair := range before {
		if slices.Index(services, pair[0]) > slices.Index(services, pair[1]) {
			t.Errorf("the plan lists %s after %s", pair[0], pair[1])
		}
		if at[pair[0]].After(at[pair[1]]) {
			t.Errorf("%s started at %s, after %s at %s", pair[0], at[pair[0]].Format(time.RFC3339Nano), pair[1], at[pair[1]].Format(time.RFC3339Nano))
		}
	}
}

// serviceContainer is the one container of service in project.
func serviceContainer(t *testing.T, b *composeBed, project, service string) container.InspectResponse {
	t.Helper()
	ctx := context.Background()
	list, err := b.engine.API.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(
		filters.Arg("label", "com.docker.compose.project="+project), filters.Arg("label", "com.docker.compose.service="+service))})
	if err != nil || len(list) != 1 {
		t.Fatalf("containers of %s: %v (%v)", service, list, err)
	}
	c, err := b.engine.API.ContainerInspect(ctx, list[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// waitFor polls cond until it holds or the bound passes, and returns its last error: for what
// arrives asynchronously and announces itself nowhere (the engine's fluentd driver sends logs in
// the background).
func waitFor(bound time.Duration, cond func() error) error {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(bound)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		select {
		case <-deadline:
			return fmt.Errorf("after %s: %w", bound, err)
		case <-tick.C:
		}
	}
}

// freeLoopbackPort is a loopback port nothing listens on now, taken below the kernel's range of
// ephemeral ports. A port the kernel hands out for ":0" is one it may give again, at any moment,
// as the local port of an outgoing connection (the bed makes hundreds), so an `up` that binds it
// a few seconds later can find it taken: seen once in the Kubernetes-only failure matrix.
func freeLoopbackPort(t testing.TB) int {
	t.Helper()
	lo, hi := 20000, 32767
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if first, err := strconv.Atoi(f[0]); err == nil && first > 2048 {
				lo, hi = max(1024, first-12768), first-1
			}
		}
	}
	for range 500 {
		port := lo + rand.IntN(hi-lo+1)
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			l.Close()
			return port
		}
	}
	t.Fatalf("no free loopback port between %d and %d", lo, hi)
	return 0
}

// testComposeCLI runs scripts/dev-up as committed, with the binary built from this tree as its
// bin/occ, from the fixture checkout's directory (no --repository: the checkout is found from
// there): the default combination reaches `occ dev up`, which starts the whole stack; the dry
// run lists what the project would create; `status` and `down` through the binary.
func testComposeCLI(t *testing.T, b *composeBed) {
	b.forgetProducts(t)
	bin := buildOCC(t)
	r := b.run(t)
	downAtEnd(t, r.opts.StateDir)
	script := devUpScript(t, bin)
	env := b.cliEnv(t, r)
	run := func(name string, args ...string) (string, string, error) {
		cmd := exec.Command(name, args...)
		cmd.Dir = filepath.Join(r.checkout, "apps", "controller")
		cmd.Env = env
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		return out.String(), errOut.String(), err
	}
	flags := []string{"--cluster-name", r.opts.K3d().ClusterName, "--pin-file", b.pinFile, "--openshell-archive", b.archive,
		"--gateway-endpoint", r.opts.GatewayEndpoint, "--startup-timeout", "3m", "--", "-f", "../../build-network.yaml"}
	out, errOut, err := run("bash", append([]string{script, "--dry-run"}, flags...)...)
	if err != nil {
		t.Fatalf("dry run: %v\n%s\n%s", err, out, errOut)
	}
	for _, w := range []string{"OCE checkout:    " + r.checkout + " at " + fixtureCommit + " (working directory)", "Compose project: " + r.settings.Project,
		"postgres", "volumes:", r.settings.Project + "_occ_bootstrap_data", r.network() + " (subnet " + r.settings.Subnet,
		fmt.Sprintf("127.0.0.1:%d -> 3000/tcp of controller", r.settings.APIPort), "Start postgres, migrate and bootstrap", "Copy and verify the bootstrap service key",
		"worker: not started (the Docker Compute worker of compose.yaml", "base images:   " + b.nodeBase + " (pulled by digest; from " + controlplane.EnvNodeBaseImage + ") for Dockerfile:10",
		"Pull the base images of the control-plane builds"} {
		if !strings.Contains(out, w) {
			t.Errorf("dry run lacks %q:\n%s", w, out)
		}
	}
	if !stateGone(r.opts.StateDir) {
		t.Fatal("the dry run created the state directory")
	}

	out, errOut, err = run("bash", append([]string{script}, flags...)...)
	if err != nil {
		t.Fatalf("scripts/dev-up: %v\nstdout:\n%s\nstderr:\n%s", err, out, errOut)
	}
	t.Logf("scripts/dev-up:\n%s", out)
	keyFile := filepath.Join(r.opts.StateDir, controlplane.KeyFileName)
	for label, w := range map[string]string{
		"Control plane:":   "Compose (project " + r.settings.Project,
		"Drivers:":         "compute kubernetes, sandbox openshell",
		"API URL:":         fmt.Sprintf("http://127.0.0.1:%d", r.settings.APIPort),
		"Installation ID:": "ins_",
		"Key file:":        keyFile,
		"Context:":         "k3d-" + r.opts.K3d().ClusterName,
	} {
		if got := field(out, label); !strings.HasPrefix(got, w) {
			t.Errorf("summary %s %q, want it to start with %q", label, got, w)
		}
	}
	occ := filepath.Join(filepath.Dir(filepath.Dir(script)), "bin", "occ")
	if !strings.Contains(out, "OpenClaw Enterprise development stack is ready.") || !strings.HasSuffix(out, "Remove everything it created with:\n  "+occ+" dev down --state-dir "+r.opts.StateDir+"\n") {
		t.Errorf("the summary lacks the header or the exact down command:\n%s", out)
	}
	if strings.Contains(errOut, "level=") || strings.Contains(errOut, "time=") {
		t.Errorf("a library logged in its own format on stderr:\n%s", errOut)
	}
	key := readKey(t, keyFile)
	vols := b.volumesOf(t, r.opts.K3d().ClusterName)

	out, errOut, err = run(bin, "dev", "status")
	if err != nil {
		t.Fatalf("occ dev status: %v\n%s\n%s", err, out, errOut)
	}
	for _, w := range []string{"controller           running (healthy)", "bootstrap            exited with code 0", "worker-kubernetes    running", ": ready", "Compose:       project " + r.settings.Project} {
		if !strings.Contains(out, w) {
			t.Errorf("status lacks %q:\n%s", w, out)
		}
	}
	statusJSON, _, err := run(bin, "dev", "status", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	downOut, errDown, err := run(bin, "dev", "down")
	if err != nil {
		t.Fatalf("occ dev down: %v\n%s\n%s", err, downOut, errDown)
	}
	assertSecretNowhere(t, key.Data.Key, r.opts.StateDir, keyFile, []string{out, errOut, statusJSON, downOut, errDown})
	if left := b.projectLeftovers(t, r, vols); len(left) > 0 {
		t.Errorf("after occ dev down: %v", left)
	}
	if !stateGone(r.opts.StateDir) {
		t.Error("state directory left after occ dev down")
	}
}

// devUpScript lays scripts/dev-up out as in a checkout of occ, with bin/occ the built binary.
func devUpScript(t *testing.T, bin string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "..", "scripts", "dev-up"))
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	for _, d := range []string{"scripts", "bin"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := filepath.Join(root, "scripts", "dev-up")
	if err := os.WriteFile(script, src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(root, "bin", "occ")); err != nil {
		t.Fatal(err)
	}
	return script
}

// testComposeRefusals: each Compose model the profile refuses stops `up` before anything is
// created: no state directory, nothing of the project on the engine, no cluster.
func testComposeRefusals(t *testing.T, b *composeBed) {
	cases := []struct {
		name    string
		overlay string
		images  controlplane.ImageSelection
		prepare func(t *testing.T, r *composeRun)
		want    []string
	}{
		{name: "a selected controller image without a runtime image", images: controlplane.ImageSelection{Controller: "registry.example/oce/controller@sha256:" + strings.Repeat("a", 64)},
			want: []string{"OCC_DEVELOPMENT_CONTROLLER_IMAGE and OCC_KUBERNETES_RUNTIME_IMAGE must be selected together"}},
		{name: "selected images by tag", images: controlplane.ImageSelection{Controller: "registry.example/oce/controller:main", Runtime: "registry.example/oce/runtime:main"},
			want: []string{"selected controller and runtime images must use immutable sha256 digest references", "registry.example/oce/controller:main"}},
		{name: "an external volume", overlay: "volumes:\n  occ_bootstrap_data:\n    external: true\n",
			want: []string{"volumes.occ_bootstrap_data.external", "Kubernetes development cannot use external volumes"}},
		{name: "a container_name", overlay: "services:\n  postgres:\n    container_name: my-postgres\n",
			want: []string{"service postgres: container_name", "must use a Compose-owned container name"}},
		{name: "a non-loopback publication", overlay: "services:\n  controller:\n    ports: !override\n      - \"0.0.0.0:3999:3000\"\n",
			want: []string{"service controller: ports[0]", "0.0.0.0:3999:3000", "every publication must bind loopback"}},
		{name: "a missing required service", overlay: "services:\n  worker-kubernetes:\n    profiles: [never]\n",
			want: []string{"the development stack requires service worker-kubernetes", "disabled by profile never"}},
		{name: "an existing project resource", prepare: func(t *testing.T, r *composeRun) {
			ctx := context.Background()
			v, err := b.Engine.API.VolumeCreate(ctx, volume.CreateOptions{Name: r.settings.Project + "_occ_bootstrap_data"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = b.engine.API.VolumeRemove(context.Background(), v.Name, true) })
		}, want: []string{"Compose project already has resources: " + "%PROJECT%", "volume %PROJECT%_occ_bootstrap_data"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var overlays []string
			if c.overlay != "" {
				overlays = append(overlays, c.overlay)
			}
			r := b.run(t, overlays...)
			r.opts.OCE.Images = c.images
			if c.prepare != nil {
				c.prepare(t, r)
			}
			downAtEnd(t, r.opts.StateDir)
			_, err := occdev.Up(context.Background(), r.opts)
			if err == nil {
				t.Fatal("up succeeded")
			}
			for _, w := range c.want {
				w = strings.ReplaceAll(w, "%PROJECT%", r.settings.Project)
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if !stateGone(r.opts.StateDir) {
				t.Errorf("state directory created: %v", err)
			}
			left := b.projectLeftovers(t, r, nil)
			if c.prepare != nil && len(left) == 1 && strings.HasPrefix(left[0], "Compose project: volume ") {
				left = nil // the test's own volume
			}
			if len(left) > 0 {
				t.Errorf("left after the refusal: %v", left)
			}
		})
	}
}

// testComposeFailures: a failure at each stage of the profile in turn. Before the cluster exists
// (a failure after each of the profile's own steps; compose up failing on a taken port; migrate
// exiting 1) the rollback takes the project down and removes the state directory. After it (a
// failure after the API starts; a bootstrap key of another Installation, refused and never
// written; a worker that never becomes ready; a failure after the Namespace wait, which also
// removes the user's --key-output file) the rollback stops the reconcilers, deletes the cluster
// and takes the project down. A cluster creation that fails by itself keeps the state with the
// cluster's record, and `down` finishes from it.
func testComposeFailures(t *testing.T, b *composeBed) {
	t.Run("after each step", func(t *testing.T) { testComposeFailureAfterEachStep(t, b) })
	t.Run("compose up fails on a taken port", func(t *testing.T) {
		r := b.run(t)
		l, err := netListen(r.settings.PostgresPort)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		composeUpFails(t, b, r, "Start postgres, migrate and bootstrap", "docker compose up", "address already in use", "rolled back: everything")
	})
	t.Run("migrate exits 1", func(t *testing.T) {
		r := b.run(t, "services:\n  migrate:\n    environment:\n      OCC_MIGRATION_DATABASE_URL: mysql://occ_migrator:occ-migrator-local@postgres/openclaw_enterprise\n")
		err := composeUpFails(t, b, r, "migrate exited with 1", "MIGRATION_FAILED", "rolled back: everything")
		if strings.Contains(err.Error(), "occ-migrator-local") {
			t.Errorf("the error shows a database password:\n%v", err)
		}
	})
	t.Run("the cluster's creation fails", func(t *testing.T) {
		r := b.run(t)
		downAtEnd(t, r.opts.StateDir)
		// The node's container dies as soon as it starts (a crash of k3s): k3d's own creation
		// fails after the cluster was recorded.
		node := "k3d-" + r.opts.K3d().ClusterName + "-server-0"
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ev, errs := b.engine.API.Events(ctx, events.ListOptions{Filters: filters.NewArgs(
			filters.Arg("type", "container"), filters.Arg("event", "start"), filters.Arg("container", node))})
		killed := make(chan error, 1)
		go func() {
			select {
			case <-ev:
				killed <- b.Engine.API.ContainerKill(context.Background(), node, "KILL")
			case err := <-errs:
				killed <- err
			case <-ctx.Done():
				killed <- ctx.Err()
			}
		}()
		_, err := occdev.Up(context.Background(), r.opts)
		t.Logf("up with a failing creation: %v", err)
		// An `up` that failed before the node ever started must not leave the watcher waiting.
		cancel()
		if kerr := <-killed; kerr != nil {
			t.Fatalf("kill the node: %v", kerr)
		}
		if err == nil || !strings.Contains(err.Error(), "Create k3d cluster "+r.opts.K3d().ClusterName) || !strings.Contains(err.Error(), "is kept with its record") {
			t.Fatalf("up: %v; want the failed creation and the kept state", err)
		}
		st := mustState(t, r.opts.StateDir)
		if len(st.Objects) != 1 || st.Objects[0].Type != k3d.TypeCluster {
			t.Errorf("kept records: %v, want only the cluster's", st.Objects)
		}
		if res, _ := compose.FindResources(context.Background(), b.engine.Verbs(), r.settings.Project, compose.Names{}); !res.Empty() {
			t.Errorf("the project was not taken down by the rollback: %s", res)
		}
		if _, err := occdev.Down(context.Background(), occdev.DownOptions{StateDir: r.opts.StateDir}); err != nil {
			t.Fatalf("down: %v", err)
		}
		if !stateGone(r.opts.StateDir) {
			t.Error("state directory left after down")
		}
		if left := b.projectLeftovers(t, r, nil); len(left) > 0 {
			t.Errorf("left after down: %v", left)
		}
	})
	t.Run("after the API starts", func(t *testing.T) {
		r := b.run(t)
		r.opts.Seams().AfterStep = failAfter("Start the controller and worker-kubernetes")
		composeUpFails(t, b, r, "injected failure", "rolled back: everything")
	})
	t.Run("a bootstrap key of another Installation is refused and never written", func(t *testing.T) {
		r := b.run(t)
		userDir := privateDir(t)
		r.opts.OCE.KeyOutput = filepath.Join(userDir, "key.json")
		var secret string
		r.opts.Seams().AfterStep = func(name string) error {
			if name == "Wait for the API and the worker to be ready" {
				secret = doctorBootstrapKey(t, b, r.settings.Project)
			}
			return nil
		}
		err := composeUpFails(t, b, r, "Installation ID does not match the bootstrap service key", "rolled back: everything")
		if _, statErr := os.Stat(r.opts.OCE.KeyOutput); !errors.Is(statErr, fs.ErrNotExist) {
			t.Errorf("the refused key was written to %s", r.opts.OCE.KeyOutput)
		}
		if secret == "" || strings.Contains(err.Error(), secret) {
			t.Errorf("the key's secret is in the error (or was never read): %v", err)
		}
	})
	t.Run("a worker that never becomes ready", func(t *testing.T) {
		r := b.run(t, "services:\n  worker-kubernetes:\n    environment:\n      OCC_DATABASE_URL: postgresql://occ_app:wrong-password@postgres:5432/openclaw_enterprise\n")
		r.opts.StartupTimeout = 45 * time.Second
		composeUpFails(t, b, r, "Wait for the API and the worker to be ready", "development readiness: context deadline exceeded",
			"The worker has not reported a recent healthy database observation.", "rolled back: everything")
	})
	t.Run("after the bootstrap Namespace is ready, with selected images and a user's key file", func(t *testing.T) {
		r := b.run(t)
		r.opts.OCE.KeyOutput = filepath.Join(privateDir(t), "key.json")
		sel := b.selectImages(t, r)
		r.opts.OCE.Images = sel
		written := false
		r.opts.Seams().AfterStep = func(name string) error {
			if name == "Wait for the bootstrap Namespace to be ready" {
				_, err := os.Stat(r.opts.OCE.KeyOutput)
				written = err == nil
				b.assertSelectedImagesRun(t, r, sel)
				return errors.New("injected failure")
			}
			return nil
		}
		composeUpFails(t, b, r, "injected failure", "rolled back: everything")
		if !written {
			t.Error("the key was not written to --key-output before the failure")
		}
		if _, err := os.Stat(r.opts.OCE.KeyOutput); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the rollback left the user's key file %s (%v)", r.opts.OCE.KeyOutput, err)
		}
	})
}

// selectImages builds a controller (the development target) and an Agent runtime image from the
// run's checkout carrying its commit as their revision label, as OCE's CI would, pushes both to
// the bed's registry and returns their digest references: the images an engineer selects with
// OCC_DEVELOPMENT_CONTROLLER_IMAGE and OCC_KUBERNETES_RUNTIME_IMAGE.
func (b *composeBed) selectImages(t *testing.T, r *composeRun) controlplane.ImageSelection {
	t.Helper()
	ctx := context.Background()
	build := func(req engine.BuildRequest) string {
		img, err := controlplane.BuildImage(ctx, b.engine.Verbs(), req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = b.engine.API.ImageRemove(context.Background(), img.Reference, image.RemoveOptions{}) })
		return img.Reference
	}
	base := build(engine.BuildRequest{ContextDir: r.checkout, Dockerfile: "Dockerfile", Target: "development",
		Args: map[string]string{"NODE_BASE_IMAGE": ocebed.NodeBaseTag}, Tag: r.settings.Project + "-ci:base", NetworkMode: "none"})
	wrap := t.TempDir()
	if err := os.WriteFile(filepath.Join(wrap, "Dockerfile"), []byte("FROM "+base+"\nLABEL "+controlplane.RevisionLabel+"="+fixtureCommit+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	repo := b.Registry.Host + "/occ-test/" + strings.ReplaceAll(r.settings.Project, "_", "-")
	controller := build(engine.BuildRequest{ContextDir: wrap, Dockerfile: "Dockerfile", Tag: repo + "-controller:ci"})
	runtime := build(engine.BuildRequest{ContextDir: r.checkout, Dockerfile: controlplane.RuntimeDockerfile, NetworkMode: "none",
		Args: map[string]string{"OCC_BUILD_REVISION": fixtureCommit, controlplane.NodeBaseImageArg: ocebed.NodeBaseTag, controlplane.NodeRuntimeBaseImageArg: ocebed.NodeRuntimeBaseTag}, Tag: repo + "-runtime:ci"})
	return controlplane.ImageSelection{Controller: b.push(t, controller), Runtime: b.push(t, runtime)}
}

// push pushes a local tag to the bed's registry and returns its digest reference.
func (b *composeBed) push(t *testing.T, tag string) string {
	t.Helper()
	ref := pushDocker(t, b.Engine.API, tag)
	t.Cleanup(func() {
		_, _ = b.engine.API.ImageRemove(context.Background(), ref, image.RemoveOptions{})
	})
	return ref
}

// assertSelectedImagesRun checks, while the stack runs, that the services run the selected
// controller image (nothing was built) and the state records both selected images.
func (b *composeBed) assertSelectedImagesRun(t *testing.T, r *composeRun, sel controlplane.ImageSelection) {
	t.Helper()
	ctx := context.Background()
	want, err := b.engine.API.ImageInspect(ctx, sel.Controller)
	if err != nil {
		t.Fatal(err)
	}
	for _, svc := range []string{"bootstrap", "controller", "worker-kubernetes"} {
		list, err := b.engine.API.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(
			filters.Arg("label", compose.LabelProject+"="+r.settings.Project), filters.Arg("label", compose.LabelService+"="+svc))})
		if err != nil || len(list) != 1 || list[0].ImageID != want.ID {
			t.Errorf("service %s does not run the selected controller image %s: %v (%v)", svc, want.ID, list, err)
		}
	}
	st := mustState(t, r.opts.StateDir)
	if cp := st.ControlPlane; cp == nil || len(cp.Images) != 2 || cp.Images[0].Reference != sel.Controller || !cp.Images[0].Selected ||
		cp.Images[1].Reference != sel.Runtime || !strings.Contains(cp.Images[1].InCluster, "@sha256:") {
		t.Errorf("recorded images: %+v", st.ControlPlane)
	}
}

// composeAllStepsEnv runs the Compose profile's whole failure matrix, every step after the
// cluster's creation included.
const composeAllStepsEnv = "OCC_TEST_COMPOSE_ALL_STEPS"

// composeDefaultSteps are the steps of the matrix run by default: those before the cluster
// exists, where the profile's own records are all there is (the Compose project half-way up).
// After the cluster exists every failure is rolled back the same way (reconcilers stopped,
// cluster deleted, project down), which the named failures after it show.
var composeDefaultSteps = []string{
	"Check the settings and the Docker engine",
	"Claim the private state directory",
	"Write the Compose snapshot and record the project",
	"Pull the base images of the control-plane builds",
	"Build the control-plane images from the checkout",
	"Start postgres, migrate and bootstrap",
	"Pull the k3s node image",
	"Pull the k3d tools image",
}

// testComposeFailureAfterEachStep: a failure after each step of the default profile in turn
// (lane steps and groups) is rolled back completely: nothing of the project or the cluster is
// left, and no state directory.
func testComposeFailureAfterEachStep(t *testing.T, b *composeBed) {
	names := stepNames(t, b.run(t).opts)
	if len(names) != 42 {
		t.Fatalf("the default profile has %d steps and groups, want 42: %q", len(names), names)
	}
	for i := range names {
		t.Run(fmt.Sprintf("after step %d %s", i+1, names[i]), func(t *testing.T) {
			if !slices.Contains(composeDefaultSteps, names[i]) && os.Getenv(composeAllStepsEnv) == "" {
				t.Skipf("rolled back like the steps around it once the cluster exists (the named failures after it show that rollback); set %s=1 to run it", composeAllStepsEnv)
			}
			r := b.run(t)
			step := stepNames(t, r.opts)[i] // the cluster's step is named after this run's cluster
			// A matrix of rollbacks: the bundle has tests of its own.
			r.opts.NoDiagnose = true
			r.opts.Seams().AfterStep = failAfter(step)
			want := []string{"injected failure", step}
			if i > 0 {
				want = append(want, "rolled back: everything")
			}
			composeUpFails(t, b, r, want...)
		})
	}
}

// failAfter fails `up` right after the named step.
func failAfter(step string) func(string) error {
	return func(name string) error {
		if name == step {
			return errors.New("injected failure")
		}
		return nil
	}
}

// reloadFailingAfter is a reload of the environment in dir whose step named step fails.
func reloadFailingAfter(dir, step string) occdev.ReloadOptions {
	opts := occdev.ReloadOptions{Options: reload.Options{StateDir: dir}}
	opts.NoDiagnose = true // a matrix of interruptions; the bundle has tests of its own
	opts.Seams().AfterStep = failAfter(step)
	return opts
}

// composeUpFails runs `up` expecting it to fail with every want in the error, and checks the
// rollback left nothing: no state directory, nothing of the project, nothing of the cluster.
func composeUpFails(t *testing.T, b *composeBed, r *composeRun, want ...string) error {
	t.Helper()
	downAtEnd(t, r.opts.StateDir)
	var mu sync.Mutex
	var vols []string
	inner := r.opts.Seams().AfterStep
	r.opts.Seams().AfterStep = func(name string) error {
		if strings.HasPrefix(name, "Create the cluster while") {
			mu.Lock()
			vols = b.volumesOf(t, r.opts.K3d().ClusterName)
			mu.Unlock()
		}
		if inner != nil {
			return inner(name)
		}
		return nil
	}
	_, err := occdev.Up(context.Background(), r.opts)
	if err == nil {
		t.Fatal("up succeeded")
	}
	t.Logf("up failed as it should:\n%v", err)
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
	if !stateGone(r.opts.StateDir) {
		t.Errorf("state directory kept: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if left := b.projectLeftovers(t, r, vols); len(left) > 0 {
		t.Errorf("left after the rollback: %v", left)
	}
	return err
}

// doctorBootstrapKey replaces the key file in the bootstrap volume with the same key claiming
// another Installation (the output of another stack), and returns the key's secret.
func doctorBootstrapKey(t *testing.T, b *composeBed, project string) string {
	t.Helper()
	ctx := context.Background()
	list, err := b.engine.API.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(
		filters.Arg("label", compose.LabelProject+"="+project), filters.Arg("label", compose.LabelService+"=bootstrap"))})
	if err != nil || len(list) != 1 {
		t.Fatalf("bootstrap container: %v (%v)", list, err)
	}
	rc, _, err := b.engine.API.CopyFromContainer(ctx, list[0].ID, controlplane.BootstrapKeyPath)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(rc)
	if _, err := tr.Next(); err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(tr)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	var k keyFile
	if err := json.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	doctored := strings.Replace(string(data), k.Meta.InstallationID, "ins_00000000-0000-4000-8000-000000000000", 1)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	_ = tw.WriteHeader(&tar.Header{Name: filepath.Base(controlplane.BootstrapKeyPath), Mode: 0o600, Size: int64(len(doctored)), Uid: 1000, Gid: 1000})
	_, _ = tw.Write([]byte(doctored))
	_ = tw.Close()
	if err := b.Engine.API.CopyToContainer(ctx, list[0].ID, filepath.Dir(controlplane.BootstrapKeyPath), &buf, container.CopyToContainerOptions{}); err != nil {
		t.Fatal(err)
	}
	return k.Data.Key
}

// keyFile is the bootstrap key file's shape.
type keyFile struct {
	Data struct {
		Key string `json:"key"`
	} `json:"data"`
	Meta struct {
		InstallationID string `json:"installationId"`
	} `json:"meta"`
}

func readKey(t *testing.T, path string) keyFile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var k keyFile
	if err := json.Unmarshal(data, &k); err != nil || len(k.Data.Key) < 16 {
		t.Fatalf("key file %s: %v (a key of %d bytes)", path, err, len(k.Data.Key))
	}
	return k
}

// assertSecretNowhere fails when secret appears in any file under dir but keyFile, or in texts.
func assertSecretNowhere(t *testing.T, secret, dir, keyFile string, texts []string) {
	t.Helper()
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || p == keyFile {
			return nil
		}
		if data, err := os.ReadFile(p); err == nil && bytes.Contains(data, []byte(secret)) {
			t.Errorf("the service key's secret appears in %s", p)
		}
		return nil
	})
	for i, s := range texts {
		if strings.Contains(s, secret) {
			t.Errorf("the service key's secret appears in output %d", i)
		}
	}
}

func mustState(t *testing.T, dir string) state.State {
	t.Helper()
	st, err := state.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// inOrder checks that the lines naming each of want appear in that order in log.
func inOrder(log string, want []string) error {
	at := 0
	for _, w := range want {
		i := strings.Index(log[at:], w)
		if i < 0 {
			return fmt.Errorf("%q does not follow the earlier entries", w)
		}
		at += i + len(w)
	}
	return nil
}

// standinProbe is the controller stand-in's report of its last call to the Kubernetes API.
type standinProbe struct {
	Reachable bool   `json:"reachable"`
	Server    string `json:"server"`
	Error     string `json:"error"`
}

func controllerProbe(t *testing.T, apiURL string) standinProbe {
	t.Helper()
	resp, err := controlplane.NewAPIClient(5 * time.Second).Get(apiURL + "/_standin/kubernetes")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var p standinProbe
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		t.Fatal(err)
	}
	return p
}

func privateDir(t *testing.T) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "private")
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(d)
	if err != nil {
		t.Fatal(err)
	}
	return real
}

// netListen holds a loopback port, as another program on the laptop would.
func netListen(port int) (net.Listener, error) {
	return net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
}
