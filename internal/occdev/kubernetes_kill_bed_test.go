package occdev_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"helm.sh/helm/v3/pkg/release"
	"k8s.io/client-go/kubernetes"

	"github.com/openclaw/occ/internal/occdev/controlplane"
	kcp "github.com/openclaw/occ/internal/occdev/controlplane/kubernetes"
	"github.com/openclaw/occ/internal/occdev/helmrelease"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/state"
)

// insideChartInstall is the signal point of the Kubernetes-only matrices inside a step: the OCE
// chart's Helm install, while its pre-install migration and bootstrap Job runs (the release is
// pending-install).
const insideChartInstall = "inside the OCE chart's Helm install"

// lastSignalledStep is the last step of the Kubernetes-only profile the built binary can reach on
// the bed: the steps after it talk to the OCE API through the development proxy, and the bed
// serves its API stand-in in the test's own process (the library runs of the profile reach it
// through a seam the binary does not have).
const lastSignalledStep = "Start the development API proxy"

// kubeSignalPoints are the signal points of the Kubernetes-only matrices for sig: by default
// inside the chart's install, and (SIGKILL) after the API proxy starts, while up waits for the
// API; with OCC_TEST_KILL_ALL_STEPS=1 after every step the binary reaches as well.
func kubeSignalPoints(t *testing.T, names []string, sig syscall.Signal) []string {
	t.Helper()
	last := slices.Index(names, lastSignalledStep)
	if last < 0 {
		t.Fatalf("the profile has no step %q: %q", lastSignalledStep, names)
	}
	if os.Getenv(killAllEnv) != "" {
		return append(slices.Clone(names[:last+1]), insideChartInstall)
	}
	t.Logf("%s inside the chart's install (and after %q); set %s=1 for every step up to %q", sig, lastSignalledStep, killAllEnv, lastSignalledStep)
	if sig == syscall.SIGKILL {
		return []string{insideChartInstall, lastSignalledStep}
	}
	return []string{insideChartInstall}
}

