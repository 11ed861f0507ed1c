package kubeobj_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openclaw/occ/internal/occdev/artifacts"
	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/testbed"
)

func TestMain(m *testing.M) { os.Exit(testbed.Run(m)) }

// checkingRecorder records like the state does, and checks at every first record of an object
// that the object does not exist yet: a layer must record before it creates.
type checkingRecorder struct {
	t    *testing.T
	kube kubernetes.Interface
	mu   sync.Mutex
	recs []state.Object
}

func (r *checkingRecorder) Record(o state.Object) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, p := range r.recs {
		if p.Kind == o.Kind && p.Namespace == o.Namespace && p.Name == o.Name {
			r.recs[i] = o
			return nil
		}
	}
	if o.Kind == "ConfigMap" {
		if _, err := r.kube.CoreV1().ConfigMaps(o.Namespace).Get(context.Background(), o.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			r.t.Errorf("%s was first recorded after it was created (get: %v)", o, err)
		}
	}
	r.recs = append(r.recs, o)
	return nil
}

func (r *checkingRecorder) Forget(state.Object) error { return nil }

func access(t *testing.T) cluster.Access {
	path := testbed.Kubeconfig(t)
	raw, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return cluster.Access{Provider: "existing", Kubeconfig: path, Context: raw.CurrentContext}
}

func suffix(t *testing.T) string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// The platform and the in-cluster control plane create their objects through one client:
// an object is recorded before it is created and again with its uid; a repeated step adopts
// it only with exactly this state's label; another state's (or anyone's) object of that name
// is refused untouched; removal deletes only the recorded uid, and leaves a replacement alone.
func TestEnsureAdoptRefuseRemove(t *testing.T) {
	ctx := context.Background()
	kc := testbed.Client(t)
	ns := "kubeobj-" + suffix(t)
	if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rec := &checkingRecorder{t: t, kube: kc}
	c, err := kubeobj.Connect(access(t), kubeobj.Options{Owner: "owner-a", Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: ns}, Data: map[string]string{"k": "v1"}}
	created, err := c.Ensure(ctx, cm, kubeobj.Converge)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.recs) != 1 || rec.recs[0].UID != string(created.GetUID()) || rec.recs[0].Type != kubeobj.TypeObject {
		t.Fatalf("records after create: %+v", rec.recs)
	}
	if created.GetLabels()[kubeobj.LabelDevState] != "owner-a" || created.GetLabels()[kubeobj.LabelManagedBy] != kubeobj.ManagedByOCC {
		t.Errorf("labels %v", created.GetLabels())
	}

	cm.Data["k"] = "v2"
	if _, err := c.Ensure(ctx, cm, kubeobj.Keep); err != nil {
		t.Fatal(err)
	}
	if got, _ := kc.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{}); got.Data["k"] != "v1" {
		t.Errorf("Keep changed the adopted object: %v", got.Data)
	}
	if _, err := c.Ensure(ctx, cm, kubeobj.Converge); err != nil {
		t.Fatal(err)
	}
	if got, _ := kc.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{}); got.Data["k"] != "v2" {
		t.Errorf("Converge did not apply: %v", got.Data)
	}

	other, err := kubeobj.Connect(access(t), kubeobj.Options{Owner: "owner-b", Recorder: &checkingRecorder{t: t, kube: kc}})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := kc.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
	if _, err := other.Ensure(ctx, cm, kubeobj.Converge); err == nil || !strings.Contains(err.Error(), "not owned by this development state") {
		t.Fatalf("another state adopted the object: %v", err)
	}
	if after, _ := kc.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{}); after.ResourceVersion != before.ResourceVersion {
		t.Error("the refused Ensure changed the object")
	}

	// Someone replaces the object: status says changed, down leaves the replacement alone.
	o := rec.recs[0]
	if err := kc.CoreV1().ConfigMaps(ns).Delete(ctx, "settings", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kc.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if in := c.Inspect(ctx, o); in.State != state.Changed || !strings.Contains(in.Detail, "recorded uid") {
		t.Errorf("inspect of the replaced object: %+v", in)
	}
	if rm, err := c.Remove(ctx, o); err != nil || rm.Outcome != state.LeftAlone {
		t.Errorf("remove of the replaced object: %+v, %v", rm, err)
	}
	if _, err := kc.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{}); err != nil {
		t.Errorf("the replacement was removed: %v", err)
	}

	// The recorded object itself is removed, then counts as gone.
	mine, err := c.Ensure(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: ns}}, kubeobj.Converge)
	if err != nil {
		t.Fatal(err)
	}
	ref := kubeobj.Ref(mine)
	if rm, err := c.Remove(ctx, ref); err != nil || rm.Outcome != state.Removed {
		t.Fatalf("remove: %+v, %v", rm, err)
	}
	if rm, err := c.Remove(ctx, ref); err != nil || rm.Outcome != state.AlreadyGone {
		t.Fatalf("second remove: %+v, %v", rm, err)
	}
	if in := c.Inspect(ctx, ref); in.State != state.Missing {
		t.Errorf("inspect after removal: %+v", in)
	}
}

