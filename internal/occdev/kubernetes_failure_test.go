package occdev_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/testbed/dockerbed"
	"github.com/openclaw/occ/internal/testbed/oceapi"
	"github.com/openclaw/occ/internal/testbed/ocebed"
)

// selectedImages serves a controller and an Agent runtime image from the bed's registry with
// the given revision label and pulls them by digest, as a developer pulls CI-built images; it
// returns their digest references.
func (b *kubeBed) selectedImages(t *testing.T, revision string) (controller, runtime string) {
	t.Helper()
	ctx := context.Background()
	var refs []string
	for _, role := range []string{"controller", "runtime"} {
		spec := ocebed.NodeSpec(t)
		spec.Repo = "occ-bed/openclaw-enterprise-" + role
		spec.Config.Labels = map[string]string{controlplane.RevisionLabel: revision, "occ.test/role": role}
		p, err := b.Provide(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Engine.Pull(ctx, p.Ref); err != nil {
			t.Fatal(err)
		}
		refs = append(refs, p.Ref)
	}
	return refs[0], refs[1]
}

// uniqueImage serves a tiny image of content no other test has (a random file) from the bed's
// registry and returns its digest reference and the image ID the engine's store gives it; the
// image goes when the test ends.
func (b *kubeBed) uniqueImage(t *testing.T, repo string) (ref, id string) {
	t.Helper()
	spec := dockerbed.ImageSpec{Repo: repo, Files: []dockerbed.File{{Path: "occ-test-unique", Data: []byte(rand.Text())}}, Config: v1.Config{Cmd: []string{"postgres"}}}
	p, err := b.Provide(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	store, err := b.Engine.ImageStore(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = b.engine.API.ImageRemove(context.Background(), p.LocalID(store), image.RemoveOptions{Force: true, PruneChildren: true})
	})
	return p.Ref, p.LocalID(store)
}

// kubeFailAfter makes `up` fail right after the named step, and runs also before it fails.
func kubeFailAfter(name string, also func()) func(string) error {
	return func(step string) error {
		if step != name {
			return nil
		}
		if also != nil {
			also()
		}
		return errInjected
	}
}

// testKubernetesFailures: `up` of the Kubernetes-only profile fails at three points, each with
// what it had made by then: after the images were built, before the cluster exists; with the
// control plane half installed while something else uses a pulled image (the rollback
// cannot untag it, so the state is kept and `down` finishes once it can), and after the key was
// written to a --key-output outside the state directory (with CI-built images selected by
// digest). Each time nothing is left, or the state is kept and `down` finishes; no Compose runs.
// (Every other step's boundary is covered by testKubernetesUpAndDown, which checks after
// each step that everything of the state in the cluster is recorded, and the cluster with all
// its content is what rollback and `down` delete.)
func testKubernetesFailures(t *testing.T, b *kubeBed) {
	ctx := context.Background()

	t.Run("after the images were built, before the cluster exists", func(t *testing.T) {
		r := b.run(t, oceapi.Options{})
		r.opts.Seams().AfterStep = kubeFailAfter("Build the controller and Agent runtime images from the checkout", nil)
		var volumes []string
		_, err := occdev.Up(ctx, r.opts)
		if !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "rolled back") {
			t.Fatalf("up: %v", err)
		}
		if !dirGone(r.opts.StateDir) {
			t.Errorf("the state directory survived a complete rollback")
		}
		if left := b.leftovers(t, r.opts.K3d().ClusterName, volumes); len(left) > 0 {
			t.Errorf("the rollback left: %v", left)
		}
	})

	// An image up pulled that a container of the user's (or another environment's k3d node)
	// runs by the time of the rollback is theirs now: the rollback leaves it, saying why, and
	// finishes; it never fails for ever on an image it must not take away.
	t.Run("with the chart installed, a pulled image in use is left by the rollback", func(t *testing.T) {
		r := b.run(t, oceapi.Options{})
		// PostgreSQL is an image of this subtest's own (its content is unique), so what the
		// engine does with it touches no other test on the shared engine.
		pgRef, pgID := b.uniqueImage(t, "occ-bed/oce-postgres-blocked")
		set := *b.set
		set.OCE.PostgresImage = parsePin(t, pgRef)
		r.opts.PinFile = b.writePins(&set)
		var user string
		var volumes []string
		r.opts.Seams().AfterStep = kubeFailAfter("Install the OCE chart", func() {
			objs, _ := b.Engine.ClusterObjects(ctx, r.opts.K3d().ClusterName)
			volumes = objs.Volumes
			// Someone starts a container of the PostgreSQL image up pulled, which the engine
			// then knows by that digest alone (its content tag goes): it refuses to untag an
			// image's last reference while a container uses it. The containerd image store lists
			// the pulled digest reference among the image's tags: that one stays.
			ins, err := b.engine.API.ImageInspect(ctx, pgID)
			if err != nil {
				t.Errorf("inspect %s: %v", pgRef, err)
				return
			}
			c, err := b.Engine.API.ContainerCreate(ctx, &container.Config{Image: pgRef, Cmd: []string{"postgres"}},
				&container.HostConfig{NetworkMode: "none"}, &network.NetworkingConfig{}, nil, "occ-test-user-"+strings.ToLower(r.opts.K3d().ClusterName))
			if err != nil {
				t.Errorf("create the user's container: %v", err)
				return
			}
			user = c.ID
			// A test that fails before its own removal below leaves no container on the engine.
			t.Cleanup(func() {
				_ = b.engine.API.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true})
			})
			for _, tag := range ins.RepoTags {
				if tag == pgRef {
					continue
				}
				if _, err := b.engine.API.ImageRemove(ctx, tag, image.RemoveOptions{}); err != nil {
					t.Errorf("untag %s: %v", tag, err)
				}
			}
		})
		_, err := occdev.Up(ctx, r.opts)
		t.Logf("up: %v", err)
		if !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "was removed but Docker image "+pgRef+", left as it is") || strings.Contains(err.Error(), "rollback incomplete") {
			t.Fatalf("up: %v", err)
		}
		if !dirGone(r.opts.StateDir) {
			t.Errorf("the state directory survived the rollback")
		}
		var left []string
		for _, l := range b.leftovers(t, r.opts.K3d().ClusterName, volumes) {
			if !strings.Contains(l, pgRef) {
				left = append(left, l)
			}
		}
		if len(left) != 0 {
			t.Errorf("the rollback left, besides the PostgreSQL image in use: %v", left)
		}
		if _, err := b.engine.API.ImageInspect(ctx, pgRef); err != nil {
			t.Errorf("the image in use was removed: %v", err)
		}
		if err := b.engine.API.ContainerRemove(ctx, user, container.RemoveOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("after the key was written to --key-output, with selected images", func(t *testing.T) {
		r := b.run(t, oceapi.Options{Key: canaryKey, Password: canaryPassword})
		controller, runtime := b.selectedImages(t, b.commit)
		r.opts.OCE.Images = controlplane.ImageSelection{Controller: controller, Runtime: runtime}
		keyDir := filepath.Join(t.TempDir(), "keys")
		if err := os.Mkdir(keyDir, 0o700); err != nil {
			t.Fatal(err)
		}
		r.opts.OCE.KeyOutput = filepath.Join(keyDir, "admin-key.json")
		var volumes []string
		var keyThere bool
		r.opts.Seams().AfterStep = func(step string) error {
			if step == "Install the OCE chart" {
				st, _ := state.Read(r.opts.StateDir)
				kube, _, _ := kubeClientOf(t, st.Cluster)
				r.startWorker(t, kube, "oce-system")
				objs, _ := b.Engine.ClusterObjects(ctx, r.opts.K3d().ClusterName)
				volumes = objs.Volumes
			}
			if step == "Wait for the bootstrap Namespace to be ready" {
				data, err := os.ReadFile(r.opts.OCE.KeyOutput)
				keyThere = err == nil && string(data) == string(r.api.KeyFile())
				return errInjected
			}
			return nil
		}
		_, err := occdev.Up(ctx, r.opts)
		if !errors.Is(err, errInjected) || !strings.Contains(err.Error(), "rolled back") {
			t.Fatalf("up: %v\n%s", err, r.events)
		}
		if !keyThere {
			t.Fatal("the key was not at --key-output when the failure was injected")
		}
		if _, err := os.Stat(r.opts.OCE.KeyOutput); !os.IsNotExist(err) {
			t.Errorf("the key at --key-output survived the rollback: %v", err)
		}
		if !dirGone(r.opts.StateDir) {
			t.Errorf("the state directory survived a complete rollback")
		}
		if left := b.leftovers(t, r.opts.K3d().ClusterName, volumes); len(left) > 0 {
			t.Errorf("the rollback left: %v", left)
		}
		// The selected images were used as they are: not pulled, not built, not removed.
		for _, ref := range []string{controller, runtime} {
			if _, err := b.engine.API.ImageInspect(ctx, ref); err != nil {
				t.Errorf("the selected image %s is gone: %v", ref, err)
			}
		}
		if strings.Contains(r.events.String(), "Build the controller") || !strings.Contains(r.events.String(), "Use the selected controller and Agent runtime images") {
			t.Errorf("the run built images although both were selected:\n%s", r.events)
		}
		assertNoSecrets(t, map[string]string{"progress": r.events.String(), "log": r.log.String(), "error": err.Error()})
	})
}

