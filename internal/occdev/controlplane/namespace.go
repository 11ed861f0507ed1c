package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/occdev/step"
)

// The evidence OCC's worker puts on the Kubernetes namespace of an OCC Namespace: the label
// carries the OCC Namespace ID and the annotation
// repeats it, so a namespace someone merely labelled is not mistaken for OCC's.
const (
	NamespaceLabel        = contract.LabelNamespace
	NamespaceIDAnnotation = contract.AnnotationNamespaceID
)

// OCC Namespace status values, as OCC's API reports them.
const (
	NamespaceReady    = "ready"
	NamespaceFailed   = "failed"
	NamespaceDeleting = "deleting"
)

// NamespaceWaitOptions are the inputs of WaitBootstrapNamespace.
type NamespaceWaitOptions struct {
	// Kubernetes is a client for the development cluster.
	Kubernetes kubernetes.Interface
	// APIURL is the OCC origin and Key the verified bootstrap key.
	APIURL string
	Key    *ServiceKey
	// Client is the HTTP client; nil means NewAPIClient(APITimeout).
	Client *http.Client
	// Interval between OCC polls; 0 means one second.
	Interval time.Duration
}

// BootstrapNamespace is the Namespace bootstrap created, once ready.
type BootstrapNamespace struct {
	// ID is the OCC Namespace ID; KubernetesName the namespace that carries it.
	ID             string
	KubernetesName string
}

// BootstrapNamespaceWaits are the dry run's waits of WaitBootstrapNamespace against the OCC
// origin apiURL: the Kubernetes namespace, then the OCC Namespace it names.
func BootstrapNamespaceWaits(apiURL string) []step.Wait {
	return []step.Wait{
		{Kind: "Kubernetes namespace", Name: "labelled " + NamespaceLabel, Ready: "exactly one exists, its annotation " + NamespaceIDAnnotation + " repeating the label"},
		{Kind: "endpoint", Name: "GET " + apiURL + "/namespaces/<id>", Ready: "OCC reports the Namespace " + NamespaceReady + " (" + NamespaceFailed + " and " + NamespaceDeleting + " are final)"},
	}
}

// WaitBootstrapNamespace waits for the Namespace that bootstrap creates to become ready: first,
// by watch, for exactly one Kubernetes namespace labelled openclaw.dev/namespace whose
// annotation openclaw.dev/namespace-id repeats the label; then by polling GET
// /namespaces/<id> with the key until OCC reports it ready. Request errors are retried;
// `failed` and `deleting` are final.
func WaitBootstrapNamespace(ctx context.Context, opts NamespaceWaitOptions) (BootstrapNamespace, error) {
	if opts.Key == nil || opts.Kubernetes == nil {
		return BootstrapNamespace{}, errors.New("wait for bootstrap Namespace: a Kubernetes client and the service key are required")
	}
	origin, err := ParseAPIURL(opts.APIURL)
	if err != nil {
		return BootstrapNamespace{}, fmt.Errorf("wait for bootstrap Namespace: %w", err)
	}
	ns, err := waitNamespaceObject(ctx, opts.Kubernetes)
	if err != nil {
		return BootstrapNamespace{}, err
	}
	client := opts.Client
	if client == nil {
		client = NewAPIClient(APITimeout)
	}
	interval := opts.Interval
	if interval <= 0 {
		interval = time.Second
	}
	call := apiCall{client: client, origin: origin, path: "/namespaces/" + url.PathEscape(ns.ID), key: opts.Key.secret}
	err = poll(ctx, interval, func() error {
		data, err := call.do(ctx)
		if err != nil {
			return fmt.Errorf("GET /namespaces/%s: %w", ns.ID, err)
		}
		var got struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		}
		if err := json.Unmarshal(data, &got); err != nil || got.ID != ns.ID {
			return &fatalError{errors.New("OCC returned an invalid bootstrap Namespace")}
		}
		switch got.Status {
		case NamespaceReady:
			return nil
		case NamespaceFailed, NamespaceDeleting:
			return &fatalError{fmt.Errorf("bootstrap Namespace entered status %s", got.Status)}
		}
		return fmt.Errorf("bootstrap Namespace %s is %q", ns.ID, got.Status)
	})
	if err != nil {
		return BootstrapNamespace{}, fmt.Errorf("wait for bootstrap Namespace %s: %w", ns.ID, err)
	}
	return ns, nil
}

// waitNamespaceObject watches namespaces carrying NamespaceLabel until exactly one exists.
func waitNamespaceObject(ctx context.Context, c kubernetes.Interface) (BootstrapNamespace, error) {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = NamespaceLabel
			return c.CoreV1().Namespaces().List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = NamespaceLabel
			return c.CoreV1().Namespaces().Watch(ctx, o)
		},
	}
	var store cache.Store
	var found BootstrapNamespace
	// The condition looks at the whole synced store, not the single event: "exactly one" is a
	// property of the set.
	check := func() (bool, error) {
		items := store.List()
		switch {
		case len(items) == 0:
			return false, nil
		case len(items) > 1:
			return false, errors.New("development requires exactly one bootstrap Namespace")
		}
		ns := items[0].(*corev1.Namespace)
		id := ns.Labels[NamespaceLabel]
		if id == "" || ns.Annotations[NamespaceIDAnnotation] != id {
			return false, errors.New("bootstrap Namespace is missing OCC ownership evidence")
		}
		found = BootstrapNamespace{ID: id, KubernetesName: ns.Name}
		return true, nil
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Namespace{},
		func(s cache.Store) (bool, error) { store = s; return check() },
		func(watch.Event) (bool, error) { return check() })
	if err != nil {
		if ctx.Err() != nil {
			return BootstrapNamespace{}, fmt.Errorf("wait for bootstrap Namespace: %w", &ReadinessTimeoutError{Cause: ctx.Err(), Last: "no Kubernetes namespace labelled " + NamespaceLabel + " yet"})
		}
		return BootstrapNamespace{}, fmt.Errorf("wait for bootstrap Namespace: %w", err)
	}
	return found, nil
}
