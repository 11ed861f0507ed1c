package occdev_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/progress"
	"github.com/openclaw/occ/internal/syncbuf"
	"github.com/openclaw/occ/internal/testbed"
	"github.com/openclaw/occ/internal/testbed/dockerbed"
	"github.com/openclaw/occ/internal/testbed/oceapi"
	"github.com/openclaw/occ/internal/testbed/ocebed"
)

// kubeBed is the k3d bed of the flow's tests (k3dBed: the private engine with the k3s stand-in
// node and k3d tools image, the OpenShell stand-in images served by digest, the stand-in charts,
// the Agent Sandbox manifest, the gateway emulator) with what the Kubernetes-only profile adds:
// the stand-in Node base and PostgreSQL images served by digest from the bed's registry (as
// Docker Hub serves the pins), a copy of the fixture OCE checkout, and a docker compose plugin
// that only leaves a mark, so a test can prove the profile never runs Compose.
type kubeBed struct {
	*k3dBed
	checkout string
	commit   string
	// oce are the OCE pins' references a run pulls (none is in the engine before it).
	oce []string
	// composeMark is written if anything runs the docker compose plugin.
	composeMark string
	// nodeBase and nodeRuntimeBase are the stand-in Node bases the bed serves by digest, set
	// as OCC_DEVELOPMENT_NODE_BASE_IMAGE and OCC_DEVELOPMENT_NODE_RUNTIME_BASE_IMAGE.
	nodeBase, nodeRuntimeBase string
	// selected, when set, are the controller and Agent runtime images every run selects by
	// digest instead of building them (the way a Podman user runs the profile).
	selected controlplane.ImageSelection
	// failureSteps, when set, replace kubernetesDefaultSteps as the steps a failure is injected
	// after by default.
	failureSteps []string
}

func newKubeBed(t testing.TB) *kubeBed {
	t.Helper()
	return newKubeBedOn(t, state.EngineDocker)
}

