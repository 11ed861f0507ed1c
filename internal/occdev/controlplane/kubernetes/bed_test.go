package kubernetes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"helm.sh/helm/v3/pkg/action"

	"github.com/openclaw/occ/internal/kube"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/testbed"
)

func TestMain(m *testing.M) { os.Exit(testbed.Run(m)) }

// fixtureCheckout is the repository's stand-in OCE checkout (its chart is ours to test with).
const fixtureCheckout = "../../../../testdata/oce-checkout"

func suffix(t testing.TB) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// bed is one isolated environment on the shared apiserver, with the real kube-controller-manager
// running the workload controllers and a played kubelet.
type bed struct {
	t          *testing.T
	ns         string
	client     clientset.Interface
	config     *rest.Config
	kubeconfig string
	own        Ownership
	objects    *recordingObjects
	kubelet    *playedKubelet
}

func newBed(t *testing.T) *bed {
	t.Helper()
	testbed.ControllerManager(t)
	b := &bed{t: t, ns: "oce-" + suffix(t), client: testbed.Client(t), config: testbed.Config(t), kubeconfig: testbed.Kubeconfig(t)}
	b.own = Ownership{Labels: map[string]string{"app.kubernetes.io/managed-by": "occ", "occ.openclaw.dev/dev-state": suffix(t) + suffix(t)}}
	ctx := context.Background()
	if _, err := b.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: b.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// NodePort 30080 is cluster-wide: free it now rather than when the namespace
		// controller gets to the Service, so the next test can publish the proxy again.
		_ = b.client.CoreV1().Services(b.ns).Delete(context.Background(), ProxyService, metav1.DeleteOptions{})
		_ = b.client.CoreV1().Namespaces().Delete(context.Background(), b.ns, metav1.DeleteOptions{})
	})
	dyn, err := dynamic.NewForConfig(b.config)
	if err != nil {
		t.Fatal(err)
	}
	applier, err := kube.NewApplier(b.config)
	if err != nil {
		t.Fatal(err)
	}
	b.objects = &recordingObjects{dyn: dyn, applier: applier, own: b.own}
	b.kubelet = playKubelet(t, b.client, b.ns)
	return b
}

// helm is a RESTClientGetter for the bed's kubeconfig, as the recorded kubeconfig is in `up`.
func (b *bed) helm() genericclioptions.RESTClientGetter {
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &b.kubeconfig
	flags.Namespace = &b.ns
	return flags
}

func (b *bed) cluster() Cluster {
	return Cluster{Client: b.client, Objects: b.objects, Recorder: b.objects, Helm: b.helm()}
}

// uninstallAtEnd removes the release and the cluster-scoped objects when the test ends: the
// chart's ClusterRoles and the tenant bindings have fixed names, so only one release can exist
// on the shared apiserver at a time.
func (b *bed) uninstallAtEnd() {
	b.t.Cleanup(func() {
		cfg := new(action.Configuration)
		if err := cfg.Init(b.helm(), b.ns, "secret", func(string, ...any) {}); err == nil {
			u := action.NewUninstall(cfg)
			u.IgnoreNotFound = true
			u.Wait = false
			if _, err := u.Run(ReleaseName); err != nil {
				b.t.Logf("uninstall %s: %v", ReleaseName, err)
			}
		}
		for _, name := range []string{TenantWorkerBinding, TenantConfigurationBinding, TenantSecretsBinding} {
			_ = b.client.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})
}

// recordingObjects stands in for the dev lifecycle's recorded-object client (being written in
// the layer work) with the same contract, against the real apiserver: it records each object
// before creating it, adopts only on exact ownership labels and converges adopted objects by
// server-side apply. It also notes, for the tests, whether an object already existed when it
// was recorded.
type recordingObjects struct {
	dyn     dynamic.Interface
	applier *kube.Applier
	own     Ownership

	mu      sync.Mutex
	records []state.Object
	removed []string
}

func (r *recordingObjects) Record(o state.Object) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, have := range r.records {
		if have.Kind == o.Kind && have.Namespace == o.Namespace && have.Name == o.Name {
			return nil
		}
	}
	r.records = append(r.records, o)
	return nil
}

func (r *recordingObjects) recorded(kind, namespace, name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range r.records {
		if o.Kind == kind && o.Namespace == namespace && o.Name == name {
			return true
		}
	}
	return false
}

func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	kinds, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil {
		return nil, err
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(kinds[0])
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	return u, nil
}

func (r *recordingObjects) resource(u *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := u.GroupVersionKind()
	m, err := r.applier.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return r.dyn.Resource(m.Resource).Namespace(u.GetNamespace()), nil
	}
	return r.dyn.Resource(m.Resource), nil
}

func (r *recordingObjects) Ensure(ctx context.Context, obj runtime.Object) error {
	u, err := toUnstructured(obj)
	if err != nil {
		return err
	}
	if !r.own.owns(u.GetLabels()) {
		return fmt.Errorf("%s was built without the ownership labels", kube.Describe(u))
	}
	ri, err := r.resource(u)
	if err != nil {
		return err
	}
	live, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{})
	if err == nil {
		if !r.own.owns(live.GetLabels()) {
			return fmt.Errorf("%s already exists and is not owned by this development state", kube.Describe(u))
		}
		_, err = r.applier.Apply(ctx, u)
		return err
	}
	if !apierrors.IsNotFound(err) {
		return err
	}
	ref, err := state.Ref(u)
	if err != nil {
		return err
	}
	if err := r.Record(ref); err != nil {
		return err
	}
	_, err = ri.Create(ctx, u, metav1.CreateOptions{FieldManager: kube.FieldManager})
	return err
}