// testKubernetesRefusals: a developer selects prebuilt images for `occ dev up --control-plane kubernetes` and gets
// one of the three selection rules wrong: only one image, a tag instead of a digest, or images
// built from another commit; or the API's loopback port is taken. Each is refused with the
// reference's message before anything is created: no state directory, no cluster, no pull.
func testKubernetesRefusals(t *testing.T, b *kubeBed) {
	ctx := context.Background()
	stale, staleRuntime := b.selectedImages(t, "1111111111111111111111111111111111111111")
	cases := []struct {
		name string
		sel  controlplane.ImageSelection
		want []string
	}{
		{"both or neither", controlplane.ImageSelection{Controller: stale},
			[]string{"OCC_DEVELOPMENT_CONTROLLER_IMAGE and OCC_KUBERNETES_RUNTIME_IMAGE must be selected together", "OCC_KUBERNETES_RUNTIME_IMAGE is unset"}},
		{"digest references only", controlplane.ImageSelection{Controller: "openclaw-enterprise-controller:ci", Runtime: staleRuntime},
			[]string{"selected controller and runtime images must use immutable sha256 digest references", `OCC_DEVELOPMENT_CONTROLLER_IMAGE="openclaw-enterprise-controller:ci"`}},
		{"revision label", controlplane.ImageSelection{Controller: stale, Runtime: staleRuntime},
			[]string{"selected image revision does not match checkout " + b.commit + ": " + stale, "selected image revision does not match checkout " + b.commit + ": " + staleRuntime, `is "1111111111111111111111111111111111111111"`}},
		{"API port in use", controlplane.ImageSelection{}, []string{"OPENCLAW_DEV_PORT", "is already in use on 127.0.0.1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := b.run(t, oceapi.Options{})
			r.opts.OCE.Images = c.sel
			if c.sel == (controlplane.ImageSelection{}) {
				// Something already listens on the API's loopback port.
				l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", devPort(r.opts)))
				if err != nil {
					t.Fatal(err)
				}
				defer l.Close()
			}
			_, err := occdev.Up(ctx, r.opts)
			t.Logf("refusal: %v", err)
			// The selection's rules are settings refused while planning; the revision labels and
			// the port are live checks of the preflight, whose errors say the same in full.
			var opt *occdev.OptionError
			if err == nil || (c.name == "both or neither" || c.name == "digest references only") && !errors.As(err, &opt) {
				t.Fatalf("up: %v, want a bad-setting error", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the refusal lacks %q:\n%v", w, err)
				}
			}
			if _, serr := os.Stat(r.opts.StateDir); !os.IsNotExist(serr) {
				t.Errorf("the state directory exists after the refusal: %v", serr)
			}
			if left := b.leftovers(t, r.opts.K3d().ClusterName, nil); len(left) > 0 {
				t.Errorf("the refusal left: %v", left)
			}
		})
	}
}

