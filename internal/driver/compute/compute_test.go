package compute

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/kube"
	"github.com/openclaw/occ/internal/testbed"
)

func newCompute(t *testing.T, d driver.Driver) (*Compute, *[]Event) {
	t.Helper()
	var mu sync.Mutex
	events := &[]Event{}
	return &Compute{
		Kube:   testbed.Client(t),
		Driver: d,
		Gate:   AttachmentGate{InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Timeout: 30 * time.Second},
		Progress: func(e Event) {
			mu.Lock()
			defer mu.Unlock()
			*events = append(*events, e)
		},
	}, events
}

// baselineVersions returns the resourceVersion of every baseline object, failing the test if
// the namespace holds anything else of those kinds.
func baselineVersions(ctx context.Context, t *testing.T, c kubernetes.Interface, ns string) map[string]string {
	t.Helper()
	out := map[string]string{}
	qs, err := c.CoreV1().ResourceQuotas(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs.Items {
		out["ResourceQuota/"+q.Name] = q.ResourceVersion
	}
	lrs, err := c.CoreV1().LimitRanges(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lrs.Items {
		out["LimitRange/"+l.Name] = l.ResourceVersion
	}
	nps, err := c.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nps.Items {
		out["NetworkPolicy/"+n.Name] = n.ResourceVersion
		if len(n.Spec.Ingress) != 0 || len(n.Spec.Egress) != 0 || len(n.Spec.PodSelector.MatchLabels) != 0 {
			t.Errorf("NetworkPolicy %s is not default-deny: %+v", n.Name, n.Spec)
		}
	}
	want := []string{"LimitRange/" + LimitRangeName, "NetworkPolicy/" + DenyEgressNetworkPolicyName, "NetworkPolicy/" + DenyIngressNetworkPolicyName, "ResourceQuota/" + ResourceQuotaName}
	var got []string
	for k := range out {
		got = append(got, k)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("baseline objects = %v, want %v", got, want)
	}
	return out
}

// An operator re-runs namespace preparation three times (a retried reconcile): the world is
// the same after each run, the driver runs only after baseline isolation exists, and the
// driver's own namespace label survives Compute's re-runs.
func TestPrepareNamespaceThreeTimesConvergesOnOneWorld(t *testing.T) {
	ctx := context.Background()
	c := testbed.Client(t)
	d := &recordingDriver{labelNamespace: true}
	d.onEnsure = func(ctx context.Context, n driver.NamespaceContext) error {
		// Baseline isolation must already be in place when the driver is called.
		if _, err := n.Kube.NetworkingV1().NetworkPolicies(n.Namespace.Name).Get(ctx, DenyEgressNetworkPolicyName, metav1.GetOptions{}); err != nil {
			return fmt.Errorf("driver called before baseline isolation: %w", err)
		}
		return nil
	}
	comp, _ := newCompute(t, d)

	var first map[string]string
	for i := range 3 {
		ns, err := comp.PrepareNamespace(ctx, "ns_three_times")
		if err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		got := baselineVersions(ctx, t, c, ns.Name)
		if i == 0 {
			first = got
		} else if fmt.Sprint(got) != fmt.Sprint(first) {
			t.Fatalf("run %d changed the baseline objects: %v → %v", i+1, first, got)
		}
		live, err := c.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if live.Labels[driver.LabelManagedBy] != driver.ManagedByValue || live.Labels[driver.LabelNamespace] != "ns_three_times" || live.Annotations[driver.AnnotationNamespaceID] != "ns_three_times" {
			t.Fatalf("run %d: namespace ownership metadata = %v %v", i+1, live.Labels, live.Annotations)
		}
		if live.Labels["openshell.ai/openclaw-workspace"] != "true" {
			t.Fatalf("run %d: the driver's namespace label was stripped: %v", i+1, live.Labels)
		}
	}
	if got := d.Calls(); len(got) != 3 {
		t.Fatalf("driver calls = %v, want three ensureNamespace calls", got)
	}
	q, err := c.CoreV1().ResourceQuotas(mustName(t, "ns_three_times")).Get(ctx, ResourceQuotaName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pods := q.Spec.Hard[corev1.ResourcePods]; pods.String() != "10" {
		t.Fatalf("quota pods = %s, want 10", pods.String())
	}
	if m := q.ManagedFields; len(m) != 1 || m[0].Manager != kube.FieldManager || m[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Fatalf("quota managed fields = %+v, want one apply by %q", m, kube.FieldManager)
	}
}

func mustName(t *testing.T, id string) string {
	t.Helper()
	n, err := PhysicalNamespaceName(id)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A namespace with the derived name already exists but belongs to someone else (or to another
// OCC Namespace): Compute refuses it before applying anything or calling the driver.
func TestPrepareNamespaceRefusesAForeignNamespace(t *testing.T) {
	ctx := context.Background()
	c := testbed.Client(t)
	for _, tc := range []struct {
		id     string
		labels map[string]string
	}{
		{"ns_foreign_plain", nil},
		{"ns_foreign_other", map[string]string{driver.LabelManagedBy: driver.ManagedByValue, driver.LabelNamespace: "ns_someone_else"}},
	} {
		name := mustName(t, tc.id)
		if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: tc.labels}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		d := &recordingDriver{}
		comp, _ := newCompute(t, d)
		_, err := comp.PrepareNamespace(ctx, tc.id)
		if err == nil || !strings.Contains(err.Error(), "without exact OCC Namespace ownership") {
			t.Fatalf("%s: err = %v, want an ownership refusal", tc.id, err)
		}
		if calls := d.Calls(); len(calls) != 0 {
			t.Fatalf("%s: driver was called: %v", tc.id, calls)
		}
		if qs, _ := c.CoreV1().ResourceQuotas(name).List(ctx, metav1.ListOptions{}); len(qs.Items) != 0 {
			t.Fatalf("%s: baseline applied into a foreign namespace", tc.id)
		}
		if _, err := comp.DeleteNamespace(ctx, tc.id); err == nil || len(d.Calls()) != 0 {
			t.Fatalf("%s: namespace deletion of a foreign namespace: err=%v calls=%v", tc.id, err, d.Calls())
		}
	}
}

// requestCounter counts Pod reads, to prove a wait is a watch and not a polling loop.
type requestCounter struct {
	reads, watches atomic.Int32
	next           http.RoundTripper
}

func (r *requestCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/pods") {
		r.reads.Add(1)
		if req.URL.Query().Get("watch") == "true" {
			r.watches.Add(1)
		}
	}
	return r.next.RoundTrip(req)
}

// The provider creates the Harness Pod, which is not Ready at first; another revision's Pod in
// the same namespace is Ready but must not count. Compute sees the exact revision's Pod turn
// Ready through one list and a watch, not by polling.
func TestWaitForHarnessPodByWatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := testbed.Client(t)
	ns := mustName(t, "ns_pod_wait")
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rf := loadExample(t, "codex.yaml")
	other := rf.HarnessLabels()
	other[driver.LabelRevision] = "rev_00000000-0000-4000-8000-000000000001"
	mkPod := func(name string, labels map[string]string) *corev1.Pod {
		p, err := admin.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "x"}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	testbed.MarkPodReady(ctx, t, admin, ns, mkPod("other-revision", other).Name)
	mkPod("this-revision", rf.HarnessLabels())

	cfg := testbed.Config(t)
	counter := &requestCounter{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter })
	counted, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}

	notes := make(chan string, 16)
	done := make(chan struct{})
	var pod *corev1.Pod
	var waitErr error
	go func() {
		defer close(done)
		pod, waitErr = WaitForHarnessPod(ctx, counted, PodWait{Namespace: ns, Selector: rf.HarnessSelector(), Timeout: 30 * time.Second}, func(s string) { notes <- s })
	}()
	// The first note proves the wait has listed our Pod as not Ready; only then play the kubelet.
	if first := <-notes; !strings.Contains(first, "this-revision") || !strings.Contains(first, "Ready=Unknown") {
		t.Fatalf("first note = %q", first)
	}
	testbed.MarkPodReady(ctx, t, admin, ns, "this-revision")
	<-done
	if waitErr != nil {
		t.Fatal(waitErr)
	}
	if pod.Name != "this-revision" {
		t.Fatalf("wait returned Pod %s, want this-revision", pod.Name)
	}
	// client-go may open the initial list as a streaming watch (sendInitialEvents), so the
	// wait makes one or two Pod reads in all, at least one of them a watch, however long the
	// Pod takes: a polling loop would keep adding reads.
	if r, w := counter.reads.Load(), counter.watches.Load(); r > 2 || w < 1 {
		t.Fatalf("pod requests: %d reads, %d watches; want at most a list and one watch", r, w)
	}
}