// testKubernetesSignals sends sig to `occ dev up --control-plane kubernetes`, the built binary
// in the fixture checkout, after steps of the Kubernetes-only profile and inside the OCE chart's
// Helm install. A SIGKILL there leaves the release pending-install (Helm's own lock), which `occ
// dev status` reports and `occ dev down` uninstalls; Ctrl-C rolls it back and exits 130. Either
// way nothing is left: the cluster's containers, networks and volumes, the images up pulled or
// built, the state directory, temporary files, and the user's kubeconfig is as it was.
func testKubernetesSignals(t *testing.T, b *kubeBed, sig syscall.Signal) {
	// The binary runs with CI-built images selected, as a developer whose engine cannot build
	// does: the bed's engine gives builds no network (the library runs build through a seam
	// that sets none), and the builds are signalled in the Compose matrix.
	controller, runtime := b.selectedImages(t, b.commit)
	probe := b.options(t)
	probe.OCE.Repository = b.checkout
	probe.OCE.Images = controlplane.ImageSelection{Controller: controller, Runtime: runtime}
	names := stepNames(t, probe)
	points := kubeSignalPoints(t, names, sig)
	bin := buildOCC(t)
	passed := 0
	for _, point := range points {
		t.Run(point, func(t *testing.T) {
			b.forgetProducts(t)
			opts := b.options(t)
			if strings.HasPrefix(point, "Create k3d cluster ") {
				point = "Create k3d cluster " + opts.K3d().ClusterName
			}
			downAtEnd(t, opts.StateDir)
			volumesBefore := b.allVolumes(t)
			port := freeLoopbackPort(t)
			tmp := t.TempDir()
			env := append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(t.TempDir(), "cache"), "OCC_DEVELOPMENT_STATE_DIRECTORY="+opts.StateDir, "TMPDIR="+tmp,
				"OCC_DEVELOPMENT_NODE_BASE_IMAGE="+b.nodeBase, "OCC_DEVELOPMENT_NODE_RUNTIME_BASE_IMAGE="+b.nodeRuntimeBase, "OPENCLAW_DEV_PORT="+strconv.Itoa(port),
				controlplane.EnvControllerImage+"="+controller, controlplane.EnvRuntimeImage+"="+runtime)
			up := exec.Command(bin, "dev", "up", "--cluster-provider", "k3d", "--control-plane", "kubernetes", "--repository", b.checkout,
				"--cluster-name", opts.K3d().ClusterName, "--pin-file", b.pinFile, "--openshell-archive", b.archive,
				"--gateway-endpoint", opts.GatewayEndpoint, "--startup-timeout", "3m", "--engine", string(b.kind), "--no-diagnose")
			up.Dir, up.Env = b.checkout, env
			rel := func() *release.Release {
				st, err := state.Read(opts.StateDir)
				if err != nil {
					t.Fatalf("read the state: %v", err)
				}
				r, err := helmrelease.Status(helmrelease.Release{Access: st.Cluster, Namespace: kcp.DefaultNamespace, Name: kcp.ReleaseName})
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			var run signalled
			if point == insideChartInstall {
				// The watch starts once the cluster exists, long before the chart's step.
				pending := make(chan struct{})
				created := "✓ Create k3d cluster " + opts.K3d().ClusterName + " "
				run = runSignalledWhen(t, up, sig, "the chart's install was pending", func(line string) bool {
					if strings.HasPrefix(line, created) {
						go watchPending(t, opts.StateDir, pending)
					}
					return false
				}, pending)
			} else {
				run = runSignalledAfter(t, up, point, sig)
			}
			var vols []string
			switch sig {
			case syscall.SIGKILL:
				if !run.killedBy(syscall.SIGKILL) {
					t.Fatalf("up was not killed at %q: %v\n%s", point, run.err, run.stderr)
				}
				if point == insideChartInstall {
					if r := rel(); r == nil || r.Info.Status != release.StatusPendingInstall {
						t.Fatalf("the kill did not meet the chart's install: the release is %+v, want pending-install", r)
					}
				}
				vols = b.volumesOf(t, opts.K3d().ClusterName)
				afterKill(t, b.k3dBed, bin, env, opts.StateDir, opts.K3d().ClusterName, vols)
			default:
				code := up.ProcessState.ExitCode()
				t.Logf("up after %s (exit %d):\n%s", sig, code, run.stderr)
				if code != 128+int(sig) {
					t.Errorf("exit code %d after %s, want %d", code, sig, 128+int(sig))
				}
				// Right after the preflight the state is not claimed yet: nothing to roll back.
				if !strings.Contains(run.stderr, "interrupted") || (point != names[0] && !strings.Contains(run.stderr, "rolled back")) {
					t.Errorf("up does not say it was interrupted and rolled back:\n%s", run.stderr)
				}
			}
			b.assertLeftNothing(t, sig, b.leftovers(t, opts.K3d().ClusterName, vols), volumesBefore, opts.K3d().ClusterName, opts.StateDir, tmp)
			if !t.Failed() {
				passed++
			}
		})
	}
	t.Logf("%s matrix (Kubernetes-only profile, %s engine): %d points, %d passed", sig, b.kind, len(points), passed)
}

// watchPending closes pending when the OCE release of the state in dir gets a pending-install
// revision. It runs beside the test; a watch it cannot start is logged, and the test then fails
// when up ends without the signal.
func watchPending(t *testing.T, dir string, pending chan struct{}) {
	st, err := state.Read(dir)
	if err != nil {
		t.Logf("watch the chart's install: %v", err)
		return
	}
	cfg, err := kubeobj.RESTConfig(st.Cluster)
	if err != nil {
		t.Logf("watch the chart's install: %v", err)
		return
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Logf("watch the chart's install: %v", err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	seen, err := watchHelmPending(ctx, kube, kcp.DefaultNamespace, kcp.ReleaseName, "install")
	if err != nil {
		t.Logf("watch the chart's install: %v", err)
		return
	}
	<-seen
	close(pending)
}
