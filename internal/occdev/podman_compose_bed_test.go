package occdev_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/controlplane/compose"
	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/observe"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/syncbuf"
	"github.com/openclaw/occ/internal/testbed/dockerbed"
	"github.com/openclaw/occ/internal/testbed/ocebed"
	"github.com/openclaw/occ/internal/testbed/podmanbed"
)

// podmanComposeBed is the Compose bed on Podman: the k3d bed's machinery on the Podman engine,
// the real docker compose plugin, the PostgreSQL stand-in in Podman under compose.postgres.yaml's
// tag, and a controller and an Agent runtime image built from the fixture checkout on the Docker
// bed (Podman's builder cannot build them), pushed to the bed's registry and pulled into Podman
// by digest: the images a Podman user selects.
type podmanComposeBed struct {
	*composeBed
	docker   *dockerbed.Engine
	selected controlplane.ImageSelection
}

func newPodmanComposeBed(t *testing.T) *podmanComposeBed {
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
	dockerEngine := dockerbed.Require(t)
	// The stand-ins in Docker first (the Node base the selected images are built from), while
	// HOME is still the user's (the Go build cache).
	ocebed.EnsureImages(t, dockerEngine)
	b := &podmanComposeBed{composeBed: &composeBed{k3dBed: newK3dBedOn(t, nil, state.EnginePodman), dockerConfig: dockerConfig}, docker: dockerEngine}
	t.Setenv("DOCKER_CONFIG", dockerConfig)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pg, err := b.Provide(ctx, ocebed.PostgresSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Engine.Pull(ctx, pg.Ref); err != nil {
		t.Fatal(err)
	}
	if err := b.engine.API.ImageTag(ctx, pg.Ref, ocebed.PostgresTag); err != nil {
		t.Fatal(err)
	}
	// The metrics overlay's stand-ins, served and pulled as the PostgreSQL one (the logging
	// overlay is refused on Podman, so its Collector is not needed).
	for tag, spec := range ocebed.MetricsImageSpecs(t) {
		if tag == ocebed.CollectorTag {
			continue
		}
		img, err := b.Provide(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Engine.Pull(ctx, img.Ref); err != nil {
			t.Fatal(err)
		}
		if err := b.engine.API.ImageTag(ctx, img.Ref, tag); err != nil {
			t.Fatal(err)
		}
	}
	b.selected = b.buildSelected(t)
	return b
}

// buildSelected builds the controller (the development target) and the Agent runtime from a
// fixture copy on the Docker bed with the fixture's commit as their revision label, as OCE's CI
// would, pushes both to the bed's registry and pulls them into Podman by digest.
func (b *podmanComposeBed) buildSelected(t *testing.T) controlplane.ImageSelection {
	t.Helper()
	ctx := context.Background()
	checkout := ocebed.Checkout(t, fixtureCommit)
	build := func(req engine.BuildRequest) string {
		img, err := controlplane.BuildImage(ctx, (&docker.Engine{API: b.docker.API, Identity: engine.Identity{Kind: engine.Docker}}).Verbs(), req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = b.docker.API.ImageRemove(context.Background(), img.Reference, image.RemoveOptions{}) })
		return img.Reference
	}
	repo := b.Registry.Host + "/occ-test/" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	base := build(engine.BuildRequest{ContextDir: checkout, Dockerfile: "Dockerfile", Target: "development",
		Args: map[string]string{"NODE_BASE_IMAGE": ocebed.NodeBaseTag}, Tag: repo + "-ci:base", NetworkMode: "none"})
	wrap := t.TempDir()
	if err := os.WriteFile(filepath.Join(wrap, "Dockerfile"), []byte("FROM "+base+"\nLABEL "+controlplane.RevisionLabel+"="+fixtureCommit+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	controller := build(engine.BuildRequest{ContextDir: wrap, Dockerfile: "Dockerfile", Tag: repo + "-controller:ci"})
	runtime := build(engine.BuildRequest{ContextDir: checkout, Dockerfile: controlplane.RuntimeDockerfile, NetworkMode: "none",
		Args: map[string]string{"OCC_BUILD_REVISION": fixtureCommit, controlplane.NodeBaseImageArg: ocebed.NodeBaseTag, controlplane.NodeRuntimeBaseImageArg: ocebed.NodeRuntimeBaseTag}, Tag: repo + "-runtime:ci"})
	sel := controlplane.ImageSelection{Controller: pushDocker(t, b.docker.API, controller), Runtime: pushDocker(t, b.docker.API, runtime)}
	for _, ref := range []string{sel.Controller, sel.Runtime} {
		if _, err := b.Engine.Pull(ctx, ref); err != nil {
			t.Fatal(err)
		}
	}
	return sel
}

// pushDocker pushes a local tag of a Docker engine to the bed's registry and returns its digest
// reference.
func pushDocker(t *testing.T, api client.APIClient, tag string) string {
	t.Helper()
	ctx := context.Background()
	rc, err := api.ImagePush(ctx, tag, image.PushOptions{RegistryAuth: "e30="})
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(rc)
	for {
		var m struct{ Error string }
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if m.Error != "" {
			t.Fatalf("push %s: %s", tag, m.Error)
		}
	}
	rc.Close()
	ins, err := api.ImageInspect(ctx, tag)
	if err != nil || len(ins.RepoDigests) == 0 {
		t.Fatalf("pushed %s has no RepoDigests (%v)", tag, err)
	}
	return ins.RepoDigests[0]
}

// run is one `up` of the Compose profile on Podman with the selected images, and Podman's
// healthchecks driven for the project (podmanbed.DriveHealthchecks: the bed has no systemd).
func (b *podmanComposeBed) run(t *testing.T, overlays ...string) *composeRun {
	t.Helper()
	r := b.composeBed.run(t, overlays...)
	r.opts.OCE.Images = b.selected
	r.opts.OCE.NodeBaseImage, r.opts.OCE.NodeRuntimeBaseImage = "", ""
	podmanbed.DriveHealthchecks(t, b.Engine, compose.LabelProject, r.settings.Project, 2*time.Second)
	return r
}

// podmanComposeFailureSteps are the Compose profile's steps a failure is injected after on
// Podman by default: every step of the Docker bed's default Compose subset that the profile has
// with selected images (the preflight with Podman identified, the state's claim, the snapshot,
// the selected images' record, the data services started by the compose plugin on Podman, the
// k3s and tools pulls; only the base pulls do not exist without builds), and, where Podman is
// what is new after them, the cluster's creation joining the project's Podman network, the API
// services started on it, and the last step.
func podmanComposeFailureSteps(clusterName string) []string {
	return []string{
		"Check the settings and the Podman engine",
		"Claim the private state directory",
		"Write the Compose snapshot and record the project",
		"Build the control-plane images from the checkout",
		"Start postgres, migrate and bootstrap",
		"Pull the k3s node image",
		"Pull the k3d tools image",
		"Create k3d cluster " + clusterName,
		"Start the controller and worker-kubernetes",
		"Wait for the bootstrap Namespace to be ready",
	}
}

// A developer in an OCE checkout on a Fedora laptop with Podman runs the default profile —
// Kubernetes Compute, the OpenShell sandbox, the control plane in Compose — with `occ dev up
// --engine podman`: occ runs the project through the docker compose plugin against the Podman
// socket (the checkout's compose.podman.yaml layered), the k3d cluster on Podman joins the
// project's network, and with the controller and Agent runtime images selected by digest the API
// answers; status reads the stack through the record while DOCKER_HOST names Docker, and down
// leaves nothing of the project or the cluster in Podman. Building the checkout is refused before
// anything exists, and a failure after each default step leaves nothing.
func TestPodmanComposeDevEnvironment(t *testing.T) {
	startBuild()
	b := newPodmanComposeBed(t)
	t.Run("building the checkout is refused before anything exists", func(t *testing.T) {
		r := b.composeBed.run(t)
		_, err := occdev.Up(context.Background(), r.opts)
		var be *controlplane.BuilderError
		if !errors.As(err, &be) || !strings.Contains(err.Error(), "Podman 4.3.1 cannot build") || !strings.Contains(err.Error(), controlplane.EnvControllerImage) ||
			!strings.Contains(err.Error(), "Check the settings and the Podman engine") {
			t.Fatalf("up: %v, want the Podman builder refusal in the preflight", err)
		}
		t.Logf("refusal: %v", err)
		if !stateGone(r.opts.StateDir) {
			t.Errorf("the state directory exists after the refusal")
		}
		if left := b.projectLeftovers(t, r, nil); len(left) > 0 {
			t.Errorf("the refusal left: %v", left)
		}
	})
	t.Run("up status and down with selected images", func(t *testing.T) { testPodmanComposeUpStatusDown(t, b) })
	t.Run("a failure after each step", func(t *testing.T) { testPodmanComposeFailures(t, b) })
}

func testPodmanComposeUpStatusDown(t *testing.T, b *podmanComposeBed) {
	ctx := context.Background()
	b.forgetProducts(t)
	// The checkout's metrics overlay runs on Podman too: its API agent shares the controller's
	// network namespace, and its worker agent, which needs the Docker Compute worker, is left out.
	r := b.run(t, ocebed.MetricsOverlay)
	r.opts.OCE.ComposeArgs = append([]string{"-f", filepath.Join(r.checkout, "compose.metrics.yaml")}, r.opts.OCE.ComposeArgs...)
	promPort := freeLoopbackPort(t)
	r.opts.OCE.Environment["OCC_PROMETHEUS_PORT"] = fmt.Sprint(promPort)
	r.opts.OCE.Environment["OCC_GRAFANA_PORT"] = fmt.Sprint(freeLoopbackPort(t))
	r.opts.OCE.Environment["OCC_METRICS_GRAFANA_PASSWORD"] = "grafana-canary-podman-5e1a"
	downAtEnd(t, r.opts.StateDir)
	times := newStepTimes()
	r.opts.Progress = times.sink
	log := r.opts.Log.(*syncbuf.Buffer)
	started := time.Now()
	sum, err := occdev.Up(ctx, r.opts)
	t.Logf("up on Podman: step, lane, start, took:\n%s", times.table())
	if err != nil {
		t.Fatalf("up: %v\nlog:\n%s", err, log)
	}
	t.Logf("occ dev up --engine podman (Compose profile) took %s", time.Since(started).Round(time.Millisecond))
	dir, name := r.opts.StateDir, r.opts.K3d().ClusterName
	vols := b.volumesOf(t, name)
	o := sum.OCE
	apiURL := fmt.Sprintf("http://127.0.0.1:%d", r.settings.APIPort)
	if o == nil || o.APIURL != apiURL || !strings.HasPrefix(o.InstallationID, "ins_") || !strings.HasPrefix(o.Namespace, "ns_") ||
		!strings.Contains(sum.Engine, "Podman") || !strings.Contains(sum.Engine, b.Engine.Host) {
		t.Fatalf("summary: %+v, OCE %+v", sum, o)
	}

	// The project runs on Podman with Compose's labels, which the absence check and down's sweep
	// find through Podman's API (label and name filters on containers, volumes and networks).
	res, err := compose.FindResources(ctx, b.engine.Verbs(), r.settings.Project, compose.Names{
		Volumes:  []string{r.settings.Project + "_occ_postgres_data", r.settings.Project + "_occ_bootstrap_data", r.settings.Project + "_occ_configuration_data"},
		Networks: []string{r.network()},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Containers) != 8 || len(res.Volumes) != 3 || len(res.Networks) != 1 {
		t.Errorf("the project on Podman as its labels and names find it: %s", res)
	}
	if objs, err := b.docker.ClusterObjects(ctx, name); err != nil || !objs.Empty() {
		t.Errorf("the Docker engine of DOCKER_HOST holds %s (%v) of the cluster made on Podman", objs, err)
	}
	// The checkout's compose.podman.yaml is part of the recorded model.
	snap, err := os.ReadFile(filepath.Join(dir, compose.SnapshotName))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(snap), "source: "+b.Engine.Socket+"\n") || !strings.Contains(string(snap), "target: /var/run/docker.sock\n") || !strings.Contains(string(snap), "- label=disable\n") {
		t.Errorf("the snapshot lacks the Podman overlay's worker settings:\n%s", snap)
	}
	stack := compose.Stack{Project: r.settings.Project, Engine: b.engine.Verbs()}
	states, err := stack.Status(ctx, append(append([]string{}, compose.RequiredServices...), "worker", "prometheus", "grafana", "metrics-api", "metrics-worker")...)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"postgres": "running (healthy)", "migrate": "exited with code 0", "bootstrap": "exited with code 0", "controller": "running (healthy)", "worker-kubernetes": "running", "worker": "missing",
		"prometheus": "running", "grafana": "running", "metrics-api": "running", "metrics-worker": "missing"}
	for _, s := range states {
		if s.String() != want[s.Service] {
			t.Errorf("service %s is %s, want %s", s.Service, s, want[s.Service])
		}
	}
	for _, s := range o.Services {
		if s.Name == "metrics-worker" && (s.Started || !strings.HasPrefix(s.Why, "left out, as it cannot run in this profile: it needs worker")) {
			t.Errorf("summary: metrics-worker %+v", s)
		}
	}
	if env := serviceContainer(t, b.composeBed, r.settings.Project, "worker-kubernetes").Config.Env; !slices.Contains(env, "OCC_METRICS_ENABLED=true") {
		t.Errorf("worker-kubernetes on Podman lacks the metrics settings: %q", env)
	}
	if resp, err := controlplane.NewAPIClient(5 * time.Second).Get(fmt.Sprintf("http://127.0.0.1:%d/-/ready", promPort)); err != nil || resp.StatusCode != 200 {
		t.Errorf("Prometheus on Podman: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	b.assertSelectedImagesRun(t, r, b.selected)
	probe := controllerProbe(t, apiURL)
	if node := "k3d-" + name + "-server-0"; !probe.Reachable || probe.Server != "https://"+node+":6443" {
		t.Errorf("the controller's view of the cluster across the Podman network: %+v", probe)
	}
	key := readKey(t, o.KeyFile)
	if key.Meta.InstallationID != o.InstallationID {
		t.Errorf("key of Installation %s, summary says %s", key.Meta.InstallationID, o.InstallationID)
	}

	status, err := occdev.GetStatus(ctx, occdev.StatusOptions{StateDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if status.EngineKind != state.EnginePodman || status.Engine != b.Engine.Host || status.ClusterState != observe.ClusterExists ||
		status.ControlPlane == nil || status.ControlPlane.API != "ready" {
		t.Fatalf("status: engine %s %s, cluster %s, control plane %+v", status.EngineKind, status.Engine, status.ClusterState, status.ControlPlane)
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

	start := time.Now()
	if _, err := occdev.Down(ctx, occdev.DownOptions{StateDir: dir, Log: log}); err != nil {
		t.Fatalf("down: %v\nlog:\n%s", err, log)
	}
	t.Logf("down on Podman took %s", time.Since(start).Round(time.Millisecond))
	if left := b.projectLeftovers(t, r, vols); len(left) > 0 {
		t.Errorf("left in Podman after down: %v", left)
	}
	if !stateGone(dir) {
		t.Errorf("state directory %s left after down", dir)
	}
}

// testPodmanComposeFailures: a failure after each default step on Podman (podmanComposeFailureSteps)
// is rolled back completely: nothing of the project or the cluster is left in Podman, and no
// state directory. OCC_TEST_COMPOSE_ALL_STEPS=1 runs every step.
func testPodmanComposeFailures(t *testing.T, b *podmanComposeBed) {
	probe := b.run(t)
	names := stepNames(t, probe.opts)
	for _, s := range podmanComposeFailureSteps(probe.opts.K3d().ClusterName) {
		if !slices.Contains(names, s) {
			t.Fatalf("the profile has no step %q: %q", s, names)
		}
	}
	defaults := podmanComposeFailureSteps(probe.opts.K3d().ClusterName)
	for i := range names {
		t.Run(fmt.Sprintf("after step %d %s", i+1, names[i]), func(t *testing.T) {
			if !slices.Contains(defaults, names[i]) && os.Getenv(composeAllStepsEnv) == "" {
				t.Skipf("rolled back like the steps around it on both engines (an artifact step leaves only files in the state directory; once the cluster exists it goes with everything in it, which the Docker bed's named Compose failures show); set %s=1 to run it on Podman too", composeAllStepsEnv)
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
			composeUpFails(t, b.composeBed, r, want...)
		})
	}
}