// No Harness Pod ever appears: the wait ends at its bound and says what it last saw.
func TestWaitForHarnessPodTimesOutWithLastState(t *testing.T) {
	ctx := context.Background()
	_, err := WaitForHarnessPod(ctx, testbed.Client(t), PodWait{Namespace: mustName(t, "ns_pod_never"), Selector: "openclaw.dev/revision=rev_none", Timeout: 200 * time.Millisecond}, nil)
	if !errors.Is(err, kube.ErrWaitTimeout) || !strings.Contains(err.Error(), "no Pod with these labels appeared") {
		t.Fatalf("err = %v", err)
	}
}

// The supervisor applies providers after the Pod starts: pending and missing answers are asked
// again; ready for every attachment opens the gate; any terminal state closes it for good.
func TestAttachmentGate(t *testing.T) {
	ctx := context.Background()
	want := []driver.CredentialAttachment{{SourceID: "cs_a", Ref: "oce-cs-a"}, {SourceID: "cs_b", Ref: "oce-cs-b"}}
	gate := AttachmentGate{InitialBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond, Timeout: 10 * time.Second}
	st := func(ref string, s driver.AttachmentState) driver.AttachmentStatus {
		return driver.AttachmentStatus{SourceID: strings.TrimPrefix(ref, "oce-cs-"), Ref: ref, State: s, Reason: "R"}
	}

	gw := &scriptedGateway{answers: [][]driver.AttachmentStatus{
		{st("oce-cs-a", driver.AttachmentPending), st("oce-cs-b", driver.AttachmentReady)},
		{st("oce-cs-a", driver.AttachmentReady)}, // b missing: ask again
		{st("oce-cs-a", driver.AttachmentReady), st("oce-cs-b", driver.AttachmentReady)},
	}}
	var notes []string
	got, err := WaitForAttachments(ctx, gw, driver.NamespaceContext{}, driver.SandboxResourceRef{}, want, gate, func(s string) { notes = append(notes, s) })
	if err != nil || len(got) != 2 || gw.asked != 3 {
		t.Fatalf("ready case: statuses=%v err=%v asked=%d", got, err, gw.asked)
	}
	if len(notes) != 2 || !strings.Contains(notes[0], "cs_a: pending (R)") || !strings.Contains(notes[1], "cs_b: no status yet") {
		t.Fatalf("notes = %q", notes)
	}

	for _, terminal := range []driver.AttachmentState{driver.AttachmentFailed, driver.AttachmentWithheld, driver.AttachmentRevoked, driver.AttachmentAbsent} {
		gw := &scriptedGateway{answers: [][]driver.AttachmentStatus{
			{st("oce-cs-a", driver.AttachmentPending), st("oce-cs-b", driver.AttachmentReady)},
			{st("oce-cs-a", terminal), st("oce-cs-b", driver.AttachmentReady)},
		}}
		_, err := WaitForAttachments(ctx, gw, driver.NamespaceContext{}, driver.SandboxResourceRef{}, want, gate, nil)
		if !driver.HasCode(err, driver.CodeCredentialAttachmentFailed) || !strings.Contains(err.Error(), driver.AttachmentGateMessage) || !strings.Contains(err.Error(), string(terminal)) {
			t.Fatalf("%s: err = %v", terminal, err)
		}
		if gw.asked != 2 {
			t.Fatalf("%s: asked %d times, want 2 (no retry after a terminal state)", terminal, gw.asked)
		}
	}

	forever := &scriptedGateway{answers: [][]driver.AttachmentStatus{{st("oce-cs-a", driver.AttachmentPending)}}}
	_, err = WaitForAttachments(ctx, forever, driver.NamespaceContext{}, driver.SandboxResourceRef{}, want, AttachmentGate{InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, Timeout: 50 * time.Millisecond}, nil)
	if err == nil || !strings.Contains(err.Error(), "not ready within") || !strings.Contains(err.Error(), "stays inactive") {
		t.Fatalf("pending forever: err = %v", err)
	}
}

