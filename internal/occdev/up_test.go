package occdev_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/openclaw/occ/internal/installation"
	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/helmrelease"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/progress"
	"github.com/openclaw/occ/internal/testbed"
)

// recordedProgress collects finished-step lines, as the CLI would print them; lanes report
// from their own goroutines.
type recordedProgress struct {
	mu    sync.Mutex
	lines []string
}

func (p *recordedProgress) sink(e progress.Event) {
	if e.Kind != progress.End {
		return
	}
	mark := "ok"
	if e.Err != nil {
		mark = "failed: " + e.Err.Error()
	}
	p.mu.Lock()
	p.lines = append(p.lines, e.Step+" ["+e.Lane+"] "+e.Elapsed.String()+" "+mark)
	p.mu.Unlock()
}

// resourceFor maps a recorded object to its dynamic resource on the test bed.
func resourceFor(t *testing.T, dyn dynamic.Interface, o state.Object) dynamic.ResourceInterface {
	t.Helper()
	gv, err := schema.ParseGroupVersion(o.APIVersion)
	if err != nil {
		t.Fatal(err)
	}
	plural := map[string]string{
		"Namespace": "namespaces", "RuntimeClass": "runtimeclasses", "CustomResourceDefinition": "customresourcedefinitions",
		"ServiceAccount": "serviceaccounts", "ClusterRole": "clusterroles", "ClusterRoleBinding": "clusterrolebindings",
		"Deployment": "deployments", "Secret": "secrets", "NetworkPolicy": "networkpolicies",
	}[o.Kind]
	if plural == "" {
		t.Fatalf("test does not know the resource of kind %s", o.Kind)
	}
	r := dyn.Resource(gv.WithResource(plural))
	if o.Namespace != "" {
		return r.Namespace(o.Namespace)
	}
	return r
}

