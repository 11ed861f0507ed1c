package kube

import (
	"context"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// WatchNewPods guards an operation that creates workloads and waits for them itself (a Helm
// install with its hook Jobs and --wait): it watches the Pods and Jobs that appear in namespace
// from now on, with the Events about those Pods, by the same rules as WaitForWorkload. It
// returns once its watches hold their first list, so everything created afterwards is new to
// it; wait then blocks until one of the new Pods or Jobs is stuck, and returns that
// *StuckError (Workload is what), or until ctx ends, and returns nil.
func WatchNewPods(ctx context.Context, c kubernetes.Interface, namespace, what string, o WaitOptions) (wait func() error, err error) {
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	ob := &observer{w: Workload{Namespace: namespace}, changed: make(chan struct{}, 1)}
	pods := c.CoreV1().Pods(namespace)
	ob.pods = ob.inform(ctx, listWatch(pods.List, pods.Watch, ""), &corev1.Pod{})
	events := c.CoreV1().Events(namespace)
	ob.events = ob.inform(ctx, listWatch(events.List, events.Watch, fields.OneTermEqualSelector("involvedObject.kind", "Pod").String()), &corev1.Event{})
	jobs := c.BatchV1().Jobs(namespace)
	ob.workload = ob.inform(ctx, listWatch(jobs.List, jobs.Watch, ""), &batchv1.Job{})
	if !cache.WaitForCacheSync(ctx.Done(), ob.synced...) {
		return func() error { return nil }, waitEnded(ctx, "the watches of namespace "+namespace, ob.withError("nothing read yet"))
	}
	old := map[types.UID]bool{}
	for _, store := range []cache.Store{ob.pods, ob.workload} {
		for _, item := range store.List() {
			if m, ok := item.(interface{ GetUID() types.UID }); ok {
				old[m.GetUID()] = true
			}
		}
	}
	return func() error {
		mountFailures := map[types.UID]time.Time{}
		for {
			if e := ob.judgeNew(old, time.Now(), mountFailures, o.Grace); e != nil {
				e.Workload = what
				if e.LogContainer != "" {
					e.readLog(ctx, c, namespace)
				}
				return e
			}
			select {
			case <-ctx.Done():
				return nil
			case <-ob.changed:
			case <-time.After(recheck):
			}
		}
	}, nil
}

// judgeNew judges the Jobs and Pods that are not old.
func (ob *observer) judgeNew(old map[types.UID]bool, now time.Time, mountFailures map[types.UID]time.Time, grace time.Duration) *StuckError {
	var events []*corev1.Event
	for _, item := range ob.events.List() {
		if ev, ok := item.(*corev1.Event); ok {
			events = append(events, ev)
		}
	}
	for _, item := range ob.workload.List() {
		if j, ok := item.(*batchv1.Job); ok && !old[j.UID] {
			if e := jobFailed(j, ob.podsOf(j.Spec.Selector, j.Namespace, nil)); e != nil {
				return e
			}
		}
	}
	for _, item := range ob.pods.List() {
		p, ok := item.(*corev1.Pod)
		if !ok || old[p.UID] {
			continue
		}
		if lastEvent(p, events, "FailedMount") != nil {
			if _, seen := mountFailures[p.UID]; !seen {
				mountFailures[p.UID] = now
			}
		}
		if e := podStuck(p, events, now, mountFailures[p.UID], grace); e != nil {
			return e
		}
	}
	return nil
}
