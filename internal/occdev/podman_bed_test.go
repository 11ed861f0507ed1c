package occdev_test

import (
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/engine/locate"
	"github.com/openclaw/occ/internal/occdev/observe"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/testbed/dockerbed"
	"github.com/openclaw/occ/internal/testbed/oceapi"
	"github.com/openclaw/occ/internal/testbed/ocebed"
	"github.com/openclaw/occ/internal/testbed/podmanbed"
)

// podmanFailureSteps are the platform profile's steps a failure is injected after on Podman by
// default, where Podman is what is new: the preflight (Podman identified, before the state
// exists), the cluster's creation on Podman (a failure in one lane cancels the pulls beside it),
// and the images imported from Podman's store and verified in the node. Every other step is
// rolled back the same way on both engines (the cluster goes with everything in it), which the
// Docker bed's matrix shows; OCC_TEST_K3D_ALL_STEPS=1 runs them all here too.
func podmanFailureSteps(clusterName string) []string {
	return []string{
		"Check the settings and the Podman engine",
		"Create k3d cluster " + clusterName,
		"Verify the OpenShell Sandbox image in the node and tag it for the chart",
	}
}

// podmanKubernetesFailureSteps are the Kubernetes-only profile's steps a failure is injected
// after on Podman by default: the preflight, the control plane's record (before the cluster
// exists) and the last step, with the whole control plane in the cluster (the reader Pod must
// go too). The in-cluster steps between are rolled back with the cluster on both engines, which
// the Docker bed's default steps show.
var podmanKubernetesFailureSteps = []string{
	"Check the settings and the Podman engine",
	"Record the OCE control plane",
	"Copy and verify the bootstrap service key",
}

// A developer on Fedora runs `occ dev up --engine podman` for the platform profile (a k3d
// cluster with the sandbox platform) against rootful Podman, with CONTAINER_HOST naming Podman's
// socket and a DOCKER_HOST left pointing at a Docker engine: up records Podman before anything
// exists, creates the cluster on Podman with the images imported from Podman's store and verified
// in the node, status and down reach Podman through the record alone, and nothing of the run is
// left in Podman (or in Docker); a failure after each of the default steps leaves nothing either.
func TestPodmanK3dDevEnvironment(t *testing.T) {
	startBuild() // before the bed moves HOME (and with it Go's build cache)
	b := newK3dBedOn(t, nil, state.EnginePodman)
	t.Run("up status and down through the library", func(t *testing.T) { testUpStatusDown(t, b) })
	t.Run("up status and down through the built CLI", func(t *testing.T) { testBuiltCLI(t, b) })
	t.Run("routing controllers from pins that record their images", func(t *testing.T) { testRoutingOnEveryEngine(t, b) })
	t.Run("a failure after each step", func(t *testing.T) {
		testFailureSubset(t, b, podmanFailureSteps, "rolled back like the steps around it, which the Docker bed's matrix shows")
	})
	t.Run("SIGKILL after each step then down", func(t *testing.T) {
		testSignalAtEachStep(t, b, syscall.SIGKILL, killSubsetOtherEngines)
	})
}

// A developer in an OCE checkout on Podman runs `occ dev up --engine podman --control-plane
// kubernetes`: building the checkout is refused before anything exists (Podman's builder is
// Buildah, not BuildKit) with both ways on; with the controller and Agent runtime images
// selected by digest the whole profile comes up in a k3d cluster on Podman, its images verified
// in the node, status, logs and down reach Podman through the record while DOCKER_HOST names Docker,
// and afterwards nothing of it is left in Podman; a failure after each default step leaves
// nothing, or the state kept and down finishes.
func TestPodmanKubernetesDevEnvironment(t *testing.T) {
	startBuild()
	b := newKubeBedOn(t, state.EnginePodman)
	docker := dockerbed.Require(t)
	t.Run("building the checkout is refused before anything exists", func(t *testing.T) {
		r := b.run(t, oceapi.Options{})
		_, err := occdev.Up(context.Background(), r.opts)
		var be *controlplane.BuilderError
		if !errors.As(err, &be) || !strings.Contains(err.Error(), "Podman 4.3.1 cannot build") || !strings.Contains(err.Error(), controlplane.EnvControllerImage) {
			t.Fatalf("up: %v, want the Podman builder refusal", err)
		}
		t.Logf("refusal: %v", err)
		if !dirGone(r.opts.StateDir) {
			t.Errorf("the state directory exists after the refusal")
		}
		if left := b.leftovers(t, r.opts.K3d().ClusterName, nil); len(left) > 0 {
			t.Errorf("the refusal left: %v", left)
		}
	})
	controller, runtime := b.selectedImages(t, b.commit)
	b.selected = controlplane.ImageSelection{Controller: controller, Runtime: runtime}
	b.failureSteps = podmanKubernetesFailureSteps
	t.Run("up status and down with selected images", func(t *testing.T) { testPodmanKubernetesUpAndDown(t, b, docker) })
	t.Run("a failure after each step", func(t *testing.T) { testKubernetesFailureAfterEachStep(t, b) })
}

