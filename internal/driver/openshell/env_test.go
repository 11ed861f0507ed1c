package openshell

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/gateway"
	"github.com/openclaw/occ/internal/gateway/emulator"
	"github.com/openclaw/occ/internal/installation"
	"github.com/openclaw/occ/internal/kube"
	"github.com/openclaw/occ/internal/testbed"
)

// testRetry keeps the client's retries of transient failures short in tests.
var testRetry = gateway.RetryPolicy{InitialBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, MaxAttempts: 4}

// envSeq makes every env's namespace unique, even several in one test: the test bed has no
// namespace controller, so a deleted namespace never goes away.
var envSeq atomic.Int64

func TestMain(m *testing.M) { os.Exit(testbed.Run(m)) }

// countingTransport counts the driver's Kubernetes API requests, split into reads and writes,
// so tests can prove "no Kubernetes mutation" and benchmarks can report requests per operation.
type countingTransport struct {
	reads, writes atomic.Int64
	mu            sync.Mutex
	log           []string
}

// countedRoundTripper is one client's transport reporting to a shared countingTransport.
type countedRoundTripper struct {
	next    http.RoundTripper
	counter *countingTransport
}

func (rt countedRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	rt.counter.count(r)
	return rt.next.RoundTrip(r)
}

func (c *countingTransport) count(r *http.Request) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		c.reads.Add(1)
	default:
		c.writes.Add(1)
	}
	c.mu.Lock()
	c.log = append(c.log, r.Method+" "+r.URL.Path)
	c.mu.Unlock()
}

func (c *countingTransport) total() int64 { return c.reads.Load() + c.writes.Load() }

func (c *countingTransport) reset() {
	c.reads.Store(0)
	c.writes.Store(0)
	c.mu.Lock()
	c.log = nil
	c.mu.Unlock()
}

// env is one test's world: the real apiserver, the gateway emulator backed by it, a gateway
// client, and Compute's clients wrapped in a counting transport.
type env struct {
	t       testing.TB
	ctx     context.Context
	admin   kubernetes.Interface // unwrapped, for the test's own setup and checks
	kube    kubernetes.Interface // Compute's client as the driver sees it (counted)
	objects *kube.Applier
	counter *countingTransport
	gw      *emulator.Server
	client  *gateway.Client
	ns      driver.Namespace
}

type envOptions struct {
	gateway emulator.Options
	config  func(*installation.SandboxConfiguration)
}

// newEnv starts an emulator and prepares a tenant namespace the way Kubernetes Compute does
// (name oce-<15 hex>, OCC ownership labels), unique to the test.
func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	cfg := rest.CopyConfig(testbed.Config(t))
	counter := &countingTransport{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countedRoundTripper{next: rt, counter: counter} })
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	objects, err := kube.NewApplier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	admin := testbed.Client(t)
	gopts := o.gateway
	gopts.Kube = admin
	srv := emulator.StartT(t, gopts)
	client, err := gateway.Dial(ctx, gateway.Config{Endpoint: "http://" + srv.Addr(), InsecureTransport: gateway.InsecureTransportNetworkPolicy, Retry: testRetry})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })

	// The real apiserver admits a Pod only if its RuntimeClass exists; the fixture names
	// openshell-sandbox, which a real installation provides.
	_, err = admin.NodeV1().RuntimeClasses().Create(ctx, &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "openshell-sandbox"}, Handler: "runsc"}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}

	e := &env{t: t, ctx: ctx, admin: admin, kube: kc, objects: objects, counter: counter, gw: srv, client: client}
	e.ns = e.extraNamespace()
	return e
}

// extraNamespace creates another tenant namespace the way Compute does and returns it.
func (e *env) extraNamespace() driver.Namespace {
	e.t.Helper()
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s#%d", e.t.Name(), envSeq.Add(1))))
	h := hex.EncodeToString(sum[:])
	ns := driver.Namespace{ID: "ns_" + h[:10], Name: "oce-" + h[:15]}
	_, err := e.admin.CoreV1().Namespaces().Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name:   ns.Name,
		Labels: map[string]string{driver.LabelManagedBy: driver.ManagedByValue, driver.LabelNamespace: ns.ID},
	}}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create tenant namespace: %v", err)
	}
	return ns
}

// driver builds the OpenShell driver for this env; mutate adjusts the fixture configuration.
func (e *env) driver(mutate func(*installation.SandboxConfiguration)) *Driver {
	e.t.Helper()
	opts := testOptions(e.t, mutate)
	opts.Gateway = e.client
	d, err := New(opts)
	if err != nil {
		e.t.Fatal(err)
	}
	return d
}

func (e *env) nctx() driver.NamespaceContext {
	return driver.NamespaceContext{Namespace: e.ns, Kube: e.kube, Objects: e.objects}
}

// hctx is the fixture revision rebound to this env's Namespace; harness is "codex" or "openclaw".
func (e *env) hctx(harness string) driver.HarnessContext {
	var h driver.HarnessContext
	if harness == driver.HarnessOpenClaw {
		h = openclawContext(e.ns.Name)
	} else {
		h = codexContext(e.ns.Name)
	}
	h.NamespaceContext = e.nctx()
	h.Revision.NamespaceID = e.ns.ID
	h.Requirements.Labels[driver.LabelNamespace] = e.ns.ID
	return h
}

// withRevision gives h another revision ID (and matching labels).
func withRevision(h driver.HarnessContext, revisionID string) driver.HarnessContext {
	h.Revision.ID = revisionID
	labels := map[string]string{}
	for k, v := range h.Requirements.Labels {
		labels[k] = v
	}
	labels[driver.LabelRevision] = revisionID
	h.Requirements.Labels = labels
	return h
}

// mutations returns the journal's mutating calls.
func (e *env) mutations() []emulator.Call { return e.gw.Journal().Mutations() }

// methods lists the journaled method names in order.
func (e *env) methods() []string {
	var out []string
	for _, c := range e.gw.Journal().Calls() {
		out = append(out, c.Method)
	}
	return out
}

// requireNoLeak fails if text, or any request the gateway received, contains secret.
func (e *env) requireNoLeak(secret string, texts ...string) {
	e.t.Helper()
	for _, s := range texts {
		if strings.Contains(s, secret) {
			e.t.Fatalf("secret value leaked into %q", s)
		}
	}
	for _, c := range e.gw.Journal().Calls() {
		b, err := protojson.Marshal(c.Request)
		if err != nil {
			e.t.Fatal(err)
		}
		if strings.Contains(string(b), secret) {
			e.t.Fatalf("secret value reached the gateway in %s: %s", c.Method, b)
		}
	}
}

func saNamed(name string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}
}
