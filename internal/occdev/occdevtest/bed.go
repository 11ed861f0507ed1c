// Package occdevtest prepares isolated `occ dev up` environments on the shared test bed, for the
// tests of occdev and of the occ dev commands.
package occdevtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	"github.com/openclaw/occ/internal/gateway/emulator"
	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/charts/chartstest"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/testbed"
)

// Bed is one isolated `occ dev up` environment on the shared apiserver: a unique platform
// namespace and Agent Sandbox manifest (the bed has no namespace controller, so every run needs
// names of its own), a pinned test archive of the stand-in charts, a private cache and state
// directory, and the gateway emulator for the Health check.
type Bed struct {
	T          *testing.T
	Suffix     string
	Namespace  string
	Kubeconfig string
	Client     kubernetes.Interface
	StateDir   string
	CacheDir   string
	Archive    string
	PinFile    string
	Gateway    *emulator.Server
	Manifest   *httptest.Server
	Downloads  *Counter
	AgentNS    string
}

// Counter counts requests.
type Counter struct {
	mu sync.Mutex
	n  int
}

func (c *Counter) inc() { c.mu.Lock(); c.n++; c.mu.Unlock() }

// Get returns the count.
func (c *Counter) Get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// RandomSuffix is 8 random hex digits for unique names.
func RandomSuffix(t testing.TB) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// Option changes how New prepares a bed.
type Option func(*config)

type config struct{ noKubelet bool }

// WithoutKubelet leaves Deployments and StatefulSets unready, as on a cluster whose nodes cannot
// start the Pods (for readiness-timeout scenarios).
func WithoutKubelet() Option { return func(c *config) { c.noKubelet = true } }

// New prepares a bed: fixture archive and pins (chartstest), a per-run Agent Sandbox manifest
// served over HTTP, the gateway emulator, and a goroutine playing the kubelet.
func New(t *testing.T, opts ...Option) *Bed {
	t.Helper()
	b := &Bed{T: t, Suffix: RandomSuffix(t), Downloads: &Counter{}}
	b.Namespace = "occdev-" + b.Suffix
	b.AgentNS = "agent-sandbox-" + b.Suffix
	b.Kubeconfig = testbed.Kubeconfig(t)
	b.Client = testbed.Client(t)
	b.StateDir = filepath.Join(t.TempDir(), "state")
	b.CacheDir = filepath.Join(t.TempDir(), "cache")

	fixture := chartstest.New(t, t.TempDir(), chartstest.Options{})
	set := fixture.Pins
	b.Archive = fixture.ArchivePath

	manifest := AgentSandboxManifest(b.Suffix)
	sum := sha256.Sum256(manifest)
	b.Manifest = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b.Downloads.inc()
		_, _ = w.Write(manifest)
	}))
	t.Cleanup(b.Manifest.Close)
	set.AgentSandbox.Manifest = pins.Artifact{URL: b.Manifest.URL + "/sandbox.yaml", SHA256: hex.EncodeToString(sum[:])}

	data, err := yaml.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	b.PinFile = filepath.Join(t.TempDir(), "pins.yaml")
	if err := os.WriteFile(b.PinFile, data, 0o600); err != nil {
		t.Fatal(err)
	}

	gw, err := emulator.Start(emulator.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(gw.Close)
	b.Gateway = gw
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	if !cfg.noKubelet {
		StartKubelet(t, b.Client)
	}
	return b
}

// Options are the UpOptions of a normal run in this bed: the existing provider (the bed's
// apiserver) and the Kubernetes-only control plane.
func (b *Bed) Options() occdev.UpOptions {
	return occdev.UpOptions{
		StateDir:        b.StateDir,
		ClusterProvider: occdev.ProviderExisting,
		Kubeconfig:      b.Kubeconfig,
		ControlPlane:    occdev.ControlPlaneKubernetes,
		Namespace:       b.Namespace,
		PinFile:         b.PinFile,
		ArchiveFile:     b.Archive,
		CacheDir:        b.CacheDir,
		GatewayEndpoint: b.Gateway.Addr(),
		StartupTimeout:  30 * time.Second,
		OCCCommand:      "occ",
	}
}