// testPodmanKubernetesUpAndDown: the profile's up on Podman with selected images, status and
// down; the Docker engine DOCKER_HOST names never sees the cluster.
func testPodmanKubernetesUpAndDown(t *testing.T, b *kubeBed, docker *dockerbed.Engine) {
	ctx := context.Background()
	r := b.run(t, oceapi.Options{Key: canaryKey, Password: canaryPassword})
	times := newStepTimes()
	r.opts.Progress = times.sink
	var volumes []string
	r.opts.Seams().AfterStep = func(step string) error {
		if step == "Claim the private state directory" {
			// The engine's kind and socket are recorded before anything exists in it.
			st, err := state.Read(r.opts.StateDir)
			if err != nil || st.Engine == nil || st.Engine.Kind != state.EnginePodman || st.Engine.Endpoint != b.Engine.Host || len(st.Objects) != 0 {
				t.Errorf("the claimed state records engine %+v and %d objects (%v), want Podman at %s and nothing else", st.Engine, len(st.Objects), err, b.Engine.Host)
			}
		}
		if step == "Install the OCE chart" {
			st, _ := state.Read(r.opts.StateDir)
			kube, _, _ := kubeClientOf(t, st.Cluster)
			r.startWorker(t, kube, "oce-system")
		}
		if objs, err := b.Engine.ClusterObjects(ctx, r.opts.K3d().ClusterName); err == nil && len(objs.Volumes) > 0 {
			volumes = objs.Volumes
		}
		return nil
	}
	t.Cleanup(func() {
		if !dirGone(r.opts.StateDir) {
			_, _ = occdev.Down(context.Background(), occdev.DownOptions{StateDir: r.opts.StateDir})
		}
	})
	started := time.Now()
	sum, err := occdev.Up(ctx, r.opts)
	t.Logf("up on Podman: step, lane, start, took:\n%s", times.table())
	if err != nil {
		t.Fatalf("up: %v\nprogress:\n%s\nlog:\n%s", err, r.events, r.log)
	}
	t.Logf("occ dev up --engine podman --control-plane kubernetes took %s", time.Since(started).Round(time.Millisecond))
	if err := <-r.provisionErr; err != nil {
		t.Errorf("worker stand-in: %v", err)
	}
	if sum.OCE == nil || !strings.Contains(sum.Engine, "Podman") || !strings.Contains(sum.Engine, b.Engine.Host) {
		t.Errorf("summary: engine %q, OCE %+v", sum.Engine, sum.OCE)
	}
	st, err := state.Read(r.opts.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Engine == nil || st.Engine.Kind != state.EnginePodman || st.Engine.Endpoint != b.Engine.Host {
		t.Errorf("recorded engine %+v, want podman at %s", st.Engine, b.Engine.Host)
	}
	if objs, err := docker.ClusterObjects(ctx, r.opts.K3d().ClusterName); err != nil || !objs.Empty() {
		t.Errorf("the Docker engine of DOCKER_HOST holds %s (%v) of the cluster made on Podman", objs, err)
	}
	node := "k3d-" + r.opts.K3d().ClusterName + "-server-0"
	digests := b.nodeConfigDigests(t, node)
	for _, p := range b.product {
		if got := digests[p.pin.DigestReference()]; got != p.config {
			t.Errorf("node %s holds %s with config %q, want %s (the registry's)", node, p.pin.DigestReference(), got, p.config)
		}
	}
	status, err := occdev.GetStatus(ctx, occdev.StatusOptions{StateDir: r.opts.StateDir})
	if err != nil {
		t.Fatal(err)
	}
	if status.ClusterState != observe.ClusterExists || status.EngineKind != state.EnginePodman || status.Engine != b.Engine.Host {
		t.Errorf("status: cluster %q (%s), engine %s %q", status.ClusterState, status.ClusterDetail, status.EngineKind, status.Engine)
	}
	for _, im := range status.Images {
		if im.State != observe.ImageDigestMatches {
			t.Errorf("status of %s: %s (%s)", im.Reference, im.State, im.Detail)
		}
	}
	// logs reads the Pods' container logs through the recorded engine (Podman), as status does.
	logs := readLogs(t, observe.LogsOptions{StateDir: r.opts.StateDir, Services: []string{"openshell-gateway"}, Tail: -1})
	if !regexp.MustCompile(playedStart).MatchString(logs) {
		t.Errorf("occ dev logs openshell-gateway on Podman: %q, want the played kubelet's start line", logs)
	}
	start := time.Now()
	if _, err := occdev.Down(ctx, occdev.DownOptions{StateDir: r.opts.StateDir}); err != nil {
		t.Fatalf("down: %v", err)
	}
	t.Logf("down on Podman took %s", time.Since(start).Round(time.Millisecond))
	if !dirGone(r.opts.StateDir) {
		t.Errorf("state directory left after down")
	}
	if left := b.leftovers(t, r.opts.K3d().ClusterName, volumes); len(left) > 0 {
		t.Errorf("left in Podman after down: %v", left)
	}
}

// A laptop with the bed's Docker and Podman both running: the plan of `occ dev up` (what the dry
// run prints and the state records) takes Docker under auto; with Docker stopped (DOCKER_HOST
// names a socket nobody serves) auto takes the Podman that CONTAINER_HOST names; a Podman behind
// DOCKER_HOST is planned as Podman; --engine podman takes Podman while DOCKER_HOST names Docker.
func TestPlanLocatesTheEngineAutoChooses(t *testing.T) {
	dockerEngine := dockerbed.Require(t)
	podman := podmanbed.Require(t)
	stopped := "unix://" + filepath.Join(t.TempDir(), "docker.sock")
	cases := []struct {
		name       string
		choice     locate.Choice
		env        map[string]string
		wantKind   engine.Kind
		wantEngine string
		wantSource string
	}{
		{"both run: auto takes Docker", locate.Auto, map[string]string{"DOCKER_HOST": dockerEngine.Host, "CONTAINER_HOST": podman.Host}, state.EngineDocker, dockerEngine.Host, "DOCKER_HOST"},
		{"only Podman runs: auto takes Podman", locate.Auto, map[string]string{"DOCKER_HOST": stopped, "CONTAINER_HOST": podman.Host}, state.EnginePodman, podman.Host, "CONTAINER_HOST"},
		{"Podman behind DOCKER_HOST is Podman", locate.Auto, map[string]string{"DOCKER_HOST": podman.Host}, state.EnginePodman, podman.Host, "DOCKER_HOST"},
		{"--engine podman with DOCKER_HOST at Docker", locate.ChoosePodman, map[string]string{"DOCKER_HOST": dockerEngine.Host, "CONTAINER_HOST": podman.Host}, state.EnginePodman, podman.Host, "CONTAINER_HOST"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			dr, err := occdev.PlanUp(context.Background(), occdev.UpOptions{
				StateDir:        filepath.Join(t.TempDir(), "state"),
				ClusterProvider: occdev.ProviderK3d,
				ControlPlane:    occdev.ControlPlaneKubernetes,
				CacheDir:        filepath.Join(t.TempDir(), "cache"),
				Engine:          c.choice,
				Docker: locate.Env{Home: home, Getenv: func(k string) string {
					if k == "HOME" {
						return home
					}
					return c.env[k]
				}},
			})
			if err != nil {
				t.Fatal(err)
			}
			p := dr.Plan
			if p.EngineKind != c.wantKind || p.Engine.String() != c.wantEngine || p.EngineSource != c.wantSource {
				t.Errorf("plan: %s engine %s (from %s), want %s %s (from %s)", p.EngineKind, p.Engine, p.EngineSource, c.wantKind, c.wantEngine, c.wantSource)
			}
		})
	}
}

