package compute

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/openclaw/occ/internal/kube"
)

// PodWait says which Harness Pod to wait for and how long.
type PodWait struct {
	Namespace string
	// Selector matches exactly one revision's Harness Pods (RevisionFile.HarnessSelector).
	Selector string
	// Timeout bounds the wait; zero means DefaultPodReadyTimeout.
	Timeout time.Duration
}

// DefaultPodReadyTimeout is how long Compute waits for a provider-owned Harness Pod to become
// Ready. It covers image pulls on a cold node; a Pod that needs longer is reported, not
// silently waited on forever.
const DefaultPodReadyTimeout = 5 * time.Minute

// WaitForHarnessPod waits until a Pod matching the revision's labels is Ready and returns it.
// It lists and then watches from the list's resourceVersion (no polling, and no event between
// the two is missed); a dropped watch is resumed. Each Pod it sees, and each phase change, is
// reported through note, so a slow start shows where it is stuck.
func WaitForHarnessPod(ctx context.Context, c kubernetes.Interface, w PodWait, note func(string)) (*corev1.Pod, error) {
	timeout := w.Timeout
	if timeout <= 0 {
		timeout = DefaultPodReadyTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = w.Selector
			return c.CoreV1().Pods(w.Namespace).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = w.Selector
			return c.CoreV1().Pods(w.Namespace).Watch(ctx, o)
		},
	}
	seen := map[string]string{} // Pod name → last reported state
	var last string
	var ready *corev1.Pod
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Pod{}, nil, func(ev watch.Event) (bool, error) {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			return false, nil
		}
		if ev.Type == watch.Deleted {
			if _, known := seen[p.Name]; known && note != nil {
				note(fmt.Sprintf("Pod %s deleted", p.Name))
			}
			delete(seen, p.Name)
			return false, nil
		}
		state := podState(p)
		last = fmt.Sprintf("Pod %s %s", p.Name, state)
		if seen[p.Name] != state {
			seen[p.Name] = state
			if note != nil {
				note(last)
			}
		}
		if kube.PodReady(p) {
			ready = p
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, watchtools.ErrWatchClosed) || errors.Is(err, context.DeadlineExceeded) {
			if last == "" {
				last = "no Pod with these labels appeared"
			}
			return nil, fmt.Errorf("wait for the Harness Pod (labels %s) in namespace %s: not Ready within %s (last seen: %s); check the Sandbox with `occ sandbox status` and the Pod's events: %w",
				w.Selector, w.Namespace, timeout, last, kube.ErrWaitTimeout)
		}
		return nil, fmt.Errorf("wait for the Harness Pod (labels %s) in namespace %s: %w", w.Selector, w.Namespace, err)
	}
	return ready, nil
}

// podState summarises a Pod's phase and readiness for progress lines and status output.
func podState(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return "terminating"
	}
	phase := string(p.Status.Phase)
	if phase == "" {
		phase = "Pending"
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodReady {
			s := fmt.Sprintf("phase %s, Ready=%s", phase, cond.Status)
			if cond.Status != corev1.ConditionTrue && cond.Reason != "" {
				s += " (" + cond.Reason + ")"
			}
			return s
		}
	}
	return "phase " + phase + ", Ready=Unknown"
}