// A provider cleanup fails during Namespace deletion: the Kubernetes namespace is kept. The
// retried deletion succeeds, and only then is the namespace deleted; a third run is harmless.
func TestDeleteNamespaceOnlyAfterDriverCleanupSucceeds(t *testing.T) {
	ctx := context.Background()
	c := testbed.Client(t)
	d := &recordingDriver{failCleanupNS: []error{errors.New("OpenShell DeleteWorkspace did not confirm Workspace deletion.")}}
	comp, _ := newCompute(t, d)
	ns, err := comp.PrepareNamespace(ctx, "ns_delete_retry")
	if err != nil {
		t.Fatal(err)
	}

	_, err = comp.DeleteNamespace(ctx, "ns_delete_retry")
	if err == nil || !strings.Contains(err.Error(), "is kept so the cleanup can be retried") || !strings.Contains(err.Error(), "did not confirm Workspace deletion") {
		t.Fatalf("first deletion: err = %v", err)
	}
	live, err := c.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
	if err != nil || live.DeletionTimestamp != nil {
		t.Fatalf("namespace after failed cleanup: %v, deleting=%v; want kept", err, live.DeletionTimestamp)
	}

	res, err := comp.DeleteNamespace(ctx, "ns_delete_retry")
	if err != nil || !res.Deleted {
		t.Fatalf("retry: %+v %v", res, err)
	}
	live, err = c.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
	if err == nil && live.DeletionTimestamp == nil {
		t.Fatal("namespace not deleted after a successful cleanup")
	}
	if _, err := comp.DeleteNamespace(ctx, "ns_delete_retry"); err != nil {
		t.Fatalf("third run on a terminating namespace: %v", err)
	}
	want := []string{"ensureNamespace " + ns.Name, "cleanup namespace " + ns.Name, "cleanup namespace " + ns.Name, "cleanup namespace " + ns.Name}
	if got := d.Calls(); !slices.Equal(got, want) {
		t.Fatalf("calls = %v, want %v", got, want)
	}
}

