package occdev_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/events"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/cluster/k3d"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/testbed/dockerbed"
)

// The anchor: `occ dev up` (k3d, platform only) against the command-line sequence a developer
// would run instead, in the reference implementation's way, on the same bed and in the same
// sitting. Each iteration runs both, in alternating order so that load on the shared machine
// falls on both; each side starts from the same engine content and leaves nothing behind.
//
// The command-line side, with the CLIs occ links as libraries (scripts/testclis builds them):
//
//	docker pull ×5                 the k3s node, k3d tools and three OpenShell images, by digest
//	k3d cluster create             occ's settings: one server, no agents, no load balancer, the API
//	                               on 127.0.0.1, the PodSecurity admission file, occ's kubelet and
//	                               apiserver arguments, IPTABLES_MODE=legacy, no kubeconfig change
//	k3d kubeconfig get             the cluster's kubeconfig into a file
//	per OpenShell image            docker tag (k3d imports by name), k3d image import --mode direct,
//	                               docker exec <node> ctr images ls (find the imported name) and
//	                               ctr images tag <name> <pinned digest reference>
//	kubectl apply                  Namespace, RuntimeClass, the Gateway's JWT Secret and the
//	                               development policies (occ's own typed objects), then the Agent
//	                               Sandbox manifest
//	kubectl rollout status         deployment/agent-sandbox-controller
//	helm upgrade --install --wait  the Gateway chart (extracted from the pinned archive beforehand,
//	                               untimed) with occ's values
//
// and `k3d cluster delete` beside `occ dev down`. occ does more than the sequence (it verifies
// every image in the node, checks the rendered chart, calls the Gateway's Health, writes the
// Installation, records everything), so the ratio is conservative.
//
// Variants: "bed-registry" pulls from the bed's registry with every layer already in the engine
// (a pull is a manifest round trip), as the flow tests do. "limited-25MBps" serves the three
// OpenShell images from a registry that sends blobs at 25 MB/s (one link shared by all
// downloads), with sizes near the real images' (see limitedSizes), and removes them from the
// engine after every run, so each run downloads them; the node and tools images come from the
// bed's registry with their layers present, as on a laptop that used k3d before.
//
// It runs on both Docker image stores (dockerbed.Flavours): on the containerd store k3d's image
// import cannot move a multi-platform index, so the sequence pipes docker save into ctr import
// there, as a developer who met k3d#1538 would.
//
// Metrics (means over the iterations): occ-up-s, cli-up-s, up-ratio (occ/CLI), the floors of up
// (floor-cluster-s: the sequence's k3d cluster create; floor-transfer-s: the images' bytes over
// the link, zero on the bed registry) and up-floor-ratio (occ's up over the larger), occ-down-s,
// cli-down-s, down-ratio, and cli-rmi-s with down-ratio-with-rmi: occ's down also removes the
// images its up pulled, which k3d cluster delete leaves, so the sequence's removal of them
// (untimed in its down) is reported beside it; the floor of down, floor-down-s: the engine's own
// removal of the node container within k3d cluster delete (its kill to its destroy event), with
// floor-down-share (that over k3d cluster delete) and down-floor-ratio (occ's down over it).
// Every iteration's figures, the sequence's phases and occ's steps are printed; ns/op counts
// nothing (the timer is stopped around the runs, which are timed one by one). Run through make
// bench, or:
//
//	OCC_TEST_CLIS=$(scripts/testclis) go test -run '^$' -bench BenchmarkUpAgainstCLIs -benchtime 3x -count 2 ./internal/occdev/
func BenchmarkUpAgainstCLIs(b *testing.B) {
	clis := os.Getenv("OCC_TEST_CLIS")
	if clis == "" {
		b.Fatal("OCC_TEST_CLIS is empty: it names the directory of the k3d, helm and kubectl CLIs; make bench sets it (OCC_TEST_CLIS=$(scripts/testclis))")
	}
	for _, tool := range []string{"k3d", "helm", "kubectl"} {
		if _, err := os.Stat(filepath.Join(clis, tool)); err != nil {
			b.Fatalf("OCC_TEST_CLIS=%s has no %s: %v", clis, tool, err)
		}
	}
	docker, err := exec.LookPath("docker")
	if err != nil {
		b.Fatalf("the command-line sequence needs the docker CLI on PATH: %v", err)
	}
	for _, f := range dockerbed.Flavours() {
		if f.Podman {
			continue
		}
		b.Run(f.Name, func(b *testing.B) {
			f.Use(b)
			benchUpAgainstCLIs(b, clis, docker, f.Store)
		})
	}
}

