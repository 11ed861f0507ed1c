package kube_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/openclaw/occ/internal/kube"
	"github.com/openclaw/occ/internal/testbed"
)

func TestMain(m *testing.M) { os.Exit(testbed.Run(m)) }

func namespace(t *testing.T, name string) {
	t.Helper()
	c := testbed.Client(t)
	if _, err := c.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

// A rendered chart object is applied twice (idempotent), owned by the occ field manager, and
// a delete guarded by a stale uid leaves a recreated object alone.
func TestApplierApplyAndConditionalDelete(t *testing.T) {
	ctx := context.Background()
	namespace(t, "kube-apply")
	a, err := kube.NewApplier(testbed.Config(t))
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ServiceAccount",
		"metadata": map[string]any{"name": "workspace", "namespace": "kube-apply", "labels": map[string]any{"a": "b"}},
	}}
	first, err := a.Apply(ctx, obj)
	if err != nil {
		t.Fatal(err)
	}
	second, err := a.Apply(ctx, obj)
	if err != nil {
		t.Fatal(err)
	}
	if first.GetUID() != second.GetUID() || first.GetResourceVersion() != second.GetResourceVersion() {
		t.Fatalf("second apply changed the object: rv %s → %s", first.GetResourceVersion(), second.GetResourceVersion())
	}
	if m := second.GetManagedFields(); len(m) != 1 || m[0].Manager != kube.FieldManager {
		t.Fatalf("managed fields = %+v, want one entry by %q", m, kube.FieldManager)
	}
	if ns, err := a.Namespaced(obj); err != nil || !ns {
		t.Fatalf("ServiceAccount namespaced = %v, %v", ns, err)
	}
	if err := a.Delete(ctx, obj, types.UID("not-the-recorded-uid")); err == nil {
		t.Fatal("delete with a stale uid succeeded; want a precondition failure")
	}
	if _, err := a.Get(ctx, obj); err != nil {
		t.Fatalf("object gone after a refused delete: %v", err)
	}
	if err := a.Delete(ctx, obj, first.GetUID()); err != nil {
		t.Fatal(err)
	}
	if err := a.Delete(ctx, obj, first.GetUID()); err != nil {
		t.Fatalf("repeated delete: %v", err)
	}
}

// The Harness Pod becomes Ready after the wait started; the watch sees it without polling.
func TestWaitForPodSeesReadinessByWatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	namespace(t, "kube-wait")
	c := testbed.Client(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "harness", Namespace: "kube-wait", Labels: map[string]string{"app": "harness"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/x:1"}}}}
	if _, err := c.CoreV1().Pods("kube-wait").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		close(started)
		_, err := kube.WaitForPod(ctx, c, "kube-wait", "app=harness", kube.PodReady)
		done <- err
	}()
	<-started
	testbed.MarkPodReady(ctx, t, c, "kube-wait", "harness")
	if err := <-done; err != nil {
		t.Fatalf("wait: %v", err)
	}
}

// A Deployment that never becomes available ends the wait with a timeout naming it and saying
// what was last seen: the ready replicas and the newest Pod's phase and age.
func TestWaitForDeploymentTimesOutClearly(t *testing.T) {
	testbed.ControllerManager(t)
	namespace(t, "kube-deploy")
	c := testbed.Client(t)
	one := int32(1)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "gw", Namespace: "kube-deploy"},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/x:1"}}}}}}
	if _, err := c.AppsV1().Deployments("kube-deploy").Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The wait's bound starts once the Pod exists, so the timeout has a Pod to describe.
	wctx, wcancel := context.WithTimeout(context.Background(), time.Minute)
	defer wcancel()
	if _, err := kube.WaitForPod(wctx, c, "kube-deploy", "a=b", func(*corev1.Pod) bool { return true }); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := kube.WaitForDeploymentReady(ctx, c, "kube-deploy", "gw")
	if err == nil {
		t.Fatal("wait succeeded for a Deployment nobody rolled out")
	}
	if !errors.Is(err, kube.ErrWaitTimeout) {
		t.Fatalf("err = %v, want ErrWaitTimeout", err)
	}
	for _, want := range []string{"Deployment kube-deploy/gw", "last seen: 0/1 ready", "newest Pod gw-", "Pending (not scheduled yet) for "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("timeout does not say %q: %v", want, err)
		}
	}
}

// Ctrl-C during the same wait is no timeout: it says it was interrupted and carries the
// cancellation, never ErrWaitTimeout.
func TestAnInterruptedWaitSaysSo(t *testing.T) {
	namespace(t, "kube-interrupt")
	c := testbed.Client(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := kube.WaitForDeploymentReady(ctx, c, "kube-interrupt", "gw")
	if !errors.Is(err, context.Canceled) || errors.Is(err, kube.ErrWaitTimeout) || !strings.Contains(err.Error(), "interrupted") || strings.Contains(err.Error(), "timed out") {
		t.Fatalf("err = %v, want an interruption, not a timeout", err)
	}
}

// RESTConfig honours an explicit kubeconfig and context, and names both when they are wrong.
func TestRESTConfigFromKubeconfig(t *testing.T) {
	path := testbed.Kubeconfig(t)
	if _, err := kube.RESTConfig(path, ""); err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	_, err := kube.RESTConfig(path, "no-such-context")
	if err == nil {
		t.Fatal("unknown context accepted")
	}
	if want := "no-such-context"; !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q does not name the context", err)
	}
	if _, err := kube.RESTConfig(filepath.Join(t.TempDir(), "missing"), ""); err == nil {
		t.Fatal("missing kubeconfig accepted")
	}
}