// newKubeBedOn is newKubeBed on the given engine (newK3dBedOn).
func newKubeBedOn(t testing.TB, kind engine.Kind) *kubeBed {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// The stand-in binary is built before the k3d bed points HOME at a temporary directory,
	// where the go command would find an empty build cache (minutes instead of a second).
	ocebed.StandinBinary(t)
	b := &kubeBed{k3dBed: newK3dBedOn(t, nil, kind)}
	provide := func(spec dockerbed.ImageSpec) pins.Image {
		p, err := b.Provide(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		key, err := spec.Key()
		if err != nil {
			t.Fatal(err)
		}
		pin := parsePin(t, p.Repo+":"+key+"@"+p.Digest)
		b.oce = append(b.oce, pin.DigestReference())
		return pin
	}
	b.set.OCE.NodeBaseImage = provide(ocebed.NodeSpec(t))
	b.set.OCE.PostgresImage = provide(ocebed.PostgresSpec(t))
	// The same stand-in under the slim image's own repository: the runtime stages' base.
	slim := ocebed.NodeSpec(t)
	slim.Repo = "occ-bed/oce-node-slim"
	b.nodeBase, b.nodeRuntimeBase = b.set.OCE.NodeBaseImage.String(), provide(slim).String()
	b.pinFile = b.writePins(b.set)

	b.commit = "9c1b2d3e4f5a69788796a5b4c3d2e1f00f1e2d3c"
	b.checkout = ocebed.Checkout(t, b.commit)

	// A docker compose plugin that only leaves a mark, where occ would look for one.
	home := os.Getenv("HOME")
	t.Setenv("DOCKER_CONFIG", filepath.Join(home, ".docker"))
	b.composeMark = filepath.Join(t.TempDir(), "compose-was-called")
	plugin := filepath.Join(home, ".docker", "cli-plugins", "docker-compose")
	if err := os.MkdirAll(filepath.Dir(plugin), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plugin, []byte("#!/bin/sh\necho \"$@\" >> "+b.composeMark+"\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return b
}

// kubeRun is one `up` of the profile on the bed: its options, the OCE API stand-in behind the
// proxy's published port, and what the run left in its log and progress.
type kubeRun struct {
	opts   occdev.UpOptions
	api    *oceapi.API
	exec   *oceapi.Exec
	log    *syncbuf.Buffer
	events *eventLog
	// provision starts the worker's stand-in once the cluster exists (from AfterStep).
	provisionOnce sync.Once
	provisionErr  chan error
}

// eventLog keeps every progress event as text.
type eventLog struct {
	mu    sync.Mutex
	lines []string
}

func (e *eventLog) sink(ev progress.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	line := fmt.Sprintf("%v %s [%s] %s %v", ev.Kind, ev.Step, ev.Lane, ev.Message, ev.Elapsed.Round(time.Millisecond))
	if ev.Err != nil {
		line += " error: " + ev.Err.Error()
	}
	e.lines = append(e.lines, line)
}

func (e *eventLog) String() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return strings.Join(e.lines, "\n")
}

// run prepares one `up` of the Kubernetes-only profile: a fresh cluster name and state
// directory, the stand-in OCE API (with canary secrets) published at a free loopback port that
// k3d maps to the proxy's NodePort, and exec through the stand-in.
func (b *kubeBed) run(t testing.TB, apiOpts oceapi.Options) *kubeRun {
	t.Helper()
	port := freeLoopbackPort(t)
	api := oceapi.Start(t, apiOpts)
	r := &kubeRun{api: api, exec: api.Exec(), log: &syncbuf.Buffer{}, events: &eventLog{}, provisionErr: make(chan error, 1)}
	r.opts = b.options(t)
	r.opts.OCE.Repository = b.checkout
	// The Dockerfiles' own bases are Docker Hub digests; the bed serves its stand-ins instead,
	// through the overrides a developer with a registry mirror would set.
	r.opts.OCE.NodeBaseImage, r.opts.OCE.NodeRuntimeBaseImage = b.nodeBase, b.nodeRuntimeBase
	r.opts.OCE.Images = b.selected
	r.opts.Settings = kubernetesSettings(occdev.KubernetesOptions{DevPort: port})
	seams := r.opts.Seams()
	seams.BuildNetwork = "none"
	seams.Exec = r.exec
	seams.APIClient = api.Client(fmt.Sprintf("127.0.0.1:%d", port))
	seams.Random = &testbed.CanaryRandom{}
	r.opts.Progress = r.events.sink
	r.opts.Log = r.log
	return r
}

// startWorker starts the worker's stand-in once the chart is installed: it provisions the
// bootstrap Namespace when the worker Deployment is ready.
func (r *kubeRun) startWorker(t testing.TB, kube kubernetes.Interface, namespace string) {
	r.provisionOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		t.Cleanup(cancel)
		go func() { r.provisionErr <- r.api.Provision(ctx, kube, namespace) }()
	})
}

// recordedAccess reads the cluster access the state records.
func recordedAccess(t testing.TB, dir string) cluster.Access {
	t.Helper()
	st, err := state.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	return st.Cluster
}

func kubeClientOf(t testing.TB, access cluster.Access) (kubernetes.Interface, dynamic.Interface, discovery.DiscoveryInterface) {
	t.Helper()
	cfg, err := kubeobj.RESTConfig(access)
	if err != nil {
		t.Fatal(err)
	}
	// Listing every kind meets deprecated ones (Endpoints, ComponentStatus): not news here.
	cfg.WarningHandler = rest.NoWarnings{}
	return kubernetes.NewForConfigOrDie(cfg), dynamic.NewForConfigOrDie(cfg), discovery.NewDiscoveryClientForConfigOrDie(cfg)
}

// liveObject is an object in the cluster that carries a state's ownership label.
type liveObject struct {
	// name is "apiVersion Kind namespace/name" (the form of state.Object.String).
	name      string
	kind      string
	namespace string
	object    string
	owners    []metav1.OwnerReference
	// deleting is set for an object the API server is deleting (it has a deletion timestamp):
	// a Pod whose graceful deletion the kubelet has yet to finish. occ counts such an object as
	// gone (kubeobj's Terminating), and forgets its record once its deletion is accepted.
	deleting bool
}

