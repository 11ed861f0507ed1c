// Package podlogs reads the container logs of a Kubernetes workload (a Deployment, StatefulSet,
// DaemonSet or Job) through the API server's pods/log subresource, the way `kubectl logs` does
// for one Pod, for every Pod of the workload at once: every container of every Pod, and with
// Follow every container run that starts later (a restarted container, a Pod a rollout or a
// deletion replaces).
package podlogs

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// The workload kinds whose Pods have logs.
const (
	KindDeployment  = "Deployment"
	KindStatefulSet = "StatefulSet"
	KindDaemonSet   = "DaemonSet"
	KindJob         = "Job"
)

// Kinds are the workload kinds, with the API group version of each.
var Kinds = map[string]string{KindDeployment: "apps/v1", KindStatefulSet: "apps/v1", KindDaemonSet: "apps/v1", KindJob: "batch/v1"}

// Workload names one workload.
type Workload struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (w Workload) String() string { return fmt.Sprintf("%s %s/%s", w.Kind, w.Namespace, w.Name) }

// Options are the inputs of Stream, read as `kubectl logs` reads its flags.
type Options struct {
	// Follow keeps reading until ctx ends, and reads every container run that starts meanwhile
	// from its first line.
	Follow bool
	// SinceSeconds or SinceTime (at most one) drop older lines of the runs found at the start.
	SinceSeconds int64
	SinceTime    time.Time
	// Tail is how many of each container's last lines to show first; negative means all.
	Tail int
	// Timestamps puts the kubelet's RFC 3339 timestamp in front of each line.
	Timestamps bool
	// Output returns where the lines of one container of a Pod go; multi says the Pod has more
	// than one container (init containers included). Stream closes it when the run's log ends.
	Output func(pod, container string, multi bool) io.WriteCloser
	// Note receives what keeps a container's log from being read (it has not started), once
	// per container run; nil drops the notes.
	Note func(string)
}

// Pods lists the workload's Pods (sorted by creation), and its label selector.
func Pods(ctx context.Context, kc kubernetes.Interface, w Workload) (*corev1.PodList, string, error) {
	sel, err := Selector(ctx, kc, w)
	if err != nil {
		return nil, "", err
	}
	list, err := kc.CoreV1().Pods(w.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, "", fmt.Errorf("list the Pods of %s: %w", w, err)
	}
	slices.SortFunc(list.Items, func(a, b corev1.Pod) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.Name, b.Name))
	})
	return list, sel, nil
}