// assertGone checks that a recorded object no longer exists; a Namespace counts as gone once
// its deletion has started (the bed has no namespace controller to finish it).
func assertGone(t *testing.T, dyn dynamic.Interface, o state.Object) {
	t.Helper()
	if o.Type == helmrelease.TypeRelease {
		return
	}
	u, err := resourceFor(t, dyn, o).Get(context.Background(), o.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	if err != nil {
		t.Fatalf("read %s: %v", o, err)
	}
	if o.Kind == "Namespace" && u.GetDeletionTimestamp() != nil {
		return
	}
	if o.Kind == "CustomResourceDefinition" && u.GetDeletionTimestamp() != nil {
		// The apiserver removes a CRD asynchronously, after its finalizer has deleted every
		// custom resource; wait for that by watch.
		waitDeleted(t, resourceFor(t, dyn, o), o.Name)
		return
	}
	t.Errorf("%s still exists after cleanup", o)
}

// assertReleaseGone checks that the Gateway chart's own objects and Helm's release records are
// gone from namespace ns.
func assertReleaseGone(t *testing.T, b *bed) {
	t.Helper()
	ctx := context.Background()
	if _, err := b.Client.AppsV1().StatefulSets(b.Namespace).Get(ctx, occdev.GatewayRelease, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Gateway StatefulSet still exists (err %v)", err)
	}
	if _, err := b.Client.CoreV1().Services(b.Namespace).Get(ctx, occdev.GatewayServiceName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Gateway Service still exists (err %v)", err)
	}
	if cr, err := b.Client.RbacV1().ClusterRoles().Get(ctx, occdev.GatewayRelease+"-node-reader-"+b.Namespace, metav1.GetOptions{}); err == nil && cr.Labels["app.kubernetes.io/managed-by"] == "Helm" {
		t.Errorf("Gateway chart ClusterRole still exists")
	} else if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	secrets, err := b.Client.CoreV1().Secrets(b.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm"})
	if err != nil {
		t.Fatal(err)
	}
	if len(secrets.Items) != 0 {
		t.Errorf("Helm release records remain: %d Secret(s)", len(secrets.Items))
	}
}

// A developer brings the platform up on their existing cluster and takes it down again: every
// object up created is gone afterwards, and objects that were there before are untouched.
func TestUpThenDownRemovesExactlyWhatUpCreated(t *testing.T) {
	b := newBed(t)
	ctx := context.Background()

	// Objects the developer had before: a namespace with a ConfigMap, and a ClusterRole.
	keepNS, err := b.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "keep-" + b.Suffix}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	keepCM, err := b.Client.CoreV1().ConfigMaps(keepNS.Name).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mine"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	keepRole, err := b.Client.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "keep-" + b.Suffix}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	progress := &recordedProgress{}
	var log bytes.Buffer
	opts := b.Options()
	opts.Progress, opts.Log = progress.sink, &log
	sum, err := occdev.Up(ctx, opts)
	if err != nil {
		t.Fatalf("up: %v\nprogress: %s", err, strings.Join(progress.lines, "\n"))
	}
	t.Logf("progress:\n%s", strings.Join(progress.lines, "\n"))
	if len(progress.lines) != 19 {
		t.Errorf("want one progress line per step and group (19), got %d:\n%s", len(progress.lines), strings.Join(progress.lines, "\n"))
	}
	if want := "http://openshell-gateway." + b.Namespace + ".svc.cluster.local:8080"; sum.GatewayEndpoint != want {
		t.Errorf("gateway endpoint %q, want %q", sum.GatewayEndpoint, want)
	}
	if sum.DownCommand != "occ dev down --state-dir "+b.StateDir {
		t.Errorf("down command %q", sum.DownCommand)
	}
	in, err := installation.Load(sum.Installation)
	if err != nil {
		t.Fatalf("the written Installation does not load: %v", err)
	}
	if got := in.OpenShellBackend().Configuration.Endpoint; got == nil || *got != sum.GatewayEndpoint {
		t.Errorf("Installation endpoint %v, want %s", got, sum.GatewayEndpoint)
	}

	st, err := state.Read(b.StateDir)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, o := range st.Objects {
		if o.Type == helmrelease.TypeRelease {
			kinds["HelmRelease"]++
			continue
		}
		kinds[o.Kind]++
		if o.UID == "" {
			t.Errorf("%s recorded without its uid", o)
		}
	}
	for kind, n := range map[string]int{"Namespace": 2, "RuntimeClass": 1, "CustomResourceDefinition": 1, "Deployment": 1, "Secret": 1, "HelmRelease": 1, "NetworkPolicy": 2, "ClusterRole": 2, "ClusterRoleBinding": 2, "ServiceAccount": 1} {
		if kinds[kind] != n {
			t.Errorf("recorded %d %s object(s), want %d (recorded: %v)", kinds[kind], kind, n, kinds)
		}
	}

	status, err := occdev.GetStatus(ctx, occdev.StatusOptions{StateDir: b.StateDir})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range status.Objects {
		if o.State != state.Present {
			t.Errorf("status after up: %s %s/%s is %s (%s), want present", o.Kind, o.Namespace, o.Name, o.State, o.Detail)
		}
	}

	downStart := time.Now()
	res, err := occdev.Down(ctx, occdev.DownOptions{StateDir: b.StateDir})
	if err != nil {
		t.Fatalf("down: %v", err)
	}
	t.Logf("down took %s", time.Since(downStart))
	if len(res.Removed) != len(st.Objects) {
		t.Errorf("down removed %d objects, want %d", len(res.Removed), len(st.Objects))
	}
	dyn := dynamic.NewForConfigOrDie(testbed.Config(t))
	for _, o := range st.Objects {
		assertGone(t, dyn, o)
	}
	assertReleaseGone(t, b)
	if _, err := os.Stat(b.StateDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("state directory still exists after down: %v", err)
	}

	// The developer's own objects survive, unchanged.
	if got, err := b.Client.CoreV1().ConfigMaps(keepNS.Name).Get(ctx, "mine", metav1.GetOptions{}); err != nil || got.UID != keepCM.UID || got.ResourceVersion != keepCM.ResourceVersion {
		t.Errorf("pre-existing ConfigMap changed or gone: %v", err)
	}
	if got, err := b.Client.CoreV1().Namespaces().Get(ctx, keepNS.Name, metav1.GetOptions{}); err != nil || got.DeletionTimestamp != nil {
		t.Errorf("pre-existing namespace touched: %v", err)
	}
	if got, err := b.Client.RbacV1().ClusterRoles().Get(ctx, keepRole.Name, metav1.GetOptions{}); err != nil || got.ResourceVersion != keepRole.ResourceVersion {
		t.Errorf("pre-existing ClusterRole changed or gone: %v", err)
	}

	// A second down finds nothing to do and says so.
	again, err := occdev.Down(ctx, occdev.DownOptions{StateDir: b.StateDir})
	if err != nil || !again.NothingRecorded {
		t.Errorf("repeated down: %+v, %v; want nothing recorded", again, err)
	}
}

// crdDeletionWait bounds the wait for the apiserver to finish a CRD's deletion: its finalizer
// deletes every custom resource first, and on the shared apiserver, while the whole suite loads
// two cores, that once took longer than 30 s (make test, 2026-12-06).
const crdDeletionWait = 2 * time.Minute

// waitDeleted waits by watch until the named object is gone.
func waitDeleted(t *testing.T, ri dynamic.ResourceInterface, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), crdDeletionWait)
	defer cancel()
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	list, err := ri.List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) == 0 {
		return
	}
	w, err := ri.Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch of %s closed before it was deleted", name)
			}
			if ev.Type == watch.Deleted {
				return
			}
		case <-ctx.Done():
			t.Fatalf("%s was not deleted within %s", name, crdDeletionWait)
		}
	}
}