// benchUpAgainstCLIs is BenchmarkUpAgainstCLIs on the engine DOCKER_HOST names, which keeps
// images in store.
func benchUpAgainstCLIs(b *testing.B, clis, docker string, store dockerbed.ImageStore) {
	bed := newK3dBed(b, nil)
	chartDir := extractGatewayChart(b, bed.archive, bed.set)

	// One run of occ first, as a user's first run would, so the node and tools layers are local.
	warm := bed.options(b)
	if _, err := occdev.Up(context.Background(), warm); err != nil {
		b.Fatalf("warm-up: %v", err)
	}
	if _, err := occdev.Down(context.Background(), occdev.DownOptions{StateDir: warm.StateDir}); err != nil {
		b.Fatal(err)
	}

	for _, v := range []struct {
		name    string
		limited bool
	}{{"bed-registry", false}, {"limited-25MBps", true}} {
		b.Run(v.name, func(b *testing.B) {
			set := *bed.set
			manifest := k3dAgentSandboxManifest(bed.set.OpenShell.Images)
			pinFile := bed.pinFile
			products := bed.productRefs()
			remove := func() { bed.Engine.Forget(products...) }
			var reg *limitedRegistry
			if v.limited {
				reg = startLimitedRegistry(b, limitedRate)
				var imgs []pins.Image
				for _, size := range limitedSizes {
					spec, err := dockerbed.SizedImage(size)
					if err != nil {
						b.Fatal(err)
					}
					imgs = append(imgs, reg.push(b, spec, false))
				}
				set.OpenShell.Images = pins.Images{Gateway: imgs[0], Sandbox: imgs[1], Supervisor: imgs[2]}
				manifest = k3dAgentSandboxManifest(set.OpenShell.Images)
				set.AgentSandbox.Manifest = serveManifest(b, manifest)
				pinFile = bed.writePins(&set)
				products = []string{imgs[0].DigestReference(), imgs[1].DigestReference(), imgs[2].DigestReference()}
				// The images leave the engine entirely after each run, so the next run downloads them.
				remove = func() { removeImages(b, bed, products) }
				b.Cleanup(remove)
			}
			cli := &cliSequence{
				b: b, bed: bed, clis: clis, docker: docker, set: &set, chartDir: chartDir, manifest: manifest, store: store,
				pulls: append([]string{bed.set.K3s.Image.DigestReference(), bed.set.K3d.ToolsImage.DigestReference()}, products...),
			}
			var occUp, occDown, cliUp, cliDown, cliRmi, nodeRm []time.Duration
			occSteps := map[string]time.Duration{}
			var occOrder []string
			i := 0
			for b.Loop() {
				b.StopTimer()
				remove()
				runOCC := func() {
					opts := bed.options(b)
					opts.PinFile = pinFile
					b.Cleanup(func() {
						// A run that failed half-way is taken down, so the shared engine keeps nothing.
						if !stateGone(opts.StateDir) {
							_, _ = occdev.Down(context.Background(), occdev.DownOptions{StateDir: opts.StateDir})
						}
					})
					times := newStepTimes()
					opts.Progress = times.sink
					served := reg.servedSoFar()
					start := time.Now()
					if _, err := occdev.Up(context.Background(), opts); err != nil {
						b.Fatalf("occ dev up: %v", err)
					}
					occUp = append(occUp, time.Since(start))
					reg.mustDownload(b, "occ dev up", served)
					for _, l := range times.lines {
						step := l.Step
						if strings.HasPrefix(step, "Create k3d cluster ") {
							step = "Create k3d cluster <name>"
						}
						if _, ok := occSteps[step]; !ok {
							occOrder = append(occOrder, step)
						}
						occSteps[step] += l.Took
					}
					vols := bed.volumesOf(b, opts.K3d().ClusterName)
					start = time.Now()
					if _, err := occdev.Down(context.Background(), occdev.DownOptions{StateDir: opts.StateDir}); err != nil {
						b.Fatalf("occ dev down: %v", err)
					}
					occDown = append(occDown, time.Since(start))
					assertNothingLeftBy(b, bed, "occ", opts.K3d().ClusterName, vols, products)
				}
				runCLI := func() {
					served := reg.servedSoFar()
					up, down, rmi, node := cli.run(clusterName())
					reg.mustDownload(b, "the command-line sequence", served)
					cliUp, cliDown, cliRmi, nodeRm = append(cliUp, up), append(cliDown, down), append(cliRmi, rmi), append(nodeRm, node)
				}
				if i%2 == 0 {
					runOCC()
					remove()
					runCLI()
				} else {
					runCLI()
					remove()
					runOCC()
				}
				i++
				b.StartTimer()
			}
			b.StopTimer()
			b.ReportMetric(mean(occUp), "occ-up-s")
			b.ReportMetric(mean(cliUp), "cli-up-s")
			b.ReportMetric(mean(occUp)/mean(cliUp), "up-ratio")
			// The floors of up: the cluster's creation (the sequence's k3d cluster create) and
			// the images' bytes over the link (none on the bed registry, whose layers are local).
			floorCluster := cli.mean("k3d cluster create, k3d kubeconfig get")
			floorTransfer := 0.0
			if v.limited {
				floorTransfer = float64(limitedBytes()) / limitedRate
			}
			floor := max(floorCluster, floorTransfer)
			b.ReportMetric(floorCluster, "floor-cluster-s")
			b.ReportMetric(floorTransfer, "floor-transfer-s")
			b.ReportMetric(mean(occUp)/floor, "up-floor-ratio")
			b.ReportMetric(mean(occDown), "occ-down-s")
			b.ReportMetric(mean(cliDown), "cli-down-s")
			b.ReportMetric(mean(occDown)/mean(cliDown), "down-ratio")
			// occ's down also removes the images its up pulled; k3d cluster delete does not, so
			// the sequence's docker rmi of them is reported beside it.
			b.ReportMetric(mean(cliRmi), "cli-rmi-s")
			b.ReportMetric(mean(occDown)/(mean(cliDown)+mean(cliRmi)), "down-ratio-with-rmi")
			// The floor of down: the engine's own removal of the node container (inside k3d
			// cluster delete, from its engine events), which any removal of the cluster contains.
			b.ReportMetric(mean(nodeRm), "floor-down-s")
			b.ReportMetric(mean(nodeRm)/mean(cliDown), "floor-down-share")
			b.ReportMetric(mean(occDown)/mean(nodeRm), "down-floor-ratio")
			// Printed rather than logged: a benchmark's log is cut after a few lines.
			fmt.Printf("%s: up %.2f s is %.2f× its floor %.2f s (cluster creation %.2f s, transfer %.2f s) and %.2f× the command-line sequence\n",
				v.name, mean(occUp), mean(occUp)/floor, floor, floorCluster, floorTransfer, mean(occUp)/mean(cliUp))
			fmt.Printf("%s: down %.2f s is %.2f× k3d cluster delete %.2f s, whose engine took %.2f s (%.2f of it) to remove the node container alone\n",
				v.name, mean(occDown), mean(occDown)/mean(cliDown), mean(cliDown), mean(nodeRm), mean(nodeRm)/mean(cliDown))
			fmt.Printf("%s: per iteration (up occ/CLI, down occ/CLI, the CLI's docker rmi, the engine's node removal in k3d cluster delete; seconds):\n", v.name)
			for j := range occUp {
				fmt.Printf("  %d: up %6.2f / %6.2f = %.2f   down %5.2f / %5.2f = %.2f   rmi %5.2f   node %5.2f\n", j, occUp[j].Seconds(), cliUp[j].Seconds(), occUp[j].Seconds()/cliUp[j].Seconds(),
					occDown[j].Seconds(), cliDown[j].Seconds(), occDown[j].Seconds()/cliDown[j].Seconds(), cliRmi[j].Seconds(), nodeRm[j].Seconds())
			}
			fmt.Printf("%s: the command-line sequence, mean per phase (k3d image import run again %d time(s)):\n%s", v.name, cli.importRetries, cli.table())
			fmt.Printf("%s: occ dev up, mean per step (lanes overlap):\n", v.name)
			for _, step := range occOrder {
				fmt.Printf("  %-58s %8s\n", step, (occSteps[step] / time.Duration(max(1, len(occUp)))).Round(10*time.Millisecond))
			}
		})
	}
}