// ownedObjects lists every object in the cluster that carries owner's ownership label.
func ownedObjects(t *testing.T, access cluster.Access, owner string) []liveObject {
	t.Helper()
	_, dyn, disc := kubeClientOf(t, access)
	lists, err := disc.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		t.Fatal(err)
	}
	var out []liveObject
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, res := range l.APIResources {
			if strings.Contains(res.Name, "/") || !slices.Contains(res.Verbs, "list") || res.Kind == "Event" {
				continue
			}
			items, err := dyn.Resource(gv.WithResource(res.Name)).List(context.Background(), metav1.ListOptions{LabelSelector: occdev.LabelDevState + "=" + owner})
			if err != nil {
				continue
			}
			for _, it := range items.Items {
				o := liveObject{kind: res.Kind, namespace: it.GetNamespace(), object: it.GetName(), owners: it.GetOwnerReferences(), deleting: it.GetDeletionTimestamp() != nil}
				o.name = l.GroupVersion + " " + res.Kind + " " + it.GetName()
				if it.GetNamespace() != "" {
					o.name = l.GroupVersion + " " + res.Kind + " " + it.GetNamespace() + "/" + it.GetName()
				}
				out = append(out, o)
			}
		}
	}
	slices.SortFunc(out, func(a, b liveObject) int { return strings.Compare(a.name, b.name) })
	return out
}

// names are the objects' names.
func names(objs []liveObject) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.name)
	}
	return out
}

// uncovered lists the owned objects `down` would not know of: neither recorded, nor made by a
// controller for an owned object (ownerReferences: a ReplicaSet's Pods, a Service's
// EndpointSlices), nor a Service's Endpoints, nor the storage Secret of a recorded Helm release,
// nor an object being deleted (its record goes once its deletion is accepted). With a k3d cluster `down` removes them all with the cluster anyway; this proves every object a
// step created itself was recorded first.
func uncovered(st state.State, objs []liveObject) []string {
	recorded := map[string]bool{}
	for _, o := range st.Objects {
		recorded[o.String()] = true
	}
	byKindName := map[string]bool{}
	for _, o := range objs {
		byKindName[o.kind+" "+o.namespace+"/"+o.object] = true
	}
	var out []string
	for _, o := range objs {
		switch {
		case recorded[o.name], o.deleting:
		case len(o.owners) > 0 && byKindName[o.owners[0].Kind+" "+o.namespace+"/"+o.owners[0].Name]:
		case o.kind == "Endpoints" && byKindName["Service "+o.namespace+"/"+o.object]:
		case o.kind == "Secret" && strings.HasPrefix(o.object, "sh.helm.release.v1.") && helmRecorded(recorded, o.namespace, o.object):
		default:
			out = append(out, o.name)
		}
	}
	return out
}

func helmRecorded(recorded map[string]bool, namespace, storage string) bool {
	rest := strings.TrimPrefix(storage, "sh.helm.release.v1.")
	if i := strings.LastIndex(rest, ".v"); i > 0 {
		return recorded["Helm release "+namespace+"/"+rest[:i]]
	}
	return false
}

// leftovers is what the engine still holds of a run (k3dBed.leftovers: the cluster's
// containers, networks and volumes, staging tags, the OpenShell images pulled), and the OCE
// images it pulled.
func (b *kubeBed) leftovers(t *testing.T, name string, volumes []string) []string {
	t.Helper()
	out := b.k3dBed.leftovers(t, name, volumes)
	for _, ref := range b.oce {
		if id := b.imageID(t, ref); id != "" {
			out = append(out, "pulled image "+ref+" ("+id+")")
		}
	}
	return out
}

// composeCalled reports what ran the docker compose plugin, if anything did.
func (b *kubeBed) composeCalled() string {
	data, err := os.ReadFile(b.composeMark)
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	return string(data) + fmt.Sprint(err)
}

func dirGone(dir string) bool {
	_, err := os.Stat(dir)
	return errors.Is(err, fs.ErrNotExist)
}
