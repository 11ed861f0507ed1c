package kubeobj_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/testbed"
)

// A kind whose CRD became Established after the connection last read the apiserver's discovery
// (a route applied right after the routing controllers' CRDs) is created all the same: the
// connection's kind mapping is refreshed, not trusted stale.
func TestEnsureAKindServedSinceTheMappingWasRead(t *testing.T) {
	ctx := context.Background()
	kc := testbed.Client(t)
	ns := "kubeobj-" + suffix(t)
	if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := kubeobj.Connect(access(t), kubeobj.Options{Owner: "owner-served", Recorder: &checkingRecorder{t: t, kube: kc}})
	if err != nil {
		t.Fatal(err)
	}
	// The mapping reads discovery now, before the kind exists.
	if _, err := c.Ensure(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "first", Namespace: ns}}, kubeobj.Converge); err != nil {
		t.Fatal(err)
	}
	group := "served" + suffix(t) + ".occ.test"
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "widgets." + group},
		"spec": map[string]any{"group": group, "scope": "Namespaced",
			"names":    map[string]any{"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true, "schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}},
	}}
	dyn := dynamic.NewForConfigOrDie(testbed.Config(t))
	crds := dyn.Resource(apiextv1.SchemeGroupVersion.WithResource("customresourcedefinitions"))
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = crds.Delete(context.Background(), crd.GetName(), metav1.DeleteOptions{}) })
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := crds.Get(ctx, crd.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, raw := range conds {
			if m, _ := raw.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Fatal(err)
	}
	widget := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "Widget", "metadata": map[string]any{"name": "w", "namespace": ns}}}
	if _, err := c.Ensure(ctx, widget, kubeobj.Converge); err != nil {
		t.Fatalf("Ensure of a kind served since the mapping was read: %v", err)
	}
	if _, err := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}).Namespace(ns).Get(ctx, "w", metav1.GetOptions{}); err != nil {
		t.Errorf("the widget: %v", err)
	}
}