// limitedRate is the limited registry's bandwidth, bytes per second: a typical home or office
// link to ghcr.io and Docker Hub.
const limitedRate = 25_000_000

// limitedSizes are the sizes of the limited variant's gateway, sandbox and supervisor images
// (one layer of incompressible data each). They are chosen near the real OpenShell images'
// compressed sizes: a gateway of a few tens of MB (one Rust binary on a slim base), a sandbox
// base image of a few hundred MB (language runtimes and tools), a small supervisor. The odd byte
// counts keep them distinct from any other test's generated images in the shared engine.
var limitedSizes = []int64{60<<20 + 101, 300<<20 + 103, 25<<20 + 107}

func mean(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return math.NaN()
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum.Seconds() / float64(len(ds))
}

// cliSequence runs the command-line sequence of one cluster and returns how long its up and its
// down took.
type cliSequence struct {
	b        *testing.B
	bed      *k3dBed
	clis     string
	docker   string
	set      *pins.Set
	chartDir string
	manifest []byte
	pulls    []string
	// phases sums the time of each phase of the sequence over the runs; order lists them.
	phases map[string]time.Duration
	order  []string
	runs   int
	// importRetries counts the k3d image imports that failed and were run again.
	importRetries int
	// store is how the engine keeps images: on the containerd store k3d's image import cannot
	// move a multi-platform index (k3d#1538: ctr stops at the platforms the engine never pulled),
	// so the sequence pipes docker save into ctr import with the node's platform there.
	store dockerbed.ImageStore
}