func (r *recordingObjects) Remove(ctx context.Context, obj runtime.Object) error {
	u, err := toUnstructured(obj)
	if err != nil {
		return err
	}
	ri, err := r.resource(u)
	if err != nil {
		return err
	}
	live, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !r.own.owns(live.GetLabels()) {
		return nil
	}
	uid := live.GetUID()
	if err := ri.Delete(ctx, u.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	r.mu.Lock()
	r.removed = append(r.removed, kube.Describe(u))
	r.mu.Unlock()
	return nil
}

// recordedRelease reports whether the Helm release record is there.
func (r *recordingObjects) recordedRelease(namespace, name string) bool {
	want := state.HelmRelease(namespace, name).String()
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range r.records {
		if o.String() == want {
			return true
		}
	}
	return false
}

func (r *recordingObjects) stateJSON(t *testing.T) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	b, err := json.Marshal(r.records)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// playedKubelet reports Pods of its namespace as a kubelet would once their containers ran:
// Pods of Jobs and the bootstrap prepare Pod finish (Succeeded), every other Pod runs and is
// Ready with an address of its own. Paused, it leaves new Pods pending until resumed.
type playedKubelet struct {
	t      *testing.T
	client clientset.Interface
	ns     string

	mu     sync.Mutex
	paused bool
	fail   map[string]bool // Pod names whose containers exit with an error
	next   int
	seen   map[types.UID]bool
}

func playKubelet(t *testing.T, c clientset.Interface, ns string) *playedKubelet {
	k := &playedKubelet{t: t, client: c, ns: ns, next: 10, seen: map[types.UID]bool{}, fail: map[string]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := c.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		defer w.Stop()
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type == watch.Deleted || ev.Type == watch.Error {
				continue
			}
			k.play(ctx, p)
		}
	}()
	return k
}

// finishes reports whether a kubelet would run p to completion.
func finishes(p *corev1.Pod) bool {
	if p.Name == PreparePod {
		return true
	}
	for _, o := range p.OwnerReferences {
		if o.Kind == "Job" {
			return true
		}
	}
	return false
}

func (k *playedKubelet) play(ctx context.Context, p *corev1.Pod) { k.run(ctx, p, false) }

// start plays p even while the kubelet is paused, for tests that release Pods one by one.
func (k *playedKubelet) start(ctx context.Context, p *corev1.Pod) { k.run(ctx, p, true) }

func (k *playedKubelet) run(ctx context.Context, p *corev1.Pod, force bool) {
	k.mu.Lock()
	if (k.paused && !force) || k.seen[p.UID] || p.DeletionTimestamp != nil {
		k.mu.Unlock()
		return
	}
	k.seen[p.UID] = true
	k.next++
	ip := fmt.Sprintf("10.42.0.%d", k.next)
	failing := k.fail[p.Name]
	k.mu.Unlock()
	for attempt := 0; attempt < 5; attempt++ {
		err := k.report(ctx, p.DeepCopy(), ip, failing)
		if err == nil || ctx.Err() != nil || apierrors.IsNotFound(err) {
			return
		}
		if !apierrors.IsConflict(err) {
			k.t.Errorf("played kubelet: update Pod %s/%s: %v", k.ns, p.Name, err)
			return
		}
		latest, gerr := k.client.CoreV1().Pods(k.ns).Get(ctx, p.Name, metav1.GetOptions{})
		if gerr != nil {
			return
		}
		p = latest
	}
}

// report writes the status a kubelet would report for p.
func (k *playedKubelet) report(ctx context.Context, p *corev1.Pod, ip string, failing bool) error {
	now := metav1.Now()
	p.Status.StartTime = &now
	p.Status.HostIP = "172.28.0.2"
	p.Status.PodIP, p.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	if finishes(p) || failing {
		phase, code, reason := corev1.PodSucceeded, int32(0), "Completed"
		if failing {
			phase, code, reason = corev1.PodFailed, 1, "Error"
		}
		p.Status.Phase = phase
		for _, c := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
				Name: c.Name, Image: c.Image,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, StartedAt: now, FinishedAt: now}},
			})
		}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "PodCompleted", LastTransitionTime: now}}
	} else {
		testbed.SetPodReady(p)
	}
	_, err := k.client.CoreV1().Pods(k.ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	return err
}

// failPod makes the named Pod's containers exit with an error when it starts.
func (k *playedKubelet) failPod(name string) { k.mu.Lock(); k.fail[name] = true; k.mu.Unlock() }

// pause stops the kubelet from starting new Pods; resume plays every Pod left pending.
func (k *playedKubelet) pause() { k.mu.Lock(); k.paused = true; k.mu.Unlock() }

func (k *playedKubelet) resume(ctx context.Context) {
	k.mu.Lock()
	k.paused = false
	k.mu.Unlock()
	pods, err := k.client.CoreV1().Pods(k.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		k.t.Fatal(err)
	}
	for i := range pods.Items {
		k.play(ctx, &pods.Items[i])
	}
}

// waitForPod watches the namespace's Pods until cond holds for one of them.
func (b *bed) waitForPod(ctx context.Context, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	p, err := kube.WaitForPod(ctx, b.client, b.ns, "", cond)
	if err != nil {
		b.t.Fatalf("wait for %s: %v", what, err)
	}
	return p
}

// writeInstallation writes a stand-in Installation file the way the platform step does.
func writeInstallation(t *testing.T) (string, []byte) {
	data := []byte("occ:\n  cluster: occ-dev-test\nbackend: []\ndrivers: {}\n# bytes: exact\n")
	p := filepath.Join(t.TempDir(), "installation.yaml")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p, data
}
