package occdev_test

import (
	"context"
	"syscall"
	"testing"

	"github.com/openclaw/occ/internal/testbed/dockerbed"
)

// onClassicDocker points the test's DOCKER_HOST at the bed's classic-store engine (Docker 28 with
// the graph-driver image store, what Docker before 29 keeps images in): the engine a developer
// who has not moved to the containerd store has. The bed's default engine is Docker 29 on its
// containerd image store, so every other Docker test runs there.
func onClassicDocker(t *testing.T) {
	t.Helper()
	for _, f := range dockerbed.Flavours() {
		if f.Store == dockerbed.ClassicStore && !f.Podman {
			f.Use(t)
			return
		}
	}
	t.Fatal("the bed has no classic-store Docker flavour")
}

// classicFailureSteps are the platform profile's steps a failure is injected after on the
// classic store by default: where the stores differ, the images' travel into the node (the
// cluster's creation beside the pulls, an import, a verification). Every other step is rolled
// back the same way on every engine, which the default engine's matrix shows;
// OCC_TEST_K3D_ALL_STEPS=1 runs them all here too.
func classicFailureSteps(clusterName string) []string {
	return []string{
		"Create k3d cluster " + clusterName,
		"Import the OpenShell Gateway image into the cluster",
		"Verify the OpenShell Sandbox image in the node and tag it for the chart",
	}
}

// A developer on Docker 28 (or a Docker whose containerd image store is off) runs `occ dev up`
// for the platform profile, then status and down: the pinned multi-platform images are pulled,
// imported with only the node's platform and verified in the node by their config digest, the
// identity that store keeps; status sees every image matching; down leaves nothing; and a
// failure after each step where the stores differ leaves nothing either.
func TestClassicDockerK3dDevEnvironment(t *testing.T) {
	onClassicDocker(t)
	startBuild()
	b := newK3dBed(t, nil)
	// The node and tools images were pulled before (by a cluster of the developer's own, as on
	// the default engine's bed): up pulls only the OpenShell images, and down leaves these.
	for _, img := range []string{b.set.K3s.Image.DigestReference(), b.set.K3d.ToolsImage.DigestReference()} {
		if _, err := b.Engine.Pull(context.Background(), img); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { b.Engine.Forget(b.set.K3s.Image.DigestReference(), b.set.K3d.ToolsImage.DigestReference()) })
	t.Run("up status and down through the library", func(t *testing.T) { testUpStatusDown(t, b) })
	t.Run("routing controllers from pins that record their images", func(t *testing.T) { testRoutingOnEveryEngine(t, b) })
	t.Run("a failure after each step", func(t *testing.T) {
		testFailureSubset(t, b, classicFailureSteps, "rolled back like the steps around it on every engine, which the default engine's matrix shows")
	})
	t.Run("SIGKILL after each step then down", func(t *testing.T) {
		testSignalAtEachStep(t, b, syscall.SIGKILL, killSubsetOtherEngines)
	})
}

// classicKubernetesFailureSteps are the Kubernetes-only profile's steps a failure is injected
// after on the classic store by default: the built images' import and verification, where the
// stores differ, and the last step.
var classicKubernetesFailureSteps = []string{
	"Import the control plane's images into the cluster",
	"Verify the control plane's images in the node and tag them",
	"Copy and verify the bootstrap service key",
}

// A developer on Docker 28 (the classic store) runs `occ dev up --control-plane kubernetes` in an
// OCE checkout: the controller and Agent runtime are built through the engine's BuildKit, imported
// with PostgreSQL and verified in the node by their config digests, the whole control plane comes
// up, and down leaves nothing; a failure after each default step leaves nothing, or the state
// kept and down finishes.
func TestClassicDockerKubernetesDevEnvironment(t *testing.T) {
	onClassicDocker(t)
	startBuild()
	b := newKubeBed(t)
	b.failureSteps = classicKubernetesFailureSteps
	t.Run("up and down through the library", func(t *testing.T) { testKubernetesUpAndDown(t, b) })
	t.Run("a failure after each step", func(t *testing.T) { testKubernetesFailureAfterEachStep(t, b) })
	if c := b.composeCalled(); c != "" {
		t.Errorf("the Kubernetes-only profile ran docker compose: %s", c)
	}
}
