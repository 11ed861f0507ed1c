package kube

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Workload is a Deployment, StatefulSet or Job a wait waits for.
type Workload struct {
	Kind, Namespace, Name string
}

func (w Workload) String() string { return fmt.Sprintf("%s %s/%s", w.Kind, w.Namespace, w.Name) }

// WaitOptions tune WaitForWorkload; the zero value is ready to use.
type WaitOptions struct {
	// Status, when set, receives one line saying what the wait sees (ready replicas, the
	// newest Pod's phase and age) whenever that changes, and again every StatusEvery while it
	// does not, so a long wait shows what it waits for.
	Status func(string)
	// StatusEvery is how often an unchanged status is repeated; DefaultStatusEvery when zero.
	StatusEvery time.Duration
	// Grace is how long a Pod's mount must keep failing, or a Pod stay unschedulable, before
	// the wait gives up; DefaultGrace when zero.
	Grace time.Duration
}

// DefaultStatusEvery is how often a wait repeats a status that has not changed.
const DefaultStatusEvery = 30 * time.Second

// recheck is how often a wait judges again without news, for the judgements that depend on
// time passing (a mount failure's grace, the age in the status).
const recheck = time.Second

// WaitForWorkload waits, by watch, until the workload is ready: a Deployment rolled out (every
// replica updated and available, no old one left), a StatefulSet with every replica ready, a Job
// complete. It watches the workload's current Pods and the Events about them as well, and ends
// early with a *StuckError when one of them reaches a state that does not recover by itself
// (an image the node cannot get, a crash loop, a missing Secret or ConfigMap key, no node that
// can run it, a mount that keeps failing, a failed Job). A Pod that is merely slow (created,
// initializing, running and not ready yet) keeps the wait going until ctx ends; a timeout then
// says what was last seen and wraps ErrWaitTimeout.
func WaitForWorkload(ctx context.Context, c kubernetes.Interface, w Workload, o WaitOptions) error {
	if o.StatusEvery <= 0 {
		o.StatusEvery = DefaultStatusEvery
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	ob, err := observe(wctx, c, w)
	if err != nil {
		return err
	}
	// Judge only once every informer holds its first list: a Pod judged before the Events
	// about it arrive could look fine, or a workload look absent, for no reason but timing.
	if !cache.WaitForCacheSync(ctx.Done(), ob.synced...) {
		return waitEnded(ctx, w.String(), ob.withError("nothing read yet"))
	}
	mountFailures := map[types.UID]time.Time{}
	var reported string
	var reportedAt time.Time
	last := "nothing read yet"
	for {
		now := time.Now()
		l := ob.judge(now, mountFailures, o.Grace)
		if l.ready {
			return nil
		}
		if l.stuck != nil {
			l.stuck.Workload = w.String()
			if l.stuck.LogContainer != "" {
				l.stuck.readLog(ctx, c, w.Namespace)
			}
			return l.stuck
		}
		last = l.status
		if o.Status != nil && (l.key != reported || now.Sub(reportedAt) >= o.StatusEvery) {
			o.Status(l.status)
			reported, reportedAt = l.key, now
		}
		select {
		case <-ctx.Done():
			return waitEnded(ctx, w.String(), last)
		case <-ob.changed:
		case <-time.After(recheck):
		}
	}
}

// waitEnded is the error of a wait whose context ended: an interruption, or a timeout that
// says what was last seen.
func waitEnded(ctx context.Context, what, last string) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return fmt.Errorf("wait for %s: interrupted: %w", what, context.Canceled)
	}
	return fmt.Errorf("wait for %s (last seen: %s): %w", what, last, ErrWaitTimeout)
}

// observer holds what the informers of one wait have seen.
type observer struct {
	w                          Workload
	workload, pods, events, rs cache.Store
	changed                    chan struct{}
	synced                     []cache.InformerSynced

	mu      sync.Mutex
	lastErr error
}

// observe starts the informers of one wait: the workload by name, and the Pods, the Events
// about Pods and (for a Deployment) the ReplicaSets of its namespace. They run until ctx ends.
func observe(ctx context.Context, c kubernetes.Interface, w Workload) (*observer, error) {
	ob := &observer{w: w, changed: make(chan struct{}, 1)}
	switch w.Kind {
	case "Deployment":
		api := c.AppsV1().Deployments(w.Namespace)
		ob.workload = ob.inform(ctx, namedListWatch(w.Name, api.List, api.Watch), &appsv1.Deployment{})
		sets := c.AppsV1().ReplicaSets(w.Namespace)
		ob.rs = ob.inform(ctx, listWatch(sets.List, sets.Watch, ""), &appsv1.ReplicaSet{})
	case "StatefulSet":
		api := c.AppsV1().StatefulSets(w.Namespace)
		ob.workload = ob.inform(ctx, namedListWatch(w.Name, api.List, api.Watch), &appsv1.StatefulSet{})
	case "Job":
		api := c.BatchV1().Jobs(w.Namespace)
		ob.workload = ob.inform(ctx, namedListWatch(w.Name, api.List, api.Watch), &batchv1.Job{})
	default:
		return nil, fmt.Errorf("wait for %s: a wait serves Deployments, StatefulSets and Jobs, not %s (a bug in occ)", w, w.Kind)
	}
	pods := c.CoreV1().Pods(w.Namespace)
	ob.pods = ob.inform(ctx, listWatch(pods.List, pods.Watch, ""), &corev1.Pod{})
	events := c.CoreV1().Events(w.Namespace)
	ob.events = ob.inform(ctx, listWatch(events.List, events.Watch, fields.OneTermEqualSelector("involvedObject.kind", "Pod").String()), &corev1.Event{})
	return ob, nil
}