// kubernetesAllStepsEnv runs the profile's whole failure matrix, every step in turn (one k3d
// cluster per step, about half a minute each).
const kubernetesAllStepsEnv = "OCC_TEST_KUBERNETES_ALL_STEPS"

// kubernetesDefaultSteps are the steps of the matrix run by default: the preflight (before the
// state exists), the control plane's record (before the cluster exists), the first and the
// last in-cluster object steps, and the key copy (the reader Pod must go too). The steps
// between are rolled back the same way (the recorded cluster holds what they made), which the
// up-and-down scenario's record check after every step supports, and the named failures show.
var kubernetesDefaultSteps = []string{
	"Check the settings and the Docker engine",
	"Record the OCE control plane",
	"Create the PostgreSQL bootstrap Secret",
	"Start the development API proxy",
	"Copy and verify the bootstrap service key",
}

// testKubernetesFailureAfterEachStep: `up` fails after each step of the whole flow in turn (lane
// steps and groups included), and every time either nothing is left, or the state is kept and
// `down` finishes with nothing left; by default for kubernetesDefaultSteps, all with
// OCC_TEST_KUBERNETES_ALL_STEPS=1.
func testKubernetesFailureAfterEachStep(t *testing.T, b *kubeBed) {
	ctx := context.Background()
	probe := b.run(t, oceapi.Options{})
	names := stepNames(t, probe.opts)
	defaults := kubernetesDefaultSteps
	if b.failureSteps != nil {
		defaults = b.failureSteps
	}
	for _, want := range defaults {
		if !slices.Contains(names, want) {
			t.Fatalf("the profile has no step %q: %q", want, names)
		}
	}
	for i := range names {
		t.Run(fmt.Sprintf("after step %d %s", i+1, names[i]), func(t *testing.T) {
			if !slices.Contains(defaults, names[i]) && os.Getenv(kubernetesAllStepsEnv) == "" {
				why := "rolled back like the steps around it (the recorded cluster holds what it made; the default steps and the named failures show that rollback)"
				if b.failureSteps != nil && slices.Contains(kubernetesDefaultSteps, names[i]) {
					why = "in the Docker bed's default subset, not this engine's: an in-cluster step, rolled back with the cluster the same way on both engines (the Docker bed runs it)"
				}
				t.Skipf("%s; set %s=1 to run it", why, kubernetesAllStepsEnv)
			}
			r := b.run(t, oceapi.Options{Key: canaryKey, Password: canaryPassword})
			name := stepNames(t, r.opts)[i] // the cluster's step is named after this run's cluster
			t.Cleanup(func() {
				if !dirGone(r.opts.StateDir) {
					_, _ = occdev.Down(context.Background(), occdev.DownOptions{StateDir: r.opts.StateDir})
				}
			})
			var volumes []string
			r.opts.NoDiagnose = true // a matrix of rollbacks; the bundle has tests of its own
			r.opts.Seams().AfterStep = func(step string) error {
				if st, err := state.Read(r.opts.StateDir); err == nil && st.Cluster.Kubeconfig != "" && step == "Install the OCE chart" {
					kube, _, _ := kubeClientOf(t, st.Cluster)
					r.startWorker(t, kube, "oce-system")
				}
				if objs, err := b.Engine.ClusterObjects(ctx, r.opts.K3d().ClusterName); err == nil && len(objs.Volumes) > 0 {
					volumes = objs.Volumes
				}
				if step == name {
					return errInjected
				}
				return nil
			}
			_, err := occdev.Up(ctx, r.opts)
			if !errors.Is(err, errInjected) || !strings.Contains(err.Error(), name) {
				t.Fatalf("up: %v", err)
			}
			t.Logf("up failed as it should: %v", err)
			if !dirGone(r.opts.StateDir) {
				if _, derr := occdev.Down(ctx, occdev.DownOptions{StateDir: r.opts.StateDir}); derr != nil || !dirGone(r.opts.StateDir) {
					t.Fatalf("the state was kept (%v) and down did not finish: %v", err, derr)
				}
			}
			if left := b.leftovers(t, r.opts.K3d().ClusterName, volumes); len(left) > 0 {
				t.Errorf("left after a failure after %q: %v", name, left)
			}
			assertNoSecrets(t, map[string]string{"progress": r.events.String(), "log": r.log.String(), "error": err.Error()})
		})
	}
}