// A developer in an OCE checkout on Podman runs `occ dev up --dry-run` for the Compose profile
// without selecting images: the dry run lists the builder refusal up's preflight gives before
// anything exists (Podman's build API runs Buildah, not BuildKit), naming both image selections;
// the Compose profile itself is not refused on Podman.
func TestPodmanComposeProfileRefusesBuildsInTheDryRun(t *testing.T) {
	podman := podmanbed.Require(t)
	home := t.TempDir()
	dr, err := occdev.PlanUp(context.Background(), occdev.UpOptions{
		StateDir:        filepath.Join(t.TempDir(), "state"),
		ClusterProvider: occdev.ProviderK3d,
		CacheDir:        filepath.Join(t.TempDir(), "cache"),
		Engine:          locate.ChoosePodman,
		OCE:             occdev.OCEOptions{Repository: ocebed.Checkout(t, "9c1b2d3e4f5a69788796a5b4c3d2e1f00f1e2d3c")},
		Docker: locate.Env{Home: home, Getenv: func(k string) string {
			return map[string]string{"HOME": home, "CONTAINER_HOST": podman.Host}[k]
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if dr.Plan.ControlPlane != occdev.ControlPlaneCompose || dr.Plan.EngineKind != state.EnginePodman {
		t.Fatalf("plan: control plane %s on %s", dr.Plan.ControlPlane, dr.Plan.EngineKind)
	}
	found := false
	for _, p := range dr.Problems {
		found = found || strings.Contains(p, "Podman 4.3.1 cannot build the checkout's Dockerfiles") &&
			strings.Contains(p, controlplane.EnvControllerImage) && strings.Contains(p, controlplane.EnvRuntimeImage)
		if strings.Contains(p, "does not run on Podman") {
			t.Errorf("the dry run refuses the Compose profile on Podman: %s", p)
		}
	}
	if !found {
		t.Errorf("dry run problems %q lack the Podman builder refusal", dr.Problems)
	}
}