// inform runs an informer over lw until ctx ends; every change pokes the wait, and a failed
// list or watch is kept for the status (the informer retries it).
func (ob *observer) inform(ctx context.Context, lw cache.ListerWatcher, example runtime.Object) cache.Store {
	inf := cache.NewSharedIndexInformer(lw, example, 0, cache.Indexers{})
	_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		ob.mu.Lock()
		ob.lastErr = err
		ob.mu.Unlock()
		ob.poke()
	})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { ob.poke() },
		UpdateFunc: func(any, any) { ob.poke() },
		DeleteFunc: func(any) { ob.poke() },
	})
	go inf.RunWithContext(ctx)
	ob.synced = append(ob.synced, inf.HasSynced)
	return inf.GetStore()
}

func (ob *observer) poke() {
	select {
	case ob.changed <- struct{}{}:
	default:
	}
}

// listWatch lists and watches through a typed client's List and Watch methods, with an
// optional field selector.
func listWatch[L runtime.Object](list func(context.Context, metav1.ListOptions) (L, error), watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error), fieldSelector string) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = fieldSelector
			return list(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = fieldSelector
			return watchFn(ctx, o)
		},
	}
}

// look is one judgement of a wait: ready, stuck, or a status saying what it waits for (key is
// the status without ages, to tell a change from time passing).
type look struct {
	ready       bool
	stuck       *StuckError
	status, key string
}

// judge looks at everything the informers hold at now. mountFailures remembers when a Pod's
// mount was first seen failing, across looks.
func (ob *observer) judge(now time.Time, mountFailures map[types.UID]time.Time, grace time.Duration) look {
	var obj runtime.Object
	if items := ob.workload.List(); len(items) > 0 {
		obj, _ = items[0].(runtime.Object)
	}
	if obj == nil {
		s := ob.w.Kind + " not created yet"
		return look{status: ob.withError(s), key: s}
	}
	var events []*corev1.Event
	for _, e := range ob.events.List() {
		if ev, ok := e.(*corev1.Event); ok {
			events = append(events, ev)
		}
	}
	ready, counts, current := ob.workloadState(obj)
	if ready {
		return look{ready: true}
	}
	if j, ok := obj.(*batchv1.Job); ok {
		if e := jobFailed(j, current); e != nil {
			return look{stuck: e}
		}
	}
	sort.Slice(current, func(i, k int) bool { return current[i].CreationTimestamp.Before(&current[k].CreationTimestamp) })
	for _, p := range current {
		if lastEvent(p, events, "FailedMount") != nil {
			if _, seen := mountFailures[p.UID]; !seen {
				mountFailures[p.UID] = now
			}
		}
		if e := podStuck(p, events, now, mountFailures[p.UID], grace); e != nil {
			return look{stuck: e}
		}
	}
	key, status := counts+"; no Pod yet", counts+"; no Pod yet"
	if n := len(current); n > 0 {
		p := current[n-1]
		state := podPhase(p)
		if m := lastEvent(p, events, "FailedMount"); m != nil && !podStarted(p) && !movedOn(p, events, eventLast(m)) {
			state += fmt.Sprintf(", a volume mount failing (FailedMount: %s)", m.Message)
		}
		key = fmt.Sprintf("%s; newest Pod %s %s", counts, p.Name, state)
		status = fmt.Sprintf("%s for %s", key, now.Sub(p.CreationTimestamp.Time).Round(time.Second))
	}
	return look{status: ob.withError(status), key: key}
}

// withError adds the informers' last list or watch error to a status.
func (ob *observer) withError(status string) string {
	ob.mu.Lock()
	defer ob.mu.Unlock()
	if ob.lastErr != nil {
		return fmt.Sprintf("%s; last error reading it: %v", status, ob.lastErr)
	}
	return status
}