// AgentSandboxManifest is a stand-in for the pinned Agent Sandbox release manifest, with names
// of its own per run: a namespace, a CRD, RBAC and the controller Deployment. The CRD is in the
// real API group agents.x-k8s.io at v1alpha1, which the Gateway chart's Agent Sandbox preflight
// requires, with a kind and plural of the run's own: the runs of one test binary share the
// apiserver, and a CRD is cluster-scoped.
func AgentSandboxManifest(suffix string) []byte {
	return []byte(strings.ReplaceAll(`apiVersion: v1
kind: Namespace
metadata:
  name: agent-sandbox-SUFFIX
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: sandboxesSUFFIX.agents.x-k8s.io
spec:
  group: agents.x-k8s.io
  names: {kind: SandboxSUFFIX, plural: sandboxesSUFFIX, singular: sandboxSUFFIX, listKind: SandboxSUFFIXList}
  scope: Namespaced
  versions:
    - name: v1alpha1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: agent-sandbox-controller
  namespace: agent-sandbox-SUFFIX
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: agent-sandbox-controller-SUFFIX
rules:
  - apiGroups: [agents.x-k8s.io]
    resources: [sandboxesSUFFIX]
    verbs: [get, list, watch, update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: agent-sandbox-controller-SUFFIX
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: agent-sandbox-controller-SUFFIX}
subjects:
  - {kind: ServiceAccount, name: agent-sandbox-controller, namespace: agent-sandbox-SUFFIX}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: agent-sandbox-controller
  namespace: agent-sandbox-SUFFIX
spec:
  replicas: 1
  selector:
    matchLabels: {app: agent-sandbox-controller}
  template:
    metadata:
      labels: {app: agent-sandbox-controller}
    spec:
      serviceAccountName: agent-sandbox-controller
      containers:
        - name: controller
          image: registry.k8s.io/agent-sandbox/controller@sha256:0000000000000000000000000000000000000000000000000000000000000000
`, "SUFFIX", suffix))
}

// StartKubelet plays the kubelet and the workload controllers the bed does not run: every
// Deployment and StatefulSet is reported as fully rolled out and ready, through the status
// subresource, as soon as it appears.
func StartKubelet(t *testing.T, c kubernetes.Interface) {
	ctx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactory(c, 0)
	deployments := factory.Apps().V1().Deployments().Informer()
	statefulsets := factory.Apps().V1().StatefulSets().Informer()
	readyDeployment := func(obj any) {
		d, ok := obj.(*appsv1.Deployment)
		if !ok || (d.Status.ObservedGeneration >= d.Generation && d.Status.AvailableReplicas > 0) {
			return
		}
		d = d.DeepCopy()
		n := int32(1)
		if d.Spec.Replicas != nil {
			n = *d.Spec.Replicas
		}
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}
		_, _ = c.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, d, metav1.UpdateOptions{})
	}
	readyStatefulSet := func(obj any) {
		s, ok := obj.(*appsv1.StatefulSet)
		if !ok || (s.Status.ObservedGeneration >= s.Generation && s.Status.ReadyReplicas > 0) {
			return
		}
		s = s.DeepCopy()
		n := int32(1)
		if s.Spec.Replicas != nil {
			n = *s.Spec.Replicas
		}
		s.Status = appsv1.StatefulSetStatus{ObservedGeneration: s.Generation, Replicas: n, ReadyReplicas: n, CurrentReplicas: n, UpdatedReplicas: n, AvailableReplicas: n}
		_, _ = c.AppsV1().StatefulSets(s.Namespace).UpdateStatus(ctx, s, metav1.UpdateOptions{})
	}
	_, _ = deployments.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: readyDeployment, UpdateFunc: func(_, o any) { readyDeployment(o) }})
	_, _ = statefulsets.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: readyStatefulSet, UpdateFunc: func(_, o any) { readyStatefulSet(o) }})
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	t.Cleanup(func() { cancel(); factory.Shutdown() })
}

// ServeArchive serves the bed's pinned archive over HTTP and writes a pin file that downloads
// it from there, so a test can count downloads; use it with an empty ArchiveFile.
func (b *Bed) ServeArchive() (pinFile string, downloads *Counter) {
	t := b.T
	data, err := os.ReadFile(b.Archive)
	if err != nil {
		t.Fatal(err)
	}
	downloads = &Counter{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		downloads.inc()
		_, _ = w.Write(data)
	}))
	t.Cleanup(srv.Close)
	set, err := pins.Load(b.PinFile)
	if err != nil {
		t.Fatal(err)
	}
	set.OpenShell.SourceArchive.URL = srv.URL + "/openshell.tar.gz"
	out, err := yaml.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	pinFile = filepath.Join(t.TempDir(), "pins-served.yaml")
	if err := os.WriteFile(pinFile, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return pinFile, downloads
}

// DeadServer is an https URL on the loopback interface where nothing listens (a cluster that
// is stopped): connections are refused at once.
func DeadServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return "https://" + addr
}

// PointKubeconfig rewrites every cluster server of the kubeconfig at path to server, in place,
// as a developer's stopped (or moved) cluster would leave it.
func PointKubeconfig(t *testing.T, path, server string) {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server = server
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
}

// CopyKubeconfig copies the bed's kubeconfig to a file of the test's own, so the test may break
// and restore it without touching other tests.
func (b *Bed) CopyKubeconfig() string {
	t := b.T
	data, err := os.ReadFile(b.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