func loadExample(t *testing.T, name string) *RevisionFile {
	t.Helper()
	rf, err := LoadRevisionFile(filepath.Join(revisionsDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return rf
}

// The whole Compute flow against the recording driver: namespace, baseline, ensureNamespace,
// attachments, provisionHarness, the Pod wait and the gate, then revision shutdown, repeated
// after the Pod is already gone.
func TestProvisionThenShutdownWithRecordingDriver(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := testbed.Client(t)
	rf := loadExample(t, "codex.yaml")
	rf.NamespaceID = "ns_flow_recording"
	ns := mustName(t, rf.NamespaceID)
	testbed.PlayKubelet(ctx, t, c, ns)

	d := &recordingDriver{}
	comp, events := newCompute(t, d)
	gw := &scriptedGateway{answers: [][]driver.AttachmentStatus{
		{{SourceID: "cs_openai_default", Ref: "oce-cs-" + fmt.Sprintf("%024x", len("cs_openai_default")), State: driver.AttachmentPending}},
		{{SourceID: "cs_openai_default", Ref: "oce-cs-" + fmt.Sprintf("%024x", len("cs_openai_default")), State: driver.AttachmentReady}},
	}}
	comp.Credentials = gw

	res, err := comp.Provision(ctx, rf)
	if err != nil {
		t.Fatal(err)
	}
	want := driver.SandboxResourceRef{NamespaceName: ns, ResourceName: sandboxName(rf.Revision()), AgentID: rf.AgentID, RevisionID: rf.RevisionID}
	if res.Ref != want || res.Pod != want.ResourceName || len(res.Attachments) != 1 {
		t.Fatalf("result = %+v, want ref %+v", res, want)
	}
	var ended []string
	for _, e := range *events {
		if e.Kind == StepEnd {
			ended = append(ended, e.Step)
			if e.Err != nil {
				t.Fatalf("step %s failed: %v", e.Step, e.Err)
			}
		}
	}
	wantSteps := []string{"namespace " + ns, "baseline isolation", "driver ensureNamespace", "attach credential sources", "driver provisionHarness", "wait for Harness Pod", "credential attachment gate"}
	if !slices.Equal(ended, wantSteps) {
		t.Fatalf("steps = %v, want %v", ended, wantSteps)
	}

	for i := range 2 {
		if err := comp.ShutdownRevision(ctx, rf); err != nil {
			t.Fatalf("shutdown %d: %v", i+1, err)
		}
	}
	if _, err := c.CoreV1().Pods(ns).Get(ctx, want.ResourceName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Harness Pod after shutdown: %v", err)
	}
	if got := d.Calls(); !slices.Equal(got, []string{"ensureNamespace " + ns, "provisionHarness " + rf.RevisionID, "cleanup revision " + rf.RevisionID, "cleanup revision " + rf.RevisionID}) {
		t.Fatalf("calls = %v", got)
	}
}

// Revisions Compute must refuse before any mutation: pinned to another driver, a
// configuration the driver would still change, and a driver preflight refusal.
func TestProvisionFailsClosedBeforeAnyMutation(t *testing.T) {
	ctx := context.Background()
	c := testbed.Client(t)
	cases := []struct {
		name   string
		mutate func(*RevisionFile, *Compute)
		want   string
	}{
		{"pinned elsewhere", func(rf *RevisionFile, _ *Compute) { rf.SandboxDriverID = "sandbox-other" }, `pinned to Sandbox driver "sandbox-other"`},
		{"embedded harness", func(rf *RevisionFile, _ *Compute) { rf.Harness.Mode = "embedded" }, "OpenShell SandboxDriver supports only dedicated Harness revisions."},
		{"preflight refusal", func(_ *RevisionFile, comp *Compute) {
			comp.Preflight = func(driver.HarnessContext, []driver.CredentialSource) error {
				return driver.Coded(driver.CodeSecretEnvironmentUnsupported, "OpenShell dedicated Codex cannot receive APP_SERVER_TOKEN.")
			}
		}, "cannot receive APP_SERVER_TOKEN"},
		{"no credential gateway", func(_ *RevisionFile, comp *Compute) { comp.Credentials = nil }, "has no Credential Gateway"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rf := loadExample(t, "codex.yaml")
			rf.NamespaceID = fmt.Sprintf("ns_fail_closed_%d", i)
			d := &recordingDriver{}
			comp, _ := newCompute(t, d)
			comp.Credentials = &scriptedGateway{}
			tc.mutate(rf, comp)
			_, err := comp.Provision(ctx, rf)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if calls := d.Calls(); len(calls) != 0 {
				t.Fatalf("driver called: %v", calls)
			}
			if _, err := c.CoreV1().Namespaces().Get(ctx, mustName(t, rf.NamespaceID), metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Fatalf("namespace exists after a refused revision: %v", err)
			}
		})
	}
}