// mean is the mean time of the named phase over the runs, in seconds.
func (c *cliSequence) mean(phase string) float64 {
	return (c.phases[phase] / time.Duration(max(1, c.runs))).Seconds()
}

// phase adds the time since *mark to the named phase and moves the mark.
func (c *cliSequence) phase(name string, mark *time.Time) {
	if c.phases == nil {
		c.phases = map[string]time.Duration{}
	}
	if _, ok := c.phases[name]; !ok {
		c.order = append(c.order, name)
	}
	now := time.Now()
	c.phases[name] += now.Sub(*mark)
	*mark = now
}

// run returns how long the up and the down took, and the untimed-in-down removal of what the
// sequence pulled and tagged (occ's down removes its pulls; k3d cluster delete does not).
func (c *cliSequence) run(cluster string) (up, down, rmi, nodeRemoval time.Duration) {
	b := c.b
	ctx := context.Background()
	dir := b.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	env := append(os.Environ(), "PATH="+c.clis+string(os.PathListSeparator)+os.Getenv("PATH"), "DOCKER_HOST="+c.bed.Engine.Host, "KUBECONFIG="+kubeconfig)
	try := func(name string, args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if err != nil {
			return string(out), fmt.Errorf("%s %s: %w\n%s", filepath.Base(name), strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}
	sh := func(name string, args ...string) string {
		b.Helper()
		out, err := try(name, args...)
		if err != nil {
			b.Fatal(err)
		}
		return out
	}
	tool := func(n string) string { return filepath.Join(c.clis, n) }
	// A run that fails half-way still removes its cluster (k3d cluster delete of an absent
	// cluster is a no-op), so the shared engine keeps nothing of it.
	defer func() {
		if b.Failed() {
			_, _ = try(tool("k3d"), "cluster", "delete", cluster)
		}
	}()
	node := "k3d-" + cluster + "-server-0"
	port, err := k3d.FreeLoopbackPort()
	if err != nil {
		b.Fatal(err)
	}
	admission := filepath.Join(dir, "pod-security-admission.yaml")
	writeFile(b, admission, admissionYAML)
	platformFile := filepath.Join(dir, "platform.yaml")
	writeFile(b, platformFile, platformYAML(b))
	manifestFile := filepath.Join(dir, "agent-sandbox.yaml")
	writeFile(b, manifestFile, string(c.manifest))
	values, err := platform.GatewayValues(platform.GatewayInstall{
		Namespace: benchNamespace, Images: c.set.OpenShell.Images, ServiceType: corev1.ServiceTypeClusterIP, PullPolicy: corev1.PullNever,
	})
	if err != nil {
		b.Fatal(err)
	}
	valuesJSON, _ := json.Marshal(values)
	valuesFile := filepath.Join(dir, "values.json")
	writeFile(b, valuesFile, string(valuesJSON))
	imgs := c.set.OpenShell.Images
	staging := map[string]string{}
	defer func() {
		// Untimed: what the sequence pulled and tagged leaves the engine, so the next run starts
		// from the same content (the cluster itself went with k3d cluster delete).
		for _, tag := range staging {
			c.bed.Engine.Forget(tag)
		}
		c.bed.Engine.Forget(c.pulls...)
	}()

	start := time.Now()
	mark := start
	for _, ref := range c.pulls {
		sh(c.docker, "pull", "-q", ref)
	}
	c.phase("docker pull ×5", &mark)
	k3sArgs := []string{
		"--tls-san=" + node,
		"--kubelet-arg=eviction-hard=imagefs.available<5%,nodefs.available<5%",
		"--kubelet-arg=eviction-minimum-reclaim=imagefs.available=1%,nodefs.available=1%",
		"--kubelet-arg=image-gc-high-threshold=100",
		"--kubelet-arg=image-gc-low-threshold=99",
		"--kube-apiserver-arg=admission-control-config-file=/etc/occ-development/pod-security-admission.yaml",
		"--kube-controller-manager-arg=kube-api-qps=200",
		"--kube-controller-manager-arg=kube-api-burst=400",
	}
	create := []string{"cluster", "create", cluster, "--image", c.set.K3s.Image.DigestReference(), "--servers", "1", "--agents", "0",
		"--api-port", fmt.Sprintf("127.0.0.1:%d", port), "--no-lb", "--wait", "--timeout", "3m",
		"--kubeconfig-update-default=false", "--kubeconfig-switch-context=false",
		"--volume", admission + ":/etc/occ-development/pod-security-admission.yaml:ro@server:0", "--env", "IPTABLES_MODE=legacy@server:0"}
	for _, a := range k3sArgs {
		create = append(create, "--k3s-arg", a+"@server:0")
	}
	sh(tool("k3d"), create...)
	writeFile(b, kubeconfig, sh(tool("k3d"), "kubeconfig", "get", cluster))
	c.phase("k3d cluster create, k3d kubeconfig get", &mark)
	for role, img := range map[string]pins.Image{"gateway": imgs.Gateway, "sandbox": imgs.Sandbox, "supervisor": imgs.Supervisor} {
		tag := "occ.local/cli-import/" + role + ":" + cluster
		staging[role] = tag
		sh(c.docker, "tag", img.DigestReference(), tag)
		// k3d's direct import sometimes ends its stream into the node early and says so; a
		// developer runs it again, and so does the sequence (the retries are counted).
		for attempt := 1; ; attempt++ {
			var err error
			if c.store == dockerbed.ContainerdStore {
				_, err = try("sh", "-c", shellQuote(c.docker)+" save "+shellQuote(tag)+" | "+shellQuote(c.docker)+" exec -i "+node+
					" ctr -n k8s.io image import --local --platform linux/"+goruntime.GOARCH+" -")
			} else {
				_, err = try(tool("k3d"), "image", "import", "--mode", "direct", "-c", cluster, tag)
			}
			if err == nil {
				break
			}
			if attempt == 3 {
				b.Fatal(err)
			}
			c.importRetries++
		}
		listed := sh(c.docker, "exec", node, "ctr", "-n", "k8s.io", "images", "ls", "-q")
		if !slices.Contains(strings.Fields(listed), tag) {
			b.Fatalf("ctr lists no %s after the import:\n%s", tag, listed)
		}
		sh(c.docker, "exec", node, "ctr", "-n", "k8s.io", "images", "tag", tag, img.DigestReference())
	}
	c.phase("per image: docker tag, k3d image import, ctr ls, ctr tag", &mark)
	sh(tool("kubectl"), "apply", "-f", platformFile)
	sh(tool("kubectl"), "apply", "-f", manifestFile)
	c.phase("kubectl apply ×2", &mark)
	sh(tool("kubectl"), "rollout", "status", "deployment/agent-sandbox-controller", "-n", "agent-sandbox-system", "--timeout", "3m")
	c.phase("kubectl rollout status", &mark)
	sh(tool("helm"), "upgrade", "--install", platform.GatewayRelease, c.chartDir, "--namespace", benchNamespace,
		"--kube-context", "k3d-"+cluster, "--wait", "--timeout", "3m", "-f", valuesFile)
	c.phase("helm upgrade --install --wait", &mark)
	up = time.Since(start)
	c.runs++

	vols := c.bed.volumesOf(b, cluster)
	removal := watchRemoval(b, c.bed, node)
	start = time.Now()
	sh(tool("k3d"), "cluster", "delete", cluster)
	down = time.Since(start)
	nodeRemoval = removal()
	start = time.Now()
	for _, tag := range staging {
		c.bed.Engine.Forget(tag)
	}
	c.bed.Engine.Forget(c.pulls...)
	rmi = time.Since(start)
	assertNothingLeftBy(b, c.bed, "the command-line sequence", cluster, vols, c.pulls[2:])
	return up, down, rmi, nodeRemoval
}

// watchRemoval watches the engine remove the container node; the function it returns waits for
// the container's destruction and returns how long the engine took from the first event of the
// removal (the kill of a running container) to that destruction: the engine's own removal of the
// node, which any removal of the cluster contains.
func watchRemoval(b *testing.B, bed *k3dBed, node string) func() time.Duration {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	// Since now: the engine replays what happened between this call and the subscription's
	// arrival, so the removal's first event cannot be missed.
	now := time.Now()
	msgs, errs := bed.engine.API.Events(ctx, events.ListOptions{Since: fmt.Sprintf("%d.%09d", now.Unix(), now.Nanosecond()), Filters: filters.NewArgs(
		filters.Arg("type", "container"), filters.Arg("container", node),
		filters.Arg("event", "kill"), filters.Arg("event", "die"), filters.Arg("event", "destroy"))})
	return func() time.Duration {
		defer cancel()
		var first int64
		for {
			select {
			case m := <-msgs:
				if first == 0 {
					first = m.TimeNano
				}
				if m.Action == events.ActionDestroy {
					return time.Duration(m.TimeNano - first)
				}
			case err := <-errs:
				b.Fatalf("watch the removal of %s: %v", node, err)
			}
		}
	}
}

// table prints the mean of each phase.
func (c *cliSequence) table() string {
	var t strings.Builder
	for _, name := range c.order {
		fmt.Fprintf(&t, "  %-58s %8s\n", name, (c.phases[name] / time.Duration(max(1, c.runs))).Round(10*time.Millisecond))
	}
	return t.String()
}

// benchNamespace is the Kubernetes-only profile's platform namespace, which both sides use.
const benchNamespace = "oce-system"

// admissionYAML is the PodSecurity admission configuration occ writes for its clusters (every
// level privileged, the sandbox RuntimeClass exempt).
const admissionYAML = `apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults: {enforce: privileged, enforce-version: latest, audit: privileged, audit-version: latest, warn: privileged, warn-version: latest}
    exemptions: {usernames: [], namespaces: [], runtimeClasses: [openshell-sandbox]}
`

// platformYAML is the objects occ applies besides the Agent Sandbox manifest and the Gateway,
// from occ's own typed manifests, as one multi-document file for kubectl apply.
func platformYAML(b *testing.B) string {
	secret, err := platform.JWTSecret(benchNamespace)
	if err != nil {
		b.Fatal(err)
	}
	objs := append([]runtime.Object{platform.Namespace(benchNamespace), platform.RuntimeClass(), secret}, platform.DevelopmentPolicies(benchNamespace)...)
	var docs []string
	for _, o := range objs {
		if gvks, _, err := scheme.Scheme.ObjectKinds(o); err == nil && len(gvks) > 0 {
			o.GetObjectKind().SetGroupVersionKind(gvks[0])
		}
		data, err := yaml.Marshal(o)
		if err != nil {
			b.Fatal(err)
		}
		docs = append(docs, string(data))
	}
	return strings.Join(docs, "---\n")
}

// shellQuote quotes s as one word for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func writeFile(b *testing.B, path, content string) {
	b.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		b.Fatal(err)
	}
}

