package helmrelease_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/helmrelease"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/testbed"
)

func TestMain(m *testing.M) {
	if op := os.Getenv(childEnv); op != "" {
		os.Exit(runChild(op))
	}
	os.Exit(testbed.Run(m))
}

// recorder keeps records in memory.
type recorder struct{ recs []state.Object }

func (r *recorder) Record(o state.Object) error { r.recs = append(r.recs, o); return nil }
func (r *recorder) Forget(state.Object) error   { return nil }

// configMapChart is a one-template chart, enough for the release lifecycle.
func configMapChart() *chart.Chart {
	return &chart.Chart{
		Metadata:  &chart.Metadata{APIVersion: chart.APIVersionV2, Name: "probe", Version: "0.1.0"},
		Templates: []*chart.File{{Name: "templates/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\ndata:\n  k: v\n")}},
	}
}

// releaseNamespace makes a namespace of its own (prefix plus random hex) on the envtest bed for
// a release test, and the cluster access that reaches it through the bed's kubeconfig.
func releaseNamespace(t *testing.T, prefix string) (kubernetes.Interface, string, cluster.Access) {
	t.Helper()
	kc := testbed.Client(t)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	ns := prefix + "-" + hex.EncodeToString(b)
	if _, err := kc.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	path := testbed.Kubeconfig(t)
	raw, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return kc, ns, cluster.Access{Provider: "existing", Kubeconfig: path, Context: raw.CurrentContext}
}

// The Gateway chart (and later the OCE chart) is installed as this state's release: recorded
// before the install, adopted again on a repeated step only with this state's label, refused
// when another state (or someone by hand) installed that name, and removed by the Remover
// only while it carries this state's label.
func TestReleaseLifecycle(t *testing.T) {
	ctx := context.Background()
	kc, ns, access := releaseNamespace(t, "helmrelease")
	rel := helmrelease.Release{Access: access, Namespace: ns, Name: "probe"}
	opts := func(owner string, rec state.Recorder) helmrelease.EnsureOptions {
		return helmrelease.EnsureOptions{Release: rel, Chart: configMapChart(), Owner: owner, Recorder: rec, Timeout: time.Minute}
	}

	mine := &recorder{}
	if _, err := helmrelease.Ensure(ctx, opts("owner-a", mine)); err != nil {
		t.Fatal(err)
	}
	if len(mine.recs) != 1 || mine.recs[0].String() != rel.Record().String() {
		t.Fatalf("records: %+v", mine.recs)
	}
	if _, err := kc.CoreV1().ConfigMaps(ns).Get(ctx, "probe-cm", metav1.GetOptions{}); err != nil {
		t.Fatalf("the chart's object: %v", err)
	}
	if _, err := helmrelease.Ensure(ctx, opts("owner-a", mine)); err != nil {
		t.Fatalf("repeated step: %v", err)
	}
	theirs := &recorder{}
	if _, err := helmrelease.Ensure(ctx, opts("owner-b", theirs)); err == nil || !strings.Contains(err.Error(), "this development state did not install it") || len(theirs.recs) != 0 {
		t.Fatalf("another state's Ensure: %v, records %v", err, theirs.recs)
	}

	connect := func(owner string) func(context.Context) (*kubeobj.Conn, error) {
		return func(context.Context) (*kubeobj.Conn, error) {
			return kubeobj.Connect(access, kubeobj.Options{Owner: owner})
		}
	}
	if in := helmrelease.Remover(connect("owner-b")).Inspect(ctx, rel.Record()); in.State != state.Changed {
		t.Errorf("another state's view of the release: %+v", in)
	}
	if rm, err := helmrelease.Remover(connect("owner-b")).Remove(ctx, rel.Record()); err != nil || rm.Outcome != state.LeftAlone {
		t.Fatalf("another state's remove: %+v, %v", rm, err)
	}
	ours := helmrelease.Remover(connect("owner-a"))
	if in := ours.Inspect(ctx, rel.Record()); in.State != state.Present || !strings.Contains(in.Detail, "revision 1, deployed") {
		t.Errorf("inspect: %+v", in)
	}
	if rm, err := ours.Remove(ctx, rel.Record()); err != nil || rm.Outcome != state.Removed {
		t.Fatalf("remove: %+v, %v", rm, err)
	}
	if _, err := kc.CoreV1().ConfigMaps(ns).Get(ctx, "probe-cm", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the chart's object survived the uninstall: %v", err)
	}
	if rm, err := ours.Remove(ctx, rel.Record()); err != nil || rm.Outcome != state.AlreadyGone {
		t.Fatalf("second remove: %+v, %v", rm, err)
	}
}

