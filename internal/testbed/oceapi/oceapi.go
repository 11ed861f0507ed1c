// Package oceapi stands in, in the test process, for the parts of the OpenClaw Enterprise (OCE)
// control plane that the Kubernetes-only profile of `occ dev up` reaches where the Docker + k3d
// test bed cannot route: the OCE API behind the development proxy (the bed has no kube-proxy,
// so NodePort 30080 answers nothing), the bootstrap output read through exec in the reader Pod
// (the bed's kubelet is played and runs no container), and the worker's provisioning of the
// bootstrap Namespace. Only tests import it; README.md says what it stands in for and what it
// does not do.
package oceapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/openclaw/occ/internal/contract"
)

// The bootstrap output's file names and directory (the chart's defaults).
const (
	BootstrapDir    = "/var/lib/openclaw/bootstrap"
	PasswordFile    = BootstrapDir + "/initial-admin-password"
	ServiceKeyFile  = BootstrapDir + "/initial-admin-service-key.json"
	namespaceLabel  = contract.LabelNamespace
	namespaceIDNote = contract.AnnotationNamespaceID
)

// API is one stand-in OCE installation: its Installation, the bootstrap key and administrator
// password its bootstrap Job wrote, and its bootstrap Namespace.
type API struct {
	// Key is the service key's secret (data.key); InstallationID its meta.installationId.
	Key            string
	InstallationID string
	// Password is the administrator password in the bootstrap volume.
	Password string
	// NamespaceID is the bootstrap Namespace's OCC ID.
	NamespaceID string

	srv *httptest.Server

	mu          sync.Mutex
	requests    []string
	provisioned bool
	keyFile     []byte
}

// Options choose the stand-in's secrets; empty fields get random canary-shaped values.
type Options struct {
	Key, Password string
}

func random(t testing.TB, prefix string) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return prefix + hex.EncodeToString(b)
}

// Start serves a stand-in API until the test ends.
func Start(t testing.TB, o Options) *API {
	t.Helper()
	a := &API{Key: o.Key, Password: o.Password,
		InstallationID: "ins_" + random(t, ""), NamespaceID: "ns_" + random(t, "")}
	if a.Key == "" {
		a.Key = random(t, "occ_sk_")
	}
	if a.Password == "" {
		a.Password = random(t, "pw-")
	}
	key, err := json.Marshal(map[string]any{
		"data": map[string]any{"id": "sk_" + random(t, ""), "servicePrincipalId": "sp_" + random(t, ""), "name": "Initial administrator", "expiresAt": nil, "key": a.Key},
		"meta": map[string]any{"installationId": a.InstallationID},
	})
	if err != nil {
		t.Fatal(err)
	}
	a.keyFile = key
	a.srv = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.srv.Close)
	return a
}

// KeyFile is the service key file exactly as the bootstrap Job wrote it.
func (a *API) KeyFile() []byte { return append([]byte(nil), a.keyFile...) }

// Requests lists the requests served, as "METHOD PATH STATUS".
func (a *API) Requests() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.requests...)
}

func (a *API) reply(w http.ResponseWriter, r *http.Request, status int, body any) {
	a.mu.Lock()
	a.requests = append(a.requests, fmt.Sprintf("%s %s %d", r.Method, r.URL.Path, status))
	a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func apiError(code, message string) map[string]any {
	return map[string]any{"error": map[string]any{"code": code, "message": message}}
}

// serve answers what `occ dev up` calls, with OCC's rules: the session anonymously, the rest
// only with the service key in x-api-key (a bearer header is refused, as OCC refuses it).
func (a *API) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		a.reply(w, r, http.StatusMethodNotAllowed, apiError("METHOD_NOT_ALLOWED", "only GET is served"))
		return
	}
	if r.URL.Path == "/api/auth/session" {
		a.reply(w, r, http.StatusOK, map[string]any{"data": nil, "meta": map[string]any{}})
		return
	}
	if r.Header.Get("Authorization") != "" {
		a.reply(w, r, http.StatusUnauthorized, apiError("UNAUTHENTICATED", "Controller API bearer authentication is disabled."))
		return
	}
	if r.Header.Get("x-api-key") != a.Key {
		a.reply(w, r, http.StatusUnauthorized, apiError("UNAUTHENTICATED", "Authentication required."))
		return
	}
	switch {
	case r.URL.Path == "/installation":
		a.reply(w, r, http.StatusOK, map[string]any{"data": map[string]any{"id": a.InstallationID, "name": "Kubernetes development"}, "meta": map[string]any{}})
	case r.URL.Path == "/namespaces/"+a.NamespaceID:
		a.mu.Lock()
		status := "provisioning"
		if a.provisioned {
			status = "ready"
		}
		a.mu.Unlock()
		a.reply(w, r, http.StatusOK, map[string]any{"data": map[string]any{"id": a.NamespaceID, "name": "default", "status": status}, "meta": map[string]any{}})
	default:
		a.reply(w, r, http.StatusNotFound, apiError("NOT_FOUND", "no stand-in route"))
	}
}