// extractGatewayChart unpacks the Gateway chart directory of the pinned archive (what the
// reference extracts before `helm upgrade`) and returns its path.
func extractGatewayChart(b *testing.B, archive string, set *pins.Set) string {
	b.Helper()
	f, err := os.Open(archive)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	prefix := set.OpenShell.SourceArchive.TopDirectory + "/" + set.OpenShell.Charts.Gateway + "/"
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		rel, ok := strings.CutPrefix(h.Name, prefix)
		if !ok || rel == "" || h.Typeflag != tar.TypeReg {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			b.Fatal(err)
		}
		writeFile(b, p, string(data))
	}
	if _, err := os.Stat(filepath.Join(dir, "Chart.yaml")); err != nil {
		b.Fatalf("no Gateway chart under %s in %s: %v", prefix, archive, err)
	}
	return dir
}

// serveManifest serves an Agent Sandbox manifest over HTTP and returns its pin.
func serveManifest(b *testing.B, manifest []byte) pins.Artifact {
	sum := sha256.Sum256(manifest)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(manifest) }))
	b.Cleanup(srv.Close)
	return pins.Artifact{URL: srv.URL + "/sandbox.yaml", SHA256: hex.EncodeToString(sum[:])}
}

// assertNothingLeftBy fails the benchmark when a run left anything of its cluster, a staging
// tag, or one of refs (images it pulled) in the engine.
func assertNothingLeftBy(b *testing.B, bed *k3dBed, who, cluster string, vols, refs []string) {
	b.Helper()
	ctx := context.Background()
	objs, err := bed.Engine.ClusterObjects(ctx, cluster, vols...)
	if err != nil {
		b.Fatal(err)
	}
	var left []string
	if !objs.Empty() {
		left = append(left, "cluster objects: "+objs.String())
	}
	list, err := bed.Engine.API.ImageList(ctx, image.ListOptions{All: true})
	if err != nil {
		b.Fatal(err)
	}
	for _, im := range list {
		for _, tag := range im.RepoTags {
			if strings.HasSuffix(tag, ":"+cluster) {
				left = append(left, "staging tag "+tag)
			}
		}
	}
	for _, ref := range refs {
		if id := bed.imageID(b, ref); id != "" {
			left = append(left, "pulled image "+ref+" ("+id+")")
		}
	}
	if len(left) > 0 {
		b.Fatalf("%s left %v", who, left)
	}
}

