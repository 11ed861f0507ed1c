package kube

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// ErrWaitTimeout is wrapped by waits that end because their context ran out.
var ErrWaitTimeout = errors.New("timed out")

// PodReady reports whether the Pod's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// WaitForPod waits by watch (a list, then a watch from that list's resourceVersion, so no event
// is missed) until a Pod matching selector in namespace satisfies cond, and returns it.
func WaitForPod(ctx context.Context, c kubernetes.Interface, namespace, selector string, cond func(*corev1.Pod) bool) (*corev1.Pod, error) {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector
			return c.CoreV1().Pods(namespace).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return c.CoreV1().Pods(namespace).Watch(ctx, o)
		},
	}
	var found *corev1.Pod
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Pod{}, nil, func(ev watch.Event) (bool, error) {
		if ev.Type == watch.Deleted {
			return false, nil
		}
		p, ok := ev.Object.(*corev1.Pod)
		if ok && cond(p) {
			found = p
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return nil, waitError(ctx, fmt.Sprintf("Pod with labels %q in namespace %s", selector, namespace), err)
	}
	return found, nil
}

// WaitForNamedObject waits by watch until the named object of the list-watch's type satisfies
// cond. It serves Deployments, StatefulSets and anything else with a typed client.
func WaitForNamedObject(ctx context.Context, lw cache.ListerWatcher, example runtime.Object, what string, cond func(runtime.Object) bool) error {
	_, err := watchtools.UntilWithSync(ctx, lw, example, nil, func(ev watch.Event) (bool, error) {
		if ev.Type == watch.Deleted {
			return false, nil
		}
		return cond(ev.Object), nil
	})
	if err != nil {
		return waitError(ctx, what, err)
	}
	return nil
}

// WaitForDeploymentReady waits until the Deployment has rolled out, and ends early on a Pod
// that will not come up by itself (WaitForWorkload).
func WaitForDeploymentReady(ctx context.Context, c kubernetes.Interface, namespace, name string) error {
	return WaitForWorkload(ctx, c, Workload{Kind: "Deployment", Namespace: namespace, Name: name}, WaitOptions{})
}

// namedListWatch lists and watches the single object called name through a typed client's
// List and Watch methods.
func namedListWatch[L runtime.Object](name string, list func(context.Context, metav1.ListOptions) (L, error), watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) *cache.ListWatch {
	return listWatch(list, watchFn, fields.OneTermEqualSelector("metadata.name", name).String())
}

// DeploymentReady reports whether the Deployment has rolled out completely: the controller has
// seen its template, every replica is updated and available, and no old replica is left (the
// conditions of `kubectl rollout status`).
func DeploymentReady(d *appsv1.Deployment) bool {
	want := replicas(d.Spec.Replicas)
	s := d.Status
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas >= want && s.Replicas <= s.UpdatedReplicas && s.AvailableReplicas >= want
}

// StatefulSetReady reports whether every desired replica of the StatefulSet is ready.
func StatefulSetReady(s *appsv1.StatefulSet) bool {
	want := replicas(s.Spec.Replicas)
	return s.Status.ObservedGeneration >= s.Generation && s.Status.ReadyReplicas >= want
}

func waitError(ctx context.Context, what string, err error) error {
	// Ctrl-C (or a failed sibling lane) cancels the wait: that is no timeout, and says so.
	if errors.Is(ctx.Err(), context.Canceled) || (ctx.Err() == nil && errors.Is(err, context.Canceled)) {
		return fmt.Errorf("wait for %s: interrupted: %w", what, context.Canceled)
	}
	if ctx.Err() != nil || errors.Is(err, watchtools.ErrWatchClosed) || isTimeout(err) {
		return fmt.Errorf("wait for %s: %w (%v)", what, ErrWaitTimeout, err)
	}
	return fmt.Errorf("wait for %s: %w", what, err)
}

func isTimeout(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}
