package testbed

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// MarkPodReady plays the kubelet, which the test bed does not have: it sets the Pod's phase to
// Running and its Ready condition to True through the status subresource.
func MarkPodReady(ctx context.Context, t testing.TB, c kubernetes.Interface, namespace, name string) {
	t.Helper()
	pod, err := c.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("testbed: get Pod %s/%s: %v", namespace, name, err)
	}
	SetPodReady(pod)
	if _, err := c.CoreV1().Pods(namespace).UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("testbed: mark Pod %s/%s ready: %v", namespace, name, err)
	}
}

// SetPodReady changes pod in memory the way a kubelet reports a started, ready Pod.
func SetPodReady(pod *corev1.Pod) {
	now := metav1.Now()
	pod.Status.Phase = corev1.PodRunning
	pod.Status.StartTime = &now
	conds := []corev1.PodCondition{}
	for _, c := range pod.Status.Conditions {
		if c.Type != corev1.PodReady && c.Type != corev1.ContainersReady {
			conds = append(conds, c)
		}
	}
	pod.Status.Conditions = append(conds,
		corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
	)
}

// PlayKubelet marks every Pod created in namespace Ready, as a kubelet would once it started
// the containers, until ctx ends. The watch starts before PlayKubelet returns, so no Pod created
// afterwards is missed.
func PlayKubelet(ctx context.Context, t testing.TB, c kubernetes.Interface, namespace string) {
	t.Helper()
	w, err := c.CoreV1().Pods(namespace).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("testbed: watch Pods in %s: %v", namespace, err)
	}
	go func() {
		defer w.Stop()
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type != watch.Added {
				continue
			}
			SetPodReady(p)
			if _, err := c.CoreV1().Pods(namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil && !apierrors.IsNotFound(err) {
				t.Errorf("testbed kubelet: mark Pod %s/%s ready: %v", namespace, p.Name, err)
			}
		}
	}()
}