// removeImages deletes the images refs name from the engine entirely (they are this benchmark's
// own generated images, which nothing else uses), so their next pull downloads every layer.
func removeImages(b *testing.B, bed *k3dBed, refs []string) {
	ctx := context.Background()
	for _, ref := range refs {
		ins, err := bed.engine.API.ImageInspect(ctx, ref)
		if cerrdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			b.Fatal(err)
		}
		if _, err := bed.engine.API.ImageRemove(ctx, ins.ID, image.RemoveOptions{Force: true, PruneChildren: true}); err != nil && !cerrdefs.IsNotFound(err) {
			b.Fatalf("remove %s (%s): %v", ref, ins.ID, err)
		}
	}
	// A layer another image still uses stays; the generated layers belong to no other image.
	left, err := bed.Engine.API.ImageList(ctx, image.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("reference", "*/occ-bed/sized-*"))})
	if err == nil && len(left) > 0 {
		for _, im := range left {
			for _, ref := range refs {
				if slices.ContainsFunc(im.RepoDigests, func(d string) bool { return d == ref }) {
					b.Fatalf("%s is still in the engine after its removal", ref)
				}
			}
		}
	}
}

// limitedRegistry is an in-process registry whose blob downloads share one link of a fixed
// rate: a stand-in for the network between a laptop and the image registries, not a
// synchronisation.
type limitedRegistry struct {
	host string
	link *pacedLink
}

