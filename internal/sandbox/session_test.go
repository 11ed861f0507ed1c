package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/compute"
	"github.com/openclaw/occ/internal/driver/openshell"
	"github.com/openclaw/occ/internal/gateway"
	"github.com/openclaw/occ/internal/gateway/emulator"
	"github.com/openclaw/occ/internal/gateway/openshellv1"
	"github.com/openclaw/occ/internal/installation"
	"github.com/openclaw/occ/internal/testbed"
)

func TestMain(m *testing.M) { os.Exit(testbed.Run(m)) }

const repoRoot = "../.."

// devInstallation is the development Installation with the post-create startup delay cut to
// one millisecond: the delay exists for the real gateway's early route, not for the emulator.
func devInstallation(t testing.TB) *installation.Installation {
	t.Helper()
	in, err := installation.Load(filepath.Join(repoRoot, "testdata", "installation", "dev.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	one := int64(1)
	in.Drivers.Sandbox.Configuration.StartupDelayMs = &one
	return in
}

// world is one test's cluster, emulator and session.
type world struct {
	kube kubernetes.Interface
	gw   *emulator.Server
	s    *Session
}

func newWorld(t testing.TB) *world {
	t.Helper()
	return newWorldWith(t, gateway.RetryPolicy{})
}

// newWorldWith builds a world whose gateway client retries transient failures per retry.
func newWorldWith(t testing.TB, retry gateway.RetryPolicy) *world {
	t.Helper()
	kc := testbed.Client(t)
	ensureRuntimeClass(t, kc)
	srv := emulator.StartT(t, emulator.Options{Kube: kc})
	s, err := Connect(context.Background(), devInstallation(t), testbed.Config(t), Options{
		Gateway:      srv.Addr(),
		GatewayRetry: retry,
		PodTimeout:   30 * time.Second,
		Gate:         compute.AttachmentGate{InitialBackoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, Timeout: 30 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return &world{kube: kc, gw: srv, s: s}
}

// ensureRuntimeClass installs the RuntimeClass the Installation names, as an operator installs
// OpenShell's: without it the apiserver refuses every Harness Pod.
func ensureRuntimeClass(t testing.TB, c kubernetes.Interface) {
	t.Helper()
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "openshell-sandbox"}, Handler: "runc"}
	if _, err := c.NodeV1().RuntimeClasses().Create(context.Background(), rc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func loadRevision(t testing.TB, name, namespaceID string) *compute.RevisionFile {
	t.Helper()
	rf, err := compute.LoadRevisionFile(filepath.Join(repoRoot, "testdata", "revisions", name))
	if err != nil {
		t.Fatal(err)
	}
	rf.NamespaceID = namespaceID
	return rf
}

// addCredentialSource creates the provider the Credential Gateway keeps for a credential
// source, the way OCC does when the source is added, holding credential as its secret.
func (w *world) addCredentialSource(t testing.TB, ns driver.Namespace, sourceID, credential string) {
	t.Helper()
	_, err := w.s.Gateway.CreateProvider(context.Background(), ns.Name, gateway.ProviderSpec{
		Name:        openshell.CredentialProviderName(sourceID),
		Labels:      openshell.CredentialProviderLabels(ns.ID, sourceID),
		Type:        "openai",
		Credentials: gateway.Secrets{"OPENAI_API_KEY": credential},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func (w *world) removeCredentialSource(t testing.TB, ns driver.Namespace, sourceID string) {
	t.Helper()
	if _, err := w.s.Gateway.DeleteProvider(context.Background(), ns.Name, openshell.CredentialProviderName(sourceID)); err != nil {
		t.Fatal(err)
	}
}

// An operator re-runs namespace preparation three times against the real driver: one
// Workspace, the same baseline objects, the driver's namespace label kept, and no mutating RPC
// after the first run.
func TestPrepareNamespaceWithOpenShellThreeTimes(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	var versions []string
	for i := range 3 {
		ns, err := w.s.Compute.PrepareNamespace(ctx, "ns_session_three")
		if err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		live, err := w.kube.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if live.Labels["openshell.ai/openclaw-workspace"] != "true" || live.Labels[driver.LabelNamespace] != "ns_session_three" {
			t.Fatalf("run %d: namespace labels %v", i+1, live.Labels)
		}
		var rv []string
		for _, n := range []string{compute.DenyIngressNetworkPolicyName, compute.DenyEgressNetworkPolicyName, "allow-openshell-sandbox-callback", "openshell-workspace-gateway"} {
			np, err := w.kube.NetworkingV1().NetworkPolicies(ns.Name).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("run %d: NetworkPolicy %s: %v", i+1, n, err)
			}
			rv = append(rv, np.ResourceVersion)
		}
		versions = append(versions, strings.Join(rv, ","))
		if i == 0 {
			w.gw.Journal().Reset()
		}
	}
	if versions[1] != versions[0] || versions[2] != versions[0] {
		t.Fatalf("NetworkPolicies changed across runs: %v", versions)
	}
	if m := w.gw.Journal().Mutations(); len(m) != 0 {
		t.Fatalf("runs 2 and 3 made %d mutating RPCs (first: %s)", len(m), m[0].Method)
	}
	if n := len(w.gw.Journal().Method("GetWorkspace")); n != 2 {
		t.Fatalf("GetWorkspace calls in runs 2 and 3 = %d, want 2", n)
	}
}

// The Workspace deletion fails at the gateway (it is unavailable for every attempt of the
// client): the Kubernetes namespace is kept. Retried later, the cleanup succeeds and only then
// is the namespace deleted.
func TestNamespaceDeletionAfterGatewayFaultIsRetried(t *testing.T) {
	ctx := context.Background()
	retry := gateway.RetryPolicy{InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, MaxAttempts: 3}
	w := newWorldWith(t, retry)
	ns, err := w.s.Compute.PrepareNamespace(ctx, "ns_session_fault")
	if err != nil {
		t.Fatal(err)
	}
	w.gw.Inject(emulator.Fault{Method: "DeleteWorkspace", Kind: emulator.FaultUnavailable, Count: retry.MaxAttempts})
	if _, err := w.s.Compute.DeleteNamespace(ctx, ns.ID); err == nil || !strings.Contains(err.Error(), "is kept so the cleanup can be retried") {
		t.Fatalf("first deletion: err = %v", err)
	}
	live, err := w.kube.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
	if err != nil || live.DeletionTimestamp != nil {
		t.Fatalf("namespace after failed cleanup: err=%v deleting=%v; want it kept", err, live.DeletionTimestamp)
	}
	if _, err := w.s.Gateway.GetWorkspace(ctx, ns.Name); err != nil {
		t.Fatalf("Workspace after the failed cleanup: %v", err)
	}

	res, err := w.s.Compute.DeleteNamespace(ctx, ns.ID)
	if err != nil || !res.Deleted {
		t.Fatalf("retried deletion: %+v %v", res, err)
	}
	live, err = w.kube.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
	if err == nil && live.DeletionTimestamp == nil {
		t.Fatal("namespace not deleted after the successful retry")
	}
	if _, err := w.s.Gateway.GetWorkspace(ctx, ns.Name); !gateway.IsNotFound(err) {
		t.Fatalf("Workspace after the retry: %v, want NOT_FOUND", err)
	}
	// The namespace deletion comes after the Workspace deletion in time.
	var order []string
	for _, c := range w.gw.Journal().Calls() {
		if c.Method == "DeleteWorkspace" {
			order = append(order, c.Code.String())
		}
	}
	if order[len(order)-1] != codes.OK.String() {
		t.Fatalf("DeleteWorkspace outcomes = %v", order)
	}
}

// The Harness Pod disappeared (node loss, manual deletion) before the revision is retired:
// cleanup still finds the Sandbox by its derived identity and removes it, and a second cleanup
// is a no-op success.
func TestRevisionCleanupAfterHarnessPodIsGone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w := newWorld(t)
	rf := loadRevision(t, "codex.yaml", "ns_session_podgone")
	ns, _ := compute.ResolveNamespace(rf.NamespaceID)
	testbed.PlayKubelet(ctx, t, w.kube, ns.Name)
	if _, err := w.s.Compute.PrepareNamespace(ctx, ns.ID); err != nil {
		t.Fatal(err)
	}
	w.addCredentialSource(t, ns, "cs_openai_default", "sk-canary-not-used-here")
	res, err := w.s.Compute.Provision(ctx, rf)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.kube.CoreV1().Pods(ns.Name).Delete(ctx, res.Pod, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w.gw.Journal().Reset()
	for i := range 2 {
		if err := w.s.Compute.ShutdownRevision(ctx, rf); err != nil {
			t.Fatalf("cleanup %d: %v", i+1, err)
		}
	}
	if _, err := w.s.Gateway.GetSandbox(ctx, ns.Name, res.Ref.ResourceName); !gateway.IsNotFound(err) {
		t.Fatalf("Sandbox after cleanup: %v, want NOT_FOUND", err)
	}
	if n := len(w.gw.Journal().Method("DeleteSandbox")); n != 2 {
		t.Fatalf("DeleteSandbox calls = %d, want one per cleanup", n)
	}
}

// A revision whose attachment the supervisor withholds never passes the activation gate.
func TestProvisionStopsAtAWithheldAttachment(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w := newWorld(t)
	rf := loadRevision(t, "codex.yaml", "ns_session_withheld")
	ns, _ := compute.ResolveNamespace(rf.NamespaceID)
	testbed.PlayKubelet(ctx, t, w.kube, ns.Name)
	if _, err := w.s.Compute.PrepareNamespace(ctx, ns.ID); err != nil {
		t.Fatal(err)
	}
	w.addCredentialSource(t, ns, "cs_openai_default", "sk-canary-not-used-here")
	name, _ := openshell.SandboxName("os", rf.RevisionID)
	var once sync.Once
	w.s.Compute.Progress = func(e compute.Event) {
		// As soon as the Sandbox exists, the supervisor reports the credential withheld.
		if e.Kind == compute.StepEnd && e.Step == "driver provisionHarness" && e.Err == nil {
			once.Do(func() {
				if err := w.gw.SetProviderStatus(ns.Name, name, openshell.CredentialProviderName("cs_openai_default"), openshellv1.ProviderReadinessReason_PROVIDER_READINESS_REASON_CREDENTIALS_WITHHELD); err != nil {
					t.Errorf("set provider status: %v", err)
				}
			})
		}
	}
	_, err := w.s.Compute.Provision(ctx, rf)
	if !driver.HasCode(err, driver.CodeCredentialAttachmentFailed) || !strings.Contains(err.Error(), "withheld") {
		t.Fatalf("err = %v, want a withheld attachment refusal", err)
	}
}
