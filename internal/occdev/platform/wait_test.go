package platform

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/occ/internal/kube"
	"github.com/openclaw/occ/internal/testbed"
)

func TestMain(m *testing.M) { os.Exit(testbed.Run(m)) }

// The Gateway's image was never imported into the node (pull policy Never): `up` stops waiting
// for the platform as soon as the kubelet says so, instead of after the startup timeout, and
// its progress notes named the workload it waited for.
func TestWaitForWorkloadsStopsOnAnImageNeverImported(t *testing.T) {
	testbed.ControllerManager(t)
	c := testbed.Client(t)
	ctx := context.Background()
	const ns = "platform-wait"
	if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	one := int32(1)
	labels := map[string]string{"app": "openshell-gateway"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "openshell-gateway", Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "gateway", Image: "ghcr.io/nvidia/openshell/gateway:0.1.3", ImagePullPolicy: corev1.PullNever}}}}}}
	if _, err := c.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var notes []string
	done := make(chan error, 1)
	go func() {
		done <- WaitForWorkloads(ctx, c, []Workload{{Kind: "Deployment", Namespace: ns, Name: "openshell-gateway"}}, 2*time.Minute,
			func(s string) { mu.Lock(); notes = append(notes, s); mu.Unlock() })
	}()
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	p, err := kube.WaitForPod(pctx, c, ns, "app=openshell-gateway", func(*corev1.Pod) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = corev1.PodPending
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "gateway", Image: p.Spec.Containers[0].Image,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull", Message: `Container image "ghcr.io/nvidia/openshell/gateway:0.1.3" is not present with pull policy of Never`}}}}
	reported := time.Now()
	if _, err := c.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = <-done
	t.Logf("time to error: %s; %v", time.Since(reported).Round(time.Millisecond), err)
	var se *kube.StuckError
	if !errors.As(err, &se) || se.Reason != "ErrImageNeverPull" || !strings.Contains(err.Error(), "Deployment platform-wait/openshell-gateway will not become ready") {
		t.Fatalf("err = %v, want the stuck Gateway named", err)
	}
	if time.Since(reported) > 10*time.Second {
		t.Errorf("the wait took %s to stop", time.Since(reported))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(notes) == 0 || !strings.HasPrefix(notes[0], "Deployment platform-wait/openshell-gateway: ") {
		t.Errorf("progress notes = %q, want them to name the workload", notes)
	}
}