// `down` after the kubeconfig context was pointed at another cluster: the recorded
// connection refuses (the kube-system uid differs), once, for every record that asks.
func TestRecordedConnectionRefusesAnotherCluster(t *testing.T) {
	a := access(t)
	a.UID = "00000000-0000-0000-0000-000000000000"
	connect := kubeobj.Recorded(a, "owner-a")
	rm := kubeobj.Remover(connect)
	o := state.Object{Type: kubeobj.TypeObject, APIVersion: "v1", Kind: "ConfigMap", Namespace: "default", Name: "x"}
	_, err := rm.Remove(context.Background(), o)
	if err == nil || !strings.Contains(err.Error(), "now reaches a different cluster") {
		t.Fatalf("remove on another cluster: %v", err)
	}
	if in := rm.Inspect(context.Background(), o); in.State != state.Unknown || !strings.Contains(in.Detail, "different cluster") {
		t.Fatalf("inspect on another cluster: %+v", in)
	}
	if _, err2 := connect(context.Background()); err2 == nil || err2.Error() != err.Error() {
		t.Fatalf("the connection error is not shared: %v vs %v", err2, err)
	}
}

// A provider hands over a context that reaches another cluster than the one it vouched for, or a
// retried up's state records another cluster: nothing is installed; the right cluster connects
// with its uid filled in.
func TestConnectVouchedRefusesAnotherCluster(t *testing.T) {
	ctx := context.Background()
	other := "00000000-0000-0000-0000-000000000000"
	a := access(t)
	conn, err := kubeobj.ConnectVouched(ctx, a, kubeobj.Options{Owner: "owner-a"}, "existing", "", "/state")
	if err != nil || conn.Access.UID == "" {
		t.Fatalf("the right cluster: %v, %+v", err, conn)
	}
	uid := conn.Access.UID
	if _, err := kubeobj.ConnectVouched(ctx, a, kubeobj.Options{Owner: "owner-a"}, "existing", uid, "/state"); err != nil {
		t.Errorf("the recorded cluster again: %v", err)
	}
	vouched := a
	vouched.UID = other
	if _, err := kubeobj.ConnectVouched(ctx, vouched, kubeobj.Options{Owner: "owner-a"}, "k3d", "", "/state"); err == nil || !strings.Contains(err.Error(), "the k3d provider reports cluster kube-system uid "+other) {
		t.Errorf("a cluster the provider did not vouch for: %v", err)
	}
	if _, err := kubeobj.ConnectVouched(ctx, a, kubeobj.Options{Owner: "owner-a"}, "existing", other, "/state"); err == nil || !strings.Contains(err.Error(), "run occ dev down --state-dir /state first") {
		t.Errorf("a cluster the state does not record: %v", err)
	}
}

// `up --dry-run` names a release manifest's objects (Agent Sandbox's) as the run records them,
// in the order EnsureManifest applies them: the namespace before the objects in it, whatever
// order the file has.
func TestDescribeManifestNamesWhatEnsureManifestRecords(t *testing.T) {
	ns := "occ-manifest-" + suffix(t)
	objs, err := artifacts.ParseYAML([]byte(`apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: `+ns+`}
---
apiVersion: v1
kind: Namespace
metadata: {name: `+ns+`}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: controller, namespace: `+ns+`}
`), "sandbox.yaml")
	if err != nil {
		t.Fatal(err)
	}
	described := kubeobj.DescribeManifest(objs)
	rec := &checkingRecorder{t: t, kube: testbed.Client(t)}
	c, err := kubeobj.Connect(access(t), kubeobj.Options{Owner: "owner-manifest", Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.EnsureManifest(context.Background(), objs, time.Minute); err != nil {
		t.Fatal(err)
	}
	var want, got []string
	for _, o := range rec.recs {
		want = append(want, o.Kind+" "+o.Namespace+"/"+o.Name)
	}
	for _, o := range described {
		got = append(got, o.Kind+" "+o.Namespace+"/"+o.Name)
	}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("described %q; the run recorded %q", got, want)
	}
	if len(got) == 0 || got[0] != "Namespace /"+ns {
		t.Errorf("described %q; want the namespace first", got)
	}
}
