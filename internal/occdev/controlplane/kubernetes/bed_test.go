package kubernetes

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"helm.sh/helm/v3/pkg/action"

	"github.com/openclaw/occ/internal/kube"
	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/helmrelease"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
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
// running the workload controllers and a played kubelet. Objects are created through the flow's
// own recording connection (kubeobj.Conn) into a real state directory.
type bed struct {
	t          *testing.T
	ns         string
	client     clientset.Interface
	config     *rest.Config
	kubeconfig string
	access     cluster.Access
	dir        *state.Dir
	history    *history
	conn       *kubeobj.Conn
	own        Ownership
	kubelet    *playedKubelet
}

func newBed(t *testing.T) *bed {
	t.Helper()
	testbed.ControllerManager(t)
	b := &bed{t: t, ns: "oce-" + suffix(t), client: testbed.Client(t), config: testbed.Config(t), kubeconfig: testbed.Kubeconfig(t)}
	raw, err := clientcmd.LoadFromFile(b.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	b.access = cluster.Access{Provider: "existing", Kubeconfig: b.kubeconfig, Context: raw.CurrentContext}
	b.dir, b.history, b.conn = b.connect()
	b.own = OwnershipOf(b.conn)
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
	b.kubelet = playKubelet(t, b.client, b.ns)
	return b
}

// connect claims a fresh state directory and opens the recording connection of a development
// state on the bed's apiserver (another state, for another owner, when called again).
func (b *bed) connect() (*state.Dir, *history, *kubeobj.Conn) {
	b.t.Helper()
	d, err := state.Create(filepath.Join(b.t.TempDir(), "state"), state.State{Profile: "kubernetes", Cluster: b.access})
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { _ = d.Close() })
	h := &history{Dir: d}
	c, err := kubeobj.Connect(b.access, kubeobj.Options{Owner: d.State().Owner(), Recorder: h})
	if err != nil {
		b.t.Fatal(err)
	}
	return d, h, c
}

// history is the state directory's Recorder that also remembers every record and forget, so a
// test can see that something was recorded before it existed even after it was forgotten.
type history struct {
	*state.Dir
	mu     sync.Mutex
	events []string
}

func (h *history) Record(o state.Object) error {
	h.mu.Lock()
	h.events = append(h.events, "record "+o.String())
	h.mu.Unlock()
	return h.Dir.Record(o)
}

func (h *history) Forget(o state.Object) error {
	h.mu.Lock()
	h.events = append(h.events, "forget "+o.String())
	h.mu.Unlock()
	return h.Dir.Forget(o)
}

func (h *history) list() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.events...)
}

// helm is a RESTClientGetter for the bed's kubeconfig, for the tests' own reads of releases.
func (b *bed) helm() genericclioptions.RESTClientGetter {
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &b.kubeconfig
	flags.Namespace = &b.ns
	return flags
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

// ensure creates obj through the recording connection, as a step does.
func (b *bed) ensure(obj runtime.Object) {
	b.t.Helper()
	if _, err := b.conn.Ensure(context.Background(), obj, kubeobj.Converge); err != nil {
		b.t.Fatal(err)
	}
}

// recorded reports whether the state records the Kubernetes object.
func (b *bed) recorded(kind, namespace, name string) bool {
	for _, o := range b.dir.State().Objects {
		if o.Type == kubeobj.TypeObject && o.Kind == kind && o.Namespace == namespace && o.Name == name {
			return true
		}
	}
	return false
}

// recordedRelease reports whether the Helm release record is there.
func (b *bed) recordedRelease(namespace, name string) bool {
	want := helmrelease.Record(namespace, name).String()
	for _, o := range b.dir.State().Objects {
		if o.String() == want {
			return true
		}
	}
	return false
}

// stateJSON is state.json as written to disk.
func (b *bed) stateJSON(t *testing.T) string {
	data, err := os.ReadFile(filepath.Join(b.dir.Path(), state.FileName))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
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