// servedSoFar is how many blob bytes the registry has sent; nil (the bed registry's variant)
// counts none.
func (r *limitedRegistry) servedSoFar() int64 {
	if r == nil {
		return 0
	}
	return r.link.sent.Load()
}

// mustDownload fails b unless the registry sent at least the limited images' bytes since it had
// sent before: a run that found their layers in the engine already (an image an earlier run
// left holds them) did not cross the link, and its time says nothing about it. Nil checks
// nothing.
func (r *limitedRegistry) mustDownload(b *testing.B, who string, before int64) {
	if r == nil {
		return
	}
	if got, want := r.servedSoFar()-before, limitedBytes(); got < want {
		b.Fatalf("%s downloaded %d of the %d bytes of the limited images: the engine held their layers already (an image an earlier run left? look for occ-bench/ and occ-bed/sized- in docker image ls), so the run did not measure the link", who, got, want)
	}
}

// limitedBytes is the sum of limitedSizes: the least the limited images' layers take on the link.
func limitedBytes() int64 {
	var n int64
	for _, size := range limitedSizes {
		n += size
	}
	return n
}

func startLimitedRegistry(b *testing.B, rate int64) *limitedRegistry {
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithBlobHandler(registry.NewDiskBlobHandler(b.TempDir())))
	link := &pacedLink{rate: rate}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
			w = &pacedWriter{ResponseWriter: w, link: link}
		}
		h.ServeHTTP(w, r)
	}))
	b.Cleanup(srv.Close)
	return &limitedRegistry{host: strings.TrimPrefix(srv.URL, "http://"), link: link}
}

