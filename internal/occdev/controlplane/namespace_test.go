package controlplane

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/openclaw/occ/internal/testbed"
)

func TestMain(m *testing.M) { os.Exit(testbed.Run(m)) }

// occNamespaces answers GET /namespaces/<id> with the key, with a status the test moves on.
type occNamespaces struct {
	*httptest.Server
	mu     sync.Mutex
	status map[string]string
	// wrongID makes the answer carry another ID.
	wrongID bool
	// served receives each status answered, when set.
	served chan string
}

func newOCCNamespaces(t *testing.T, key string) *occNamespaces {
	o := &occNamespaces{status: map[string]string{}}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(ServiceKeyHeader) != key {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"code":"UNAUTHENTICATED","message":"no"}}`))
			return
		}
		id := strings.TrimPrefix(r.URL.Path, "/namespaces/")
		o.mu.Lock()
		st, ok := o.status[id]
		if o.wrongID {
			id = "ns_someone_else"
		}
		served := o.served
		o.mu.Unlock()
		if served != nil && ok {
			select {
			case served <- st:
			default:
			}
		}
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":{"code":"NOT_FOUND","message":"The Namespace was not found."}}`))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"data": map[string]string{"id": id, "name": "default", "status": st}, "meta": map[string]string{"requestId": "r"}})
	}))
	t.Cleanup(o.Close)
	return o
}

func (o *occNamespaces) set(id, status string) {
	o.mu.Lock()
	o.status[id] = status
	o.mu.Unlock()
}

// bootstrapNamespace creates a Kubernetes namespace with OCC's evidence for id; annotation ""
// leaves the annotation out.
func bootstrapNamespace(t *testing.T, c kubernetes.Interface, name, id, annotation string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{NamespaceLabel: id}}}
	if annotation != "" {
		ns.Annotations = map[string]string{NamespaceIDAnnotation: annotation}
	}
	if _, err := c.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// The worker provisions the bootstrap Namespace while occ waits: the Kubernetes namespace with
// OCC's label and annotation appears (seen by watch), OCC reports it provisioning, then ready.
// The namespace tests share one apiserver and run one after another, since "exactly one
// labelled namespace" is a property of the whole cluster.
func TestWaitBootstrapNamespace(t *testing.T) {
	c := testbed.Client(t)
	key, _ := ParseServiceKey([]byte(keyJSON("ins_a", canary)))
	occ := newOCCNamespaces(t, canary)
	const id = "ns_4f6c"
	occ.set(id, "provisioning")

	t.Run("ready", func(t *testing.T) {
		done := make(chan struct{})
		var got BootstrapNamespace
		var err error
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		go func() {
			defer close(done)
			got, err = WaitBootstrapNamespace(ctx, NamespaceWaitOptions{Kubernetes: c, APIURL: occ.URL, Key: key, Interval: 20 * time.Millisecond})
		}()
		served := make(chan string, 1)
		occ.mu.Lock()
		occ.served = served
		occ.mu.Unlock()
		bootstrapNamespace(t, c, "oce-ready-4f6c", id, id)
		// Once OCC has answered "provisioning", the wait must still be waiting.
		select {
		case st := <-served:
			if st != "provisioning" {
				t.Fatalf("served %q", st)
			}
		case <-ctx.Done():
			t.Fatal("the wait never asked OCC")
		}
		select {
		case <-done:
			t.Fatalf("returned while OCC reports provisioning: %+v %v", got, err)
		default:
		}
		occ.mu.Lock()
		occ.served = nil
		occ.mu.Unlock()
		occ.set(id, NamespaceReady)
		<-done
		if err != nil || got != (BootstrapNamespace{ID: id, KubernetesName: "oce-ready-4f6c"}) {
			t.Fatalf("%+v %v", got, err)
		}
	})

	for _, c2 := range []struct {
		name  string
		setup func(t *testing.T)
		want  string
	}{
		{"failed", func(t *testing.T) { occ.set(id, NamespaceFailed); bootstrapNamespace(t, c, "oce-failed-4f6c", id, id) }, "bootstrap Namespace entered status failed"},
		{"wrong ID from OCC", func(t *testing.T) {
			occ.set(id, NamespaceReady)
			occ.mu.Lock()
			occ.wrongID = true
			occ.mu.Unlock()
			t.Cleanup(func() { occ.mu.Lock(); occ.wrongID = false; occ.mu.Unlock() })
			bootstrapNamespace(t, c, "oce-wrongid-4f6c", id, id)
		}, "OCC returned an invalid bootstrap Namespace"},
		{"no ownership evidence", func(t *testing.T) { bootstrapNamespace(t, c, "oce-noannot-4f6c", id, "") }, "bootstrap Namespace is missing OCC ownership evidence"},
		{"two namespaces", func(t *testing.T) {
			bootstrapNamespace(t, c, "oce-one-4f6c", id, id)
			bootstrapNamespace(t, c, "oce-two-4f6c", "ns_other", "ns_other")
		}, "development requires exactly one bootstrap Namespace"},
	} {
		t.Run(c2.name, func(t *testing.T) {
			waitNoLabelled(t, c)
			c2.setup(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			_, err := WaitBootstrapNamespace(ctx, NamespaceWaitOptions{Kubernetes: c, APIURL: occ.URL, Key: key, Interval: 20 * time.Millisecond})
			if err == nil || !strings.Contains(err.Error(), c2.want) {
				t.Fatalf("got %v, want %q", err, c2.want)
			}
			noCanary(t, err.Error())
		})
	}

	t.Run("timeout", func(t *testing.T) {
		waitNoLabelled(t, c)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := WaitBootstrapNamespace(ctx, NamespaceWaitOptions{Kubernetes: c, APIURL: occ.URL, Key: key})
		if err == nil || !strings.Contains(err.Error(), "development readiness: context deadline exceeded") {
			t.Fatalf("got %v", err)
		}
	})
}

// waitNoLabelled waits until the namespaces of earlier subtests are gone. envtest has no
// namespace controller, so a deleted namespace stays Terminating; its finalizer is removed here
// (the job kube-controller-manager does), which lets the apiserver delete it.
func waitNoLabelled(t *testing.T, c kubernetes.Interface) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		list, err := c.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: NamespaceLabel})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) == 0 {
			return
		}
		for _, ns := range list.Items {
			_ = c.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
			ns.Spec.Finalizers = nil
			_, _ = c.CoreV1().Namespaces().Finalize(ctx, &ns, metav1.UpdateOptions{})
		}
		w, err := c.CoreV1().Namespaces().Watch(ctx, metav1.ListOptions{LabelSelector: NamespaceLabel, ResourceVersion: list.ResourceVersion})
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-w.ResultChan():
		case <-ctx.Done():
			t.Fatal("labelled namespaces of earlier subtests did not go away")
		}
		w.Stop()
	}
}