// workloadState says whether obj is ready, counts its replicas for the status, and picks its
// current Pods: those of the template it rolls out now (a rollout's old Pods are on their way
// out, whatever state they are in), all of a Job's.
func (ob *observer) workloadState(obj runtime.Object) (ready bool, counts string, current []*corev1.Pod) {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		want := replicas(o.Spec.Replicas)
		counts = fmt.Sprintf("%d/%d ready, %d/%d updated", o.Status.ReadyReplicas, want, o.Status.UpdatedReplicas, want)
		if o.Status.ObservedGeneration < o.Generation {
			return false, counts + " (the new template is not observed yet)", nil
		}
		if DeploymentReady(o) {
			return true, counts, nil
		}
		if hash := ob.newReplicaSetHash(o); hash != "" {
			current = ob.podsOf(o.Spec.Selector, o.Namespace, map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: hash})
		}
		return false, counts, current
	case *appsv1.StatefulSet:
		want := replicas(o.Spec.Replicas)
		counts = fmt.Sprintf("%d/%d ready", o.Status.ReadyReplicas, want)
		if o.Status.ObservedGeneration < o.Generation {
			return false, counts + " (the new template is not observed yet)", nil
		}
		if StatefulSetReady(o) {
			return true, counts, nil
		}
		var revision map[string]string
		if o.Status.UpdateRevision != "" {
			revision = map[string]string{appsv1.StatefulSetRevisionLabel: o.Status.UpdateRevision}
		}
		return false, counts, ob.podsOf(o.Spec.Selector, o.Namespace, revision)
	case *batchv1.Job:
		counts = fmt.Sprintf("%d succeeded, %d active, %d failed", o.Status.Succeeded, o.Status.Active, o.Status.Failed)
		for _, c := range o.Status.Conditions {
			if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
				return true, counts, nil
			}
		}
		return false, counts, ob.podsOf(o.Spec.Selector, o.Namespace, nil)
	}
	return false, "unknown", nil
}

// newReplicaSetHash is the pod-template-hash of the Deployment's ReplicaSet for its current
// revision (the one the Deployment controller scales up), or "" before it exists.
func (ob *observer) newReplicaSetHash(d *appsv1.Deployment) string {
	const revision = "deployment.kubernetes.io/revision"
	want := d.Annotations[revision]
	var newest *appsv1.ReplicaSet
	for _, item := range ob.rs.List() {
		rs, ok := item.(*appsv1.ReplicaSet)
		if !ok || !metav1.IsControlledBy(rs, d) {
			continue
		}
		if want != "" && rs.Annotations[revision] == want {
			return rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
		}
		if newest == nil || newest.CreationTimestamp.Before(&rs.CreationTimestamp) {
			newest = rs
		}
	}
	// A revision no ReplicaSet seen yet carries is a new one on its way: judging the newest
	// seen would judge the old Pods. Only a Deployment without revisions falls back to it.
	if newest == nil || want != "" {
		return ""
	}
	return newest.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
}

// podsOf are the Pods of the namespace that selector and the extra labels match.
func (ob *observer) podsOf(selector *metav1.LabelSelector, namespace string, extra map[string]string) []*corev1.Pod {
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil || sel.Empty() {
		return nil
	}
	var pods []*corev1.Pod
	for _, item := range ob.pods.List() {
		p, ok := item.(*corev1.Pod)
		if !ok || p.Namespace != namespace || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		if extra != nil && !labels.SelectorFromSet(extra).Matches(labels.Set(p.Labels)) {
			continue
		}
		pods = append(pods, p)
	}
	return pods
}

// podPhase is a Pod's phase with what holds it: "Pending (ContainerCreating)", "Running, not
// ready", "Pending (not scheduled yet)".
func podPhase(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return "Terminating"
	}
	phase := string(p.Status.Phase)
	if phase == "" {
		phase = string(corev1.PodPending)
	}
	for _, s := range p.Status.InitContainerStatuses {
		if w := s.State.Waiting; w != nil && w.Reason != "" {
			return fmt.Sprintf("%s (init container %s: %s)", phase, s.Name, w.Reason)
		}
		if s.State.Running != nil {
			return fmt.Sprintf("%s (init container %s running)", phase, s.Name)
		}
	}
	for _, s := range p.Status.ContainerStatuses {
		if w := s.State.Waiting; w != nil && w.Reason != "" {
			return fmt.Sprintf("%s (%s)", phase, w.Reason)
		}
	}
	if p.Status.Phase == corev1.PodRunning && !PodReady(p) {
		return phase + ", not ready"
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return fmt.Sprintf("%s (unschedulable: %s)", phase, strings.TrimSuffix(strings.TrimSpace(c.Message), "."))
		}
	}
	if p.Spec.NodeName == "" && !scheduled(p) {
		return phase + " (not scheduled yet)"
	}
	return phase
}

func scheduled(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

// readLog fills the log tail of the StuckError's container, or says why it could not be read.
// It runs on its own short bound: the wait's context may be about to end, and the log is what
// explains the failure.
func (e *StuckError) readLog(ctx context.Context, c kubernetes.Interface, namespace string) {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	n := int64(LogTailLines)
	raw, err := c.CoreV1().Pods(namespace).GetLogs(e.logPod, &corev1.PodLogOptions{Container: e.LogContainer, TailLines: &n, Previous: e.Previous}).DoRaw(lctx)
	if err != nil {
		e.LogError = strings.TrimSpace(err.Error())
		return
	}
	e.LogTail = logTail(raw, LogTailLines)
}