// A repeated step of the OCE chart converges: with Converge, this state's release is upgraded
// with the values of this run (revision 2, the object changed); without it the same call adopts
// the release as it is. Another state's release is refused either way.
func TestConvergeUpgradesOnlyThisStatesRelease(t *testing.T) {
	ctx := context.Background()
	kc, ns, access := releaseNamespace(t, "helmconverge")
	valueChart := configMapChart()
	valueChart.Templates[0].Data = []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\ndata:\n  k: {{ .Values.k | quote }}\n")
	opts := func(owner, value string, converge bool) helmrelease.EnsureOptions {
		return helmrelease.EnsureOptions{Release: helmrelease.Release{Access: access, Namespace: ns, Name: "probe"}, Chart: valueChart,
			Values: map[string]any{"k": value}, Owner: owner, Recorder: &recorder{}, Timeout: time.Minute, Wait: true, Converge: converge}
	}
	value := func() string {
		cm, err := kc.CoreV1().ConfigMaps(ns).Get(ctx, "probe-cm", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm.Data["k"]
	}
	if _, err := helmrelease.Ensure(ctx, opts("owner-a", "first", true)); err != nil {
		t.Fatal(err)
	}
	rel, err := helmrelease.Ensure(ctx, opts("owner-a", "second", true))
	if err != nil {
		t.Fatalf("converging step: %v", err)
	}
	if rel.Version != 2 || value() != "second" {
		t.Errorf("after Converge: revision %d, value %q; want revision 2 with the new value", rel.Version, value())
	}
	rel, err = helmrelease.Ensure(ctx, opts("owner-a", "third", false))
	if err != nil {
		t.Fatal(err)
	}
	if rel.Version != 2 || value() != "second" {
		t.Errorf("adopting step changed the release: revision %d, value %q", rel.Version, value())
	}
	if _, err := helmrelease.Ensure(ctx, opts("owner-b", "theirs", true)); err == nil || value() != "second" {
		t.Fatalf("another state's converge: %v, value %q", err, value())
	}
	if err := helmrelease.Uninstall(helmrelease.Release{Access: access, Namespace: ns, Name: "probe"}, time.Minute); err != nil {
		t.Fatal(err)
	}
}

// childEnv makes the test binary the occ a test kills: it runs one Helm operation of
// TestReleaseLeftPendingByAKilledOcc (install or upgrade) and never reaches its end, because the
// chart's hook Job never completes on the bed (no kubelet runs its Pod).
const childEnv = "OCC_TEST_HELMRELEASE_CHILD"

// hookChart is configMapChart with a hook Job for op (install or upgrade): Helm marks the
// revision pending-<op> and waits for the Job.
func hookChart(op string) *chart.Chart {
	c := configMapChart()
	c.Templates = append(c.Templates, &chart.File{Name: "templates/hook.yaml", Data: []byte("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{ .Release.Name }}-hook\n" +
		"  annotations:\n    helm.sh/hook: pre-" + op + "\nspec:\n  backoffLimit: 0\n  template:\n    spec:\n      restartPolicy: Never\n" +
		"      containers:\n      - name: hook\n        image: registry.invalid/never@sha256:" + strings.Repeat("0", 64) + "\n")})
	return c
}

// runChild runs the operation op of childEnv against the release the parent names in its
// environment; it returns only when Helm gives up.
func runChild(op string) int {
	access := cluster.Access{Provider: "existing", Kubeconfig: os.Getenv("CHILD_KUBECONFIG"), Context: os.Getenv("CHILD_CONTEXT")}
	_, err := helmrelease.Ensure(context.Background(), helmrelease.EnsureOptions{
		Release: helmrelease.Release{Access: access, Namespace: os.Getenv("CHILD_NAMESPACE"), Name: "probe"},
		Chart:   hookChart(op), Owner: "owner-a", Recorder: &recorder{}, Timeout: 10 * time.Minute, Converge: true,
	})
	fmt.Fprintf(os.Stderr, "child %s ended: %v\n", op, err)
	return 3
}

// killChildWhenPending runs the child operation op and SIGKILLs it as soon as the release's
// storage Secret says pending-<op>: the occ that ran Helm is gone mid-operation.
func killChildWhenPending(t *testing.T, kc kubernetes.Interface, ns, op string, access cluster.Access) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	w, err := kc.CoreV1().Secrets(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=probe,status=pending-" + op})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+op, "CHILD_KUBECONFIG="+access.Kubeconfig, "CHILD_CONTEXT="+access.Context, "CHILD_NAMESPACE="+ns)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- cmd.Wait() }()
	select {
	case <-w.ResultChan():
		_ = cmd.Process.Kill()
		<-ended
	case err := <-ended:
		t.Fatalf("the child ended before the release was pending-%s: %v\n%s", op, err, stderr.String())
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		t.Fatalf("the release never became pending-%s", op)
	}
}

// An occ killed in the middle of a Helm operation (SIGKILL: nothing of it runs again) leaves the
// release's newest revision pending, and Helm refuses every later operation on it. The next occ
// of the same state, holding the state's lock, marks that revision failed and carries on: a
// reload or a repeated step upgrades it, `down` uninstalls it. Another state's pending release is
// left alone.
func TestReleaseLeftPendingByAKilledOcc(t *testing.T) {
	ctx := context.Background()
	t.Run("upgrade", func(t *testing.T) {
		kc, ns, access := releaseNamespace(t, "helmkilled")
		rel := helmrelease.Release{Access: access, Namespace: ns, Name: "probe"}
		opts := helmrelease.EnsureOptions{Release: rel, Chart: configMapChart(), Owner: "owner-a", Recorder: &recorder{}, Timeout: time.Minute, Converge: true}
		if _, err := helmrelease.Ensure(ctx, opts); err != nil {
			t.Fatal(err)
		}
		killChildWhenPending(t, kc, ns, "upgrade", access)
		if st, err := helmrelease.Status(rel); err != nil || st.Version != 2 || st.Info.Status != release.StatusPendingUpgrade {
			t.Fatalf("after the kill: %+v, %v; want revision 2 pending-upgrade", st, err)
		}
		if st, err := helmrelease.Recover(rel, "owner-b", nil); err != nil || st.Info.Status != release.StatusPendingUpgrade {
			t.Fatalf("another state's Recover changed the release: %+v, %v", st, err)
		}
		got, err := helmrelease.Ensure(ctx, opts)
		if err != nil {
			t.Fatalf("the next occ's upgrade: %v", err)
		}
		if got.Version != 3 || got.Info.Status != release.StatusDeployed {
			t.Errorf("after the next upgrade: revision %d %s; want revision 3 deployed", got.Version, got.Info.Status)
		}
		killed, err := driver.NewSecrets(kc.CoreV1().Secrets(ns)).Get("sh.helm.release.v1.probe.v2")
		if err != nil {
			t.Fatal(err)
		}
		if killed.Info.Status != release.StatusFailed || !strings.Contains(killed.Info.Description, "pending-upgrade interrupted") {
			t.Errorf("the killed revision: %s %q; want failed, saying it was interrupted", killed.Info.Status, killed.Info.Description)
		}
	})
	t.Run("install", func(t *testing.T) {
		kc, ns, access := releaseNamespace(t, "helmkilled")
		rel := helmrelease.Release{Access: access, Namespace: ns, Name: "probe"}
		killChildWhenPending(t, kc, ns, "install", access)
		connect := func(context.Context) (*kubeobj.Conn, error) {
			return kubeobj.Connect(access, kubeobj.Options{Owner: "owner-a"})
		}
		if in := helmrelease.Remover(connect).Inspect(ctx, rel.Record()); in.State != state.Interrupted || !strings.Contains(in.Detail, "pending-install: the occ that ran it stopped") {
			t.Errorf("status of the killed install: %+v", in)
		}
		if rm, err := helmrelease.Remover(connect).Remove(ctx, rel.Record()); err != nil || rm.Outcome != state.Removed {
			t.Fatalf("down's removal of the killed install: %+v, %v", rm, err)
		}
		if st, err := helmrelease.Status(rel); err != nil || st != nil {
			t.Errorf("the release after down: %+v, %v", st, err)
		}
		if _, err := kc.CoreV1().ConfigMaps(ns).Get(ctx, "probe-cm", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the chart's object survived: %v", err)
		}
	})
}
