package helmrelease_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"
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

func TestMain(m *testing.M) { os.Exit(testbed.Run(m)) }

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