// push uploads spec's image (at full speed) and returns its pin, repository:tag@digest: the
// image manifest itself, or with asIndex a one-platform index of it (as registries serve images).
func (r *limitedRegistry) push(b *testing.B, spec dockerbed.ImageSpec, asIndex bool) pins.Image {
	img, err := spec.Image()
	if err != nil {
		b.Fatal(err)
	}
	digestOf, write := img.Digest, func(tag name.Tag) error { return remote.Write(tag, img) }
	if asIndex {
		cf, err := img.ConfigFile()
		if err != nil {
			b.Fatal(err)
		}
		idx := mutate.AppendManifests(empty.Index, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: cf.OS, Architecture: cf.Architecture}}})
		digestOf, write = idx.Digest, func(tag name.Tag) error { return remote.WriteIndex(tag, idx) }
	}
	key, err := spec.Key()
	if err != nil {
		b.Fatal(err)
	}
	repo := r.host + "/" + spec.Repo
	tag, err := name.NewTag(repo+":"+key, name.Insecure)
	if err != nil {
		b.Fatal(err)
	}
	if err := write(tag); err != nil {
		b.Fatalf("push %s: %v", tag, err)
	}
	digest, err := digestOf()
	if err != nil {
		b.Fatal(err)
	}
	return parsePin(b, repo+":"+key+"@"+digest.String())
}

// pacedLink hands out send times so that every byte through it keeps to rate.
type pacedLink struct {
	mu   sync.Mutex
	rate int64
	next time.Time
	sent atomic.Int64
}

// reserve returns when n bytes may be sent.
func (l *pacedLink) reserve(n int) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if l.next.Before(now) {
		l.next = now
	}
	at := l.next
	l.next = l.next.Add(time.Duration(float64(n) / float64(l.rate) * float64(time.Second)))
	return at
}

type pacedWriter struct {
	http.ResponseWriter
	link *pacedLink
}

// chunk is how much is sent per reservation.
const chunk = 64 << 10

func (p *pacedWriter) Write(data []byte) (int, error) {
	sent := 0
	for len(data) > 0 {
		n := min(len(data), chunk)
		time.Sleep(time.Until(p.link.reserve(n)))
		w, err := p.ResponseWriter.Write(data[:n])
		sent += w
		p.link.sent.Add(int64(w))
		if err != nil {
			return sent, err
		}
		data = data[n:]
	}
	return sent, nil
}