// Two terminals run `occ dev up` on the same state directory at once: one wins, the other
// fails clearly without touching anything, and the winner's environment is intact.
func TestTwoUpsOnOneStateDirectory(t *testing.T) {
	b := newBed(t)
	ctx := context.Background()
	type result struct {
		sum *occdev.Summary
		err error
	}
	results := make(chan result, 2)
	start := make(chan struct{})
	for range 2 {
		go func() {
			<-start
			sum, err := occdev.Up(ctx, b.Options())
			results <- result{sum, err}
		}()
	}
	close(start)
	var wins, losses int
	for range 2 {
		r := <-results
		switch {
		case r.err == nil:
			wins++
		case errors.Is(r.err, state.ErrInUse) || errors.Is(r.err, state.ErrExists):
			losses++
			msg := r.err.Error()
			if !strings.Contains(msg, b.StateDir) || strings.Contains(msg, "rolled back") {
				t.Errorf("the losing up should name the directory and have rolled back nothing: %v", r.err)
			}
		default:
			t.Errorf("unexpected failure: %v", r.err)
		}
	}
	if wins != 1 || losses != 1 {
		t.Fatalf("%d wins and %d clear losses; want exactly one of each", wins, losses)
	}
	status, err := occdev.GetStatus(ctx, occdev.StatusOptions{StateDir: b.StateDir})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range status.Objects {
		if o.State != state.Present {
			t.Errorf("winner's %s %s is %s after the race", o.Kind, o.Name, o.State)
		}
	}
	if _, err := occdev.Down(ctx, occdev.DownOptions{StateDir: b.StateDir}); err != nil {
		t.Fatalf("down: %v", err)
	}
}

