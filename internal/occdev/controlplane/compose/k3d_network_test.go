package compose

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openclaw/occ/internal/occdev/cluster/k3d"
	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/testbed/dockerbed"
)

// The Compose profile's network topology, built from the libraries alone: Compose creates the
// project and its <project>_development network (postgres, migrate, bootstrap), the k3d cluster
// joins that network, and the controller and the worker, with the container kubeconfig mounted,
// reach the k3d API server by the node's container name across it: the controller reads its
// version, the worker creates the bootstrap Namespace's labelled Kubernetes namespace. Teardown
// in the reference's order (reconcilers stopped, cluster deleted, compose down --volumes) leaves
// nothing of the project or the cluster, and the joined network is removed by Compose, not k3d.
func TestK3dJoinsTheComposeNetwork(t *testing.T) {
	bed := dockerbed.Start(t)
	b := newBed(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	m := b.mustLoad(UserOptions{})
	if err := m.EnsureAbsent(ctx, b.engine.API); err != nil {
		t.Fatal(err)
	}
	snap, err := m.WriteSnapshot(b.state)
	if err != nil {
		t.Fatal(err)
	}
	r, s := b.runner(snap), b.stack()
	if err := StartData(ctx, StartOptions{Runner: r, Stack: s, Build: true}); err != nil {
		t.Fatal(err)
	}

	// The cluster, recorded in a state of its own (the flow records it in the same state).
	eng, err := docker.Connect(ctx, docker.Endpoint{Socket: b.engine.Socket}, "the test bed")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	rec, err := state.Create(filepath.Join(t.TempDir(), "k3d-state"), state.State{Profile: "compose", Cluster: state.Cluster{Provider: k3d.Name}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	node, tools := mustPin(t, bed.Node.Ref), mustPin(t, bed.Tools.Ref)
	for _, img := range []pins.Image{node, tools} {
		if _, err := images.Present(ctx, images.PresentOptions{API: eng.API, Image: img, Recorder: rec}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { bed.Engine.Forget(node.DigestReference(), tools.DigestReference()) })
	prov, err := k3d.New(k3d.Options{Engine: eng, ToolsImage: tools.DigestReference()})
	if err != nil {
		t.Fatal(err)
	}
	name, err := k3d.NewName()
	if err != nil {
		t.Fatal(err)
	}
	port, err := k3d.FreeLoopbackPort()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cl, err := prov.Create(ctx, k3d.Request{
		Name: name, Owner: rec.State().Owner(), NodeImage: node, StateDir: b.state, APIPort: port,
		Network: m.Network.Name, Recorder: rec, Timeout: 3 * time.Minute,
	})
	if err != nil {
		t.Fatalf("create k3d cluster on %s: %v", m.Network.Name, err)
	}
	id := k3d.Identity{Name: name, Owner: rec.State().Owner(), UID: cl.UID}
	deleted := false
	t.Cleanup(func() {
		if !deleted {
			if err := prov.Delete(context.Background(), id); err != nil {
				t.Errorf("cleanup: delete cluster %s: %v", name, err)
			}
		}
	})
	t.Logf("k3d cluster on the Compose network: %v", time.Since(start).Round(time.Millisecond))
	server, err := b.engine.API.ContainerInspect(ctx, cl.NodeContainer)
	if err != nil {
		t.Fatal(err)
	}
	if _, on := server.NetworkSettings.Networks[m.Network.Name]; !on || cl.Network != m.Network.Name {
		t.Fatalf("server-0 is on %v (cluster reports %s), want %s", keys(server.NetworkSettings.Networks), cl.Network, m.Network.Name)
	}
	if cl.ContainerKubeconfig != filepath.Join(b.state, ContainerKubeconfigName) {
		t.Fatalf("k3d wrote the container kubeconfig to %s, but the model mounts %s", cl.ContainerKubeconfig, filepath.Join(b.state, ContainerKubeconfigName))
	}

	// The Agent runtime image occ builds from the checkout reaches the node as an immutable
	// digest reference: built by the engine's BuildKit, imported, verified by config digest.
	runtime, err := controlplane.BuildImage(ctx, b.engine.API, controlplane.BuildRequest{ContextDir: b.checkout, Dockerfile: controlplane.RuntimeDockerfile, Tag: "openclaw-enterprise-runtime:" + b.settings.Project})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = b.engine.API.ImageRemove(context.Background(), runtime.Reference, image.RemoveOptions{})
	})
	local, err := images.Built(ctx, b.engine.API, runtime.Reference, runtime.ID)
	if err != nil {
		t.Fatal(err)
	}
	staged, err := images.Import(ctx, images.ImportOptions{API: b.engine.API, Importer: prov.Importer(name), Images: []images.Local{local}, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	verified, err := images.VerifyInNode(ctx, images.VerifyOptions{API: b.engine.API, Node: cl.NodeContainer, Images: staged, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	if want := "docker.io/library/openclaw-enterprise-runtime@" + runtime.ID; verified[0].Reference != want || verified[0].ConfigDigest != runtime.ID {
		t.Fatalf("runtime in the node as %s (config %s), want %s", verified[0].Reference, verified[0].ConfigDigest, want)
	}

	// The API stage: the Installation names the container kubeconfig the overlay mounts.
	inst := fmt.Sprintf("drivers:\n  compute:\n    id: compute-kubernetes\n    configuration:\n      authentication:\n        mode: kubeconfig\n        kubeconfigPath: /run/openclaw-development/kubeconfig\n        context: %s\n", cl.Context)
	if err := os.WriteFile(filepath.Join(b.state, InstallationConfigName), []byte(inst), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := StartAPI(ctx, StartOptions{Runner: r, Stack: s, Build: true}); err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(ctx, time.Minute)
	defer rcancel()
	if err := controlplane.WaitReady(rctx, controlplane.ReadinessOptions{APIURL: m.APIURL, Checks: []controlplane.ReadinessCheck{s.ReadinessCheck()}}); err != nil {
		t.Fatal(err)
	}

	// The controller reached the k3d API server by the node's name over the Compose network.
	probe := waitKubernetesProbe(t, rctx, m.APIURL)
	if want := "https://" + cl.NodeContainer + ":6443"; probe.Server != want {
		t.Fatalf("the controller dialled %s, want %s", probe.Server, want)
	}

	// The worker provisions the bootstrap Namespace in the cluster, and OCC reports it ready.
	dest, err := controlplane.ResolveKeyDestination("", b.state)
	if err != nil {
		t.Fatal(err)
	}
	installed, err := controlplane.InstallServiceKey(ctx, controlplane.InstallKeyOptions{StateDir: b.state, Destination: dest, APIURL: m.APIURL, Read: s.BootstrapKeySource()})
	if err != nil {
		t.Fatal(err)
	}
	key, err := controlplane.ParseServiceKey([]byte(readFile(t, installed.Path)))
	if err != nil {
		t.Fatal(err)
	}
	kc, err := clientcmd.BuildConfigFromFlags("", cl.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kube, err := kubernetes.NewForConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := controlplane.WaitBootstrapNamespace(rctx, controlplane.NamespaceWaitOptions{Kubernetes: kube, APIURL: m.APIURL, Key: key})
	if err != nil {
		t.Fatalf("bootstrap Namespace: %v", err)
	}
	t.Logf("bootstrap Namespace %s is ready as Kubernetes namespace %s", ns.ID, ns.KubernetesName)

	// Teardown in the reference's order.
	if err := StopReconcilers(ctx, r); err != nil {
		t.Fatal(err)
	}
	if err := prov.Delete(ctx, id); err != nil {
		t.Fatalf("delete cluster: %v", err)
	}
	deleted = true
	// k3d leaves the network it joined: it is the project's, and Compose removes it.
	nw, err := b.engine.API.NetworkInspect(ctx, m.Network.Name, network.InspectOptions{})
	if err != nil {
		t.Fatalf("the Compose network is gone after the cluster was deleted: %v", err)
	}
	if nw.Labels[LabelProject] != b.settings.Project {
		t.Fatalf("network %s carries project label %q, want %q", m.Network.Name, nw.Labels[LabelProject], b.settings.Project)
	}
	if err := Remove(ctx, RemoveOptions{Runner: r, Engine: b.engine.API, Names: m.Names()}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.engine.API.NetworkInspect(ctx, m.Network.Name, network.InspectOptions{}); err == nil {
		t.Fatalf("network %s is left after compose down", m.Network.Name)
	}
	left, err := bed.Engine.ClusterObjects(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if len(left.Containers)+len(left.Volumes)+len(left.Networks) != 0 {
		t.Fatalf("left of the cluster: %s", left)
	}
}

// standinProbe is the controller stand-in's report of its last Kubernetes API call.
type standinProbe struct {
	Reachable  bool   `json:"reachable"`
	Server     string `json:"server"`
	GitVersion string `json:"gitVersion"`
	Error      string `json:"error"`
}

// waitKubernetesProbe polls the controller stand-in's report (it probes every two seconds) until
// it has reached the API server, or the context ends.
func waitKubernetesProbe(t *testing.T, ctx context.Context, apiURL string) standinProbe {
	t.Helper()
	var last standinProbe
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, apiURL+"/_standin/kubernetes", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			_ = json.Unmarshal(body, &last)
			if last.Reachable {
				return last
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the controller never reached the k3d API server: last report %+v", last)
		case <-tick.C:
		}
	}
}

func mustPin(t *testing.T, ref string) pins.Image {
	t.Helper()
	img, err := pins.ParseImage(ref)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