// Selector reads the workload's Pod selector.
func Selector(ctx context.Context, kc kubernetes.Interface, w Workload) (string, error) {
	var sel *metav1.LabelSelector
	var err error
	switch w.Kind {
	case KindDeployment:
		obj, gerr := kc.AppsV1().Deployments(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
		if err = gerr; err == nil {
			sel = obj.Spec.Selector
		}
	case KindStatefulSet:
		obj, gerr := kc.AppsV1().StatefulSets(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
		if err = gerr; err == nil {
			sel = obj.Spec.Selector
		}
	case KindDaemonSet:
		obj, gerr := kc.AppsV1().DaemonSets(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
		if err = gerr; err == nil {
			sel = obj.Spec.Selector
		}
	case KindJob:
		obj, gerr := kc.BatchV1().Jobs(w.Namespace).Get(ctx, w.Name, metav1.GetOptions{})
		if err = gerr; err == nil {
			sel = obj.Spec.Selector
		}
	default:
		return "", fmt.Errorf("%s: not a workload kind with Pods (Deployment, StatefulSet, DaemonSet or Job)", w)
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", w, err)
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return "", fmt.Errorf("the Pod selector of %s: %w", w, err)
	}
	if s.Empty() {
		return "", fmt.Errorf("%s selects every Pod of its namespace; refusing to read them all", w)
	}
	return s.String(), nil
}

// run is one run of one container: a container restarts under a new restart count.
type run struct {
	pod       string
	uid       string
	container string
	restarts  int32
}

// Stream writes the logs of every container of the workload's Pods: init containers first,
// each container read concurrently. With Follow it watches the Pods (from the listing's
// resource version, so nothing starts unseen in between) and reads every container run that
// starts later from its first line; it returns when ctx ends (nil: that is how a follow stops).
// Without Follow it returns once every log is read, with the errors of the ones that could not
// be.
func Stream(ctx context.Context, kc kubernetes.Interface, w Workload, o Options) error {
	pods, sel, err := Pods(ctx, kc, w)
	if err != nil {
		return err
	}
	s := &streamer{ctx: ctx, kc: kc, w: w, o: o, seen: map[run]bool{}}
	for i := range pods.Items {
		s.visit(&pods.Items[i], true)
	}
	if !o.Follow {
		s.wg.Wait()
		return errors.Join(s.errs...)
	}
	defer s.wg.Wait()
	return s.follow(pods.ResourceVersion, sel)
}

// streamer is one Stream: the container runs it reads, concurrently, and the errors of those
// that could not be read.
type streamer struct {
	ctx context.Context
	kc  kubernetes.Interface
	w   Workload
	o   Options

	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error
	// seen are the runs being read or noted already.
	seen map[run]bool
}

// note hands msg to Options.Note, when there is one.
func (s *streamer) note(msg string) {
	if s.o.Note != nil {
		s.o.Note(msg)
	}
}

// visit starts a reader for each container run of pod that has started and is not read yet.
// first says pod is of the listing Stream started from.
func (s *streamer) visit(pod *corev1.Pod, first bool) {
	if pod.DeletionTimestamp != nil && !first {
		return
	}
	statuses := append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...)
	multi := len(pod.Spec.InitContainers)+len(pod.Spec.Containers) > 1
	for _, cs := range statuses {
		r := run{pod: pod.Name, uid: string(pod.UID), container: cs.Name, restarts: cs.RestartCount}
		if s.seen[r] {
			continue
		}
		running, ended := cs.State.Running != nil, cs.State.Terminated != nil
		if !running && !ended {
			if first && !s.o.Follow {
				s.noteNotStarted(pod.Name, cs)
				s.seen[r] = true
			}
			continue
		}
		s.seen[r] = true
		s.readRun(pod.Name, s.logOptions(cs.Name, running, first), multi)
	}
}

// noteNotStarted says a container has no log to read, since it has not started.
func (s *streamer) noteNotStarted(pod string, cs corev1.ContainerStatus) {
	reason := "it has not started"
	if wt := cs.State.Waiting; wt != nil && wt.Reason != "" {
		reason += " (" + wt.Reason + ")"
	}
	s.note(fmt.Sprintf("%s: Pod %s container %s: no log, %s", s.w, pod, cs.Name, reason))
}

// logOptions are how one run of container is read: followed while it runs, when Follow is set,
// and for a run of the first listing, bounded by Tail and the since options.
func (s *streamer) logOptions(container string, running, first bool) corev1.PodLogOptions {
	o := s.o
	lo := corev1.PodLogOptions{Container: container, Follow: o.Follow && running, Timestamps: o.Timestamps}
	if first {
		// Tail and since bound what existed when the command started; a run that starts
		// later is shown whole.
		if o.Tail >= 0 {
			lo.TailLines = ptr(int64(o.Tail))
		}
		if o.SinceSeconds > 0 {
			lo.SinceSeconds = ptr(o.SinceSeconds)
		} else if !o.SinceTime.IsZero() {
			lo.SinceTime = &metav1.Time{Time: o.SinceTime}
		}
	}
	return lo
}

// readRun reads one container run of the Pod podName in a goroutine of its own. Its error, unless
// ctx ended, is a note when following and an error of Stream otherwise.
func (s *streamer) readRun(podName string, lo corev1.PodLogOptions, multi bool) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := read(s.ctx, s.kc, s.w.Namespace, podName, lo, s.o.Output(podName, lo.Container, multi)); err != nil && s.ctx.Err() == nil {
			if s.o.Follow {
				s.note(fmt.Sprintf("%s: Pod %s container %s: %v", s.w, podName, lo.Container, err))
				return
			}
			s.mu.Lock()
			s.errs = append(s.errs, fmt.Errorf("%s: Pod %s container %s: %w", s.w, podName, lo.Container, err))
			s.mu.Unlock()
		}
	}()
}

// follow watches the Pods of the selector sel from the resource version rv, and visits every
// Pod added or changed, until ctx ends (nil) or the watch fails. A watch that falls too far
// behind lists the Pods again and goes on from there.
func (s *streamer) follow(rv, sel string) error {
	ctx, kc, w := s.ctx, s.kc, s.w
	lw := &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
		opts.LabelSelector = sel
		return kc.CoreV1().Pods(w.Namespace).Watch(ctx, opts)
	}}
	for {
		expired, err := watchPods(ctx, lw, rv, func(pod *corev1.Pod) { s.visit(pod, false) })
		if err != nil || !expired {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("watch the Pods of %s: %w", w, err)
		}
		// The watch fell too far behind (the API compacted its history): list again, and read
		// the runs that started meanwhile from their first line.
		again, _, err := Pods(ctx, kc, w)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		for i := range again.Items {
			s.visit(&again.Items[i], false)
		}
		rv = again.ResourceVersion
	}
}

// watchPods hands every added or changed Pod to visit until ctx ends (nil error, not expired),
// the watch's resource version expires (expired), or the watch fails.
func watchPods(ctx context.Context, lw cache.WatcherWithContext, rv string, visit func(*corev1.Pod)) (expired bool, err error) {
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, lw)
	if err != nil {
		return false, err
	}
	defer rw.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, nil
		case ev, ok := <-rw.ResultChan():
			if !ok {
				return false, errors.New("the watch ended")
			}
			switch ev.Type {
			case watch.Error:
				serr := apierrors.FromObject(ev.Object)
				if apierrors.IsResourceExpired(serr) || apierrors.IsGone(serr) {
					return true, nil
				}
				return false, serr
			case watch.Added, watch.Modified:
				if pod, ok := ev.Object.(*corev1.Pod); ok {
					visit(pod)
				}
			}
		}
	}
}

// read copies one container run's log to out and closes out.
func read(ctx context.Context, kc kubernetes.Interface, namespace, pod string, lo corev1.PodLogOptions, out io.WriteCloser) error {
	defer out.Close()
	rc, err := kc.CoreV1().Pods(namespace).GetLogs(pod, &lo).Stream(ctx)
	if err != nil {
		return err
	}
	defer rc.Close()
	_, err = io.Copy(out, rc)
	return err
}

func ptr[T any](v T) *T { return &v }