// The Gateway's JWT signing key exists only in its Secret: it appears in no progress line, log
// line, summary, state.json or any other file of the state directory.
func TestNoSecretInOutputLogsOrState(t *testing.T) {
	b := newBed(t)
	ctx := context.Background()
	progress := &recordedProgress{}
	var log bytes.Buffer
	opts := b.Options()
	opts.Progress, opts.Log = progress.sink, &log
	sum, err := occdev.Up(ctx, opts)
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	secret, err := b.Client.CoreV1().Secrets(b.Namespace).Get(ctx, occdev.GatewayJWTSecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	key := secret.Data["signing.pem"]
	block := strings.Split(strings.TrimSpace(string(key)), "\n")
	if len(block) < 3 {
		t.Fatalf("signing.pem is not a PEM key: %d lines", len(block))
	}
	// The base64 body of the PEM is the canary; also its raw DER bytes, base64-encoded the way
	// a Secret manifest would carry them.
	canaries := []string{block[1], base64.StdEncoding.EncodeToString(key)}

	var haystacks []string
	haystacks = append(haystacks, strings.Join(progress.lines, "\n"), log.String(), fmt.Sprintf("%+v", sum))
	err = filepath.WalkDir(b.StateDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		haystacks = append(haystacks, p+"\n"+string(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range haystacks {
		for _, c := range canaries {
			if strings.Contains(h, c) {
				t.Errorf("the JWT private key leaked into %s", strings.SplitN(h, "\n", 2)[0])
			}
		}
	}
	if _, err := occdev.Down(ctx, occdev.DownOptions{StateDir: b.StateDir}); err != nil {
		t.Fatalf("down: %v", err)
	}
}

// An object with a name up needs already exists and belongs to someone else: up refuses it,
// rolls back what it made, and leaves the other object exactly as it was.
func TestForeignObjectIsRefusedNotAdopted(t *testing.T) {
	b := newBed(t)
	ctx := context.Background()
	foreign, err := b.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: b.Namespace}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = occdev.Up(ctx, b.Options())
	if err == nil || !strings.Contains(err.Error(), "already exists and is not owned by this development state") {
		t.Fatalf("up over a foreign namespace: %v", err)
	}
	got, err := b.Client.CoreV1().Namespaces().Get(ctx, b.Namespace, metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp != nil || got.ResourceVersion != foreign.ResourceVersion {
		t.Fatalf("the foreign namespace was touched: %v", err)
	}
	if _, err := os.Stat(b.StateDir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("state directory kept: %v", err)
	}
}

// Someone deletes one object and replaces another behind occ's back: status reports them as
// missing and changed, and down removes the rest while leaving the replacement alone.
func TestStatusAndDownAfterObjectsChangedBehindOCC(t *testing.T) {
	b := newBed(t)
	ctx := context.Background()
	if _, err := occdev.Up(ctx, b.Options()); err != nil {
		t.Fatalf("up: %v", err)
	}
	policies := b.Client.NetworkingV1().NetworkPolicies(b.Namespace)
	if err := policies.Delete(ctx, "openclaw-enterprise-openshell-egress", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	secrets := b.Client.CoreV1().Secrets(b.Namespace)
	if err := secrets.Delete(ctx, occdev.GatewayJWTSecretName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	replacement, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: occdev.GatewayJWTSecretName}, StringData: map[string]string{"k": "someone else's"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	status, err := occdev.GetStatus(ctx, occdev.StatusOptions{StateDir: b.StateDir})
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]state.Liveness{}
	for _, o := range status.Objects {
		states[o.Kind+"/"+o.Name] = o.State
		if o.Type == helmrelease.TypeRelease {
			states["HelmRelease/"+o.Name] = o.State
		}
	}
	if states["NetworkPolicy/openclaw-enterprise-openshell-egress"] != state.Missing {
		t.Errorf("deleted NetworkPolicy reported %q, want missing", states["NetworkPolicy/openclaw-enterprise-openshell-egress"])
	}
	if states["Secret/"+occdev.GatewayJWTSecretName] != state.Changed {
		t.Errorf("replaced Secret reported %q, want changed", states["Secret/"+occdev.GatewayJWTSecretName])
	}
	if states["HelmRelease/"+occdev.GatewayRelease] != state.Present || states["RuntimeClass/"+occdev.RuntimeClassName] != state.Present {
		t.Errorf("untouched objects not present: %v", states)
	}

	if _, err := occdev.Down(ctx, occdev.DownOptions{StateDir: b.StateDir}); err != nil {
		t.Fatalf("down: %v", err)
	}
	got, err := secrets.Get(ctx, occdev.GatewayJWTSecretName, metav1.GetOptions{})
	if err != nil || got.UID != replacement.UID {
		t.Errorf("down removed the replacement Secret it did not create: %v", err)
	}
}

// A developer whose OCE runs in Compose gets the Gateway on the fixed NodePort 30051, and the
// Installation points the drivers at the node and a mounted kubeconfig.
func TestComposeProfilePublishesTheNodePort(t *testing.T) {
	b := newBed(t)
	ctx := context.Background()
	node, err := b.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + b.Suffix}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.7"}}
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	if _, err := b.Client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Client.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}) })

	opts := b.Options()
	opts.ControlPlane = occdev.ControlPlaneCompose
	sum, err := occdev.Up(ctx, opts)
	if err != nil {
		t.Fatalf("up: %v", err)
	}
	svc, err := b.Client.CoreV1().Services(b.Namespace).Get(ctx, occdev.GatewayServiceName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.Type != corev1.ServiceTypeNodePort || svc.Spec.Ports[0].NodePort != occdev.GatewayNodePort {
		t.Errorf("Gateway Service %s with nodePort %d, want NodePort %d", svc.Spec.Type, svc.Spec.Ports[0].NodePort, occdev.GatewayNodePort)
	}
	if sum.GatewayEndpoint != "http://192.0.2.7:30051" {
		t.Errorf("Installation endpoint %q, want the node's NodePort", sum.GatewayEndpoint)
	}
	data, err := os.ReadFile(sum.Installation)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mode: kubeconfig", "kubeconfigPath: /run/openclaw-development/kubeconfig"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("Installation lacks %q", want)
		}
	}
	if _, err := occdev.Down(ctx, occdev.DownOptions{StateDir: b.StateDir}); err != nil {
		t.Fatalf("down: %v", err)
	}
}