// Client is an HTTP client for the API at its published address: connections to publishedAddr
// (the proxy's 127.0.0.1:<port>, where k3d publishes NodePort 30080) are carried to the
// stand-in, and any other address is refused, so a request proves it was sent to the proxy's
// address. Like OCC's own client it never follows redirects.
func (a *API) Client(publishedAddr string) *http.Client {
	target := a.srv.Listener.Addr().String()
	dialer := &net.Dialer{Timeout: 5 * time.Second}
	return &http.Client{
		Timeout: 15 * time.Second,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				if addr != publishedAddr {
					return nil, fmt.Errorf("oceapi: no route to %s (only the published API %s is routed to the stand-in)", addr, publishedAddr)
				}
				return dialer.DialContext(ctx, network, target)
			},
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Exec stands in for exec in the reader Pod: `node -e <script> <file>` prints the file of the
// bootstrap volume. It has the method set of the profile's PodExec.
type Exec struct {
	api *API
	mu  sync.Mutex
	// Calls are the files read, with the Pod and container they were read in.
	calls []string
}

// Exec returns the stand-in exec of the bootstrap volume.
func (a *API) Exec() *Exec { return &Exec{api: a} }

// Exec answers the read of a bootstrap file; anything else fails like a missing file does.
func (e *Exec) Exec(_ context.Context, namespace, pod, container string, command []string, limit int64) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(command) != 4 || command[0] != "node" || command[1] != "-e" || !strings.Contains(command[2], "readFileSync(process.argv[1])") {
		return nil, fmt.Errorf("oceapi: exec in %s/%s container %s: command terminated with exit code 1 (the stand-in only reads bootstrap files)", namespace, pod, container)
	}
	e.calls = append(e.calls, namespace+"/"+pod+"/"+container+" "+command[3])
	var body []byte
	switch command[3] {
	case PasswordFile:
		body = []byte(e.api.Password)
	case ServiceKeyFile:
		body = e.api.KeyFile()
	default:
		return nil, fmt.Errorf("oceapi: command terminated with exit code 1: ENOENT: no such file or directory, open '%s'", command[3])
	}
	if int64(len(body)) > limit {
		return nil, errors.New("oceapi: output exceeds the limit")
	}
	return body, nil
}

// Calls lists the reads served.
func (e *Exec) Calls() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.calls...)
}

// Provision plays OCE's worker: once its Deployment (openclaw-enterprise-worker in namespace)
// has a ready replica, it creates the Kubernetes namespace of the bootstrap Namespace with the
// label and annotation the worker writes, and from then on the API reports the Namespace ready.
// It runs until it has done so or ctx ends; the namespace is named so it cannot clash across
// tests.
func (a *API) Provision(ctx context.Context, kube kubernetes.Interface, namespace string) error {
	sel := fields.OneTermEqualSelector("metadata.name", "openclaw-enterprise-worker").String()
	deps := kube.AppsV1().Deployments(namespace)
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return deps.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return deps.Watch(ctx, o)
		},
	}
	if _, err := watchtools.UntilWithSync(ctx, lw, &appsv1.Deployment{}, nil, func(ev watch.Event) (bool, error) {
		d, ok := ev.Object.(*appsv1.Deployment)
		return ok && ev.Type != watch.Deleted && d.Status.ReadyReplicas > 0, nil
	}); err != nil {
		return fmt.Errorf("oceapi: wait for the worker Deployment: %w", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:        "oce-" + strings.ToLower(a.NamespaceID[len(a.NamespaceID)-15:]),
		Labels:      map[string]string{namespaceLabel: a.NamespaceID},
		Annotations: map[string]string{namespaceIDNote: a.NamespaceID},
	}}
	if _, err := kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("oceapi: create the bootstrap Namespace's namespace: %w", err)
	}
	a.mu.Lock()
	a.provisioned = true
	a.mu.Unlock()
	return nil
}
