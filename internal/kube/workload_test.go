package kube_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/openclaw/occ/internal/kube"
	"github.com/openclaw/occ/internal/testbed"
)

// stuckTimeout is the startup timeout the stuck-state tests give their waits: each must end
// long before it, as soon as the state is reported.
const stuckTimeout = 2 * time.Minute

// fastEnough is the most a wait may take to notice a stuck state once it is written.
const fastEnough = 10 * time.Second

// waitBed is one workload in its own namespace of the test bed, with the real
// kube-controller-manager creating its Pods; the test plays the kubelet and the scheduler.
type waitBed struct {
	t  *testing.T
	c  kubernetes.Interface
	ns string
}

func newWaitBed(t *testing.T, ns string) *waitBed {
	t.Helper()
	testbed.ControllerManager(t)
	namespace(t, ns)
	b := &waitBed{t: t, c: testbed.Client(t), ns: ns}
	t.Cleanup(func() { _ = b.c.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	return b
}

func podTemplate(app string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.invalid/" + app + ":1", ImagePullPolicy: corev1.PullNever}}}}
}

func (b *waitBed) deployment(name string) kube.Workload {
	b.t.Helper()
	one := int32(1)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: b.ns},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}, Template: podTemplate(name)}}
	if _, err := b.c.AppsV1().Deployments(b.ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		b.t.Fatal(err)
	}
	return kube.Workload{Kind: "Deployment", Namespace: b.ns, Name: name}
}

func (b *waitBed) statefulSet(name string) kube.Workload {
	b.t.Helper()
	one := int32(1)
	s := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: b.ns},
		Spec: appsv1.StatefulSetSpec{Replicas: &one, ServiceName: name, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}, Template: podTemplate(name)}}
	if _, err := b.c.AppsV1().StatefulSets(b.ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		b.t.Fatal(err)
	}
	return kube.Workload{Kind: "StatefulSet", Namespace: b.ns, Name: name}
}

func (b *waitBed) job(name string) kube.Workload {
	b.t.Helper()
	zero := int32(0)
	tmpl := podTemplate(name)
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: b.ns}, Spec: batchv1.JobSpec{BackoffLimit: &zero, Template: tmpl}}
	if _, err := b.c.BatchV1().Jobs(b.ns).Create(context.Background(), j, metav1.CreateOptions{}); err != nil {
		b.t.Fatal(err)
	}
	return kube.Workload{Kind: "Job", Namespace: b.ns, Name: name}
}

// wait starts the diagnosing wait for w with the stuck-state tests' timeout and returns its
// result channel; statuses collects the status lines it reported.
func (b *waitBed) wait(w kube.Workload, o kube.WaitOptions) (<-chan error, *statusLog) {
	log := &statusLog{changed: make(chan struct{}, 1)}
	if o.Status == nil {
		o.Status = log.add
	}
	ctx, cancel := context.WithTimeout(context.Background(), stuckTimeout)
	done := make(chan error, 1)
	go func() {
		defer cancel()
		done <- kube.WaitForWorkload(ctx, b.c, w, o)
	}()
	return done, log
}

// pod waits, by watch, for the first Pod labelled app=name that the controllers created.
func (b *waitBed) pod(app string) *corev1.Pod {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := kube.WaitForPod(ctx, b.c, b.ns, "app="+app, func(*corev1.Pod) bool { return true })
	if err != nil {
		b.t.Fatalf("no Pod of %s appeared: %v", app, err)
	}
	return p
}

// scheduled waits for the first Pod labelled app=name and binds it to a node, as the scheduler
// does (the node does not exist: the test bed has none, so nothing serves the Pod's log).
func (b *waitBed) scheduled(app string) *corev1.Pod {
	b.t.Helper()
	p := b.pod(app)
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: b.ns}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-0"}}
	if err := b.c.CoreV1().Pods(b.ns).Bind(context.Background(), binding, metav1.CreateOptions{}); err != nil {
		b.t.Fatalf("bind Pod %s to node-0: %v", p.Name, err)
	}
	return p
}

// report writes a Pod status as the kubelet or scheduler would, and returns the time it began
// writing (a time to error is measured from there).
func (b *waitBed) report(p *corev1.Pod, change func(*corev1.Pod)) time.Time {
	b.t.Helper()
	start := time.Now()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := b.c.CoreV1().Pods(b.ns).Get(context.Background(), p.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(cur)
		_, err = b.c.CoreV1().Pods(b.ns).UpdateStatus(context.Background(), cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		b.t.Fatalf("report the status of Pod %s: %v", p.Name, err)
	}
	return start
}

// event records an Event about the Pod, as the kubelet does: count times from first to last.
// It returns the time it began writing.
func (b *waitBed) event(p *corev1.Pod, reason, message string, count int32, first, last time.Time) time.Time {
	b.t.Helper()
	start := time.Now()
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: p.Name + ".", Namespace: b.ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: b.ns, Name: p.Name, UID: p.UID},
		Reason:         reason, Message: message, Type: corev1.EventTypeWarning, Count: count,
		FirstTimestamp: metav1.NewTime(first), LastTimestamp: metav1.NewTime(last),
		Source: corev1.EventSource{Component: "kubelet", Host: "node-0"},
	}
	if _, err := b.c.CoreV1().Events(b.ns).Create(context.Background(), ev, metav1.CreateOptions{}); err != nil {
		b.t.Fatalf("record Event %s about Pod %s: %v", reason, p.Name, err)
	}
	return start
}

func waiting(container, reason, message string, restarts int32) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		if restarts > 0 {
			p.Status.Phase = corev1.PodRunning
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name: container, Image: p.Spec.Containers[0].Image, RestartCount: restarts,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}},
		}}
		if restarts > 0 {
			p.Status.ContainerStatuses[0].LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}}
		}
	}
}

// stuck asserts the wait ended with a StuckError within fastEnough of reported, naming the Pod
// (or Job), the reason, the message and a fix; it logs the time it took.
func stuck(t *testing.T, done <-chan error, reported time.Time, names, reason, message string) *kube.StuckError {
	t.Helper()
	var err error
	select {
	case err = <-done:
	case <-time.After(stuckTimeout + 10*time.Second):
		t.Fatal("the wait never ended")
	}
	took := time.Since(reported)
	t.Logf("time to error after %s was reported: %s", reason, took.Round(time.Millisecond))
	t.Logf("error: %v", err)
	var se *kube.StuckError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want a StuckError", err)
	}
	if took > fastEnough {
		t.Errorf("the wait took %s to see %s, want under %s (its timeout was %s)", took, reason, fastEnough, stuckTimeout)
	}
	if errors.Is(err, kube.ErrWaitTimeout) {
		t.Errorf("a stuck workload is reported as a timeout: %v", err)
	}
	msg := err.Error()
	for _, want := range []string{names, reason, message, "Fix: "} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not say %q:\n%s", want, msg)
		}
	}
	return se
}

// statusLog collects the status lines of a wait.
type statusLog struct {
	mu      sync.Mutex
	lines   []string
	changed chan struct{}
}

func (s *statusLog) add(line string) {
	s.mu.Lock()
	s.lines = append(s.lines, line)
	s.mu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// has reports whether a status line so far contains want.
func (s *statusLog) has(want string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.lines {
		if strings.Contains(l, want) {
			return true
		}
	}
	return false
}

// await returns once a status line contains want (by the wait's own reports, not by time).
func (s *statusLog) await(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		s.mu.Lock()
		for _, l := range s.lines {
			if strings.Contains(l, want) {
				s.mu.Unlock()
				return
			}
		}
		all := strings.Join(s.lines, "\n")
		s.mu.Unlock()
		select {
		case <-s.changed:
		case <-deadline:
			t.Fatalf("no status line says %q; got:\n%s", want, all)
		}
	}
}

// The Gateway Deployment names an image that was never imported into the node, with pull
// policy Never: the kubelet reports ErrImageNeverPull and the wait stops at once.
func TestWaitStopsOnErrImageNeverPull(t *testing.T) {
	b := newWaitBed(t, "wait-neverpull")
	done, _ := b.wait(b.deployment("gateway"), kube.WaitOptions{})
	p := b.scheduled("gateway")
	msg := `Container image "registry.invalid/gateway:1" is not present with pull policy of Never`
	at := b.report(p, waiting("main", "ErrImageNeverPull", msg, 0))
	se := stuck(t, done, at, "Pod wait-neverpull/"+p.Name, "ErrImageNeverPull", msg)
	if !strings.Contains(se.Error(), "import the image") || !strings.Contains(se.Error(), "Deployment wait-neverpull/gateway") {
		t.Errorf("the fix does not say to import the image, or the workload is not named:\n%s", se)
	}
}

// A registry image the node cannot reach: first ErrImagePull, then ImagePullBackOff; either ends
// the wait.
func TestWaitStopsOnImagePullFailures(t *testing.T) {
	for _, reason := range []string{"ErrImagePull", "ImagePullBackOff"} {
		t.Run(reason, func(t *testing.T) {
			b := newWaitBed(t, "wait-"+strings.ToLower(reason))
			done, _ := b.wait(b.deployment("api"), kube.WaitOptions{})
			p := b.scheduled("api")
			msg := `Back-off pulling image "registry.invalid/api:1"`
			if reason == "ErrImagePull" {
				msg = `failed to pull and unpack image "registry.invalid/api:1": dial tcp: lookup registry.invalid: no such host`
			}
			at := b.report(p, waiting("main", reason, msg, 0))
			stuck(t, done, at, "Pod "+b.ns+"/"+p.Name, reason, msg)
		})
	}
}

// The API's container exits at start (a bad database URL): the kubelet restarts it and backs off.
// The wait stops with the crash loop and the container's last log lines; the test bed has no
// kubelet to serve them, so the error says the log could not be read.
func TestWaitStopsOnCrashLoopBackOff(t *testing.T) {
	b := newWaitBed(t, "wait-crashloop")
	done, _ := b.wait(b.deployment("api"), kube.WaitOptions{})
	p := b.scheduled("api")
	msg := "back-off 40s restarting failed container=main pod=" + p.Name
	at := b.report(p, waiting("main", "CrashLoopBackOff", msg, 3))
	se := stuck(t, done, at, "Pod wait-crashloop/"+p.Name, "CrashLoopBackOff", msg)
	if se.LogContainer != "main" || !se.Previous || se.LogError == "" || !strings.Contains(se.Error(), "log of container main could not be read") {
		t.Errorf("want the previous run's log of container main, unreadable here; got container %q previous %v log error %q:\n%s", se.LogContainer, se.Previous, se.LogError, se)
	}
}

// The worker reads a key its Secret does not have: CreateContainerConfigError.
func TestWaitStopsOnCreateContainerConfigError(t *testing.T) {
	b := newWaitBed(t, "wait-configerror")
	done, _ := b.wait(b.deployment("worker"), kube.WaitOptions{})
	p := b.scheduled("worker")
	msg := "couldn't find key migration-url in Secret wait-configerror/occ-database"
	at := b.report(p, waiting("main", "CreateContainerConfigError", msg, 0))
	stuck(t, done, at, "Pod wait-configerror/"+p.Name, "CreateContainerConfigError", msg)
}

// PostgreSQL asks for more memory than the node has: the scheduler marks it Unschedulable.
func TestWaitStopsOnUnschedulablePod(t *testing.T) {
	b := newWaitBed(t, "wait-unschedulable")
	done, _ := b.wait(b.statefulSet("postgres"), kube.WaitOptions{})
	p := b.pod("postgres")
	msg := "0/1 nodes are available: 1 Insufficient memory. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
	at := b.report(p, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		// The scheduler has found no node for it for 40 seconds.
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: msg, LastTransitionTime: metav1.NewTime(time.Now().Add(-40 * time.Second))}}
	})
	stuck(t, done, at, "Pod wait-unschedulable/postgres-0", "Unschedulable", "Insufficient memory")
}

// The only node is still starting (k3d hands the cluster over as soon as its API answers): the
// Gateway's Pod is unschedulable for its not-ready taint, then the node is ready and the Pod
// runs. The wait keeps going through it and ends when the Pod is ready.
func TestWaitOutlastsANodeThatIsStillStarting(t *testing.T) {
	b := newWaitBed(t, "wait-nodestarting")
	done, log := b.wait(b.statefulSet("gateway"), kube.WaitOptions{Grace: time.Minute})
	p := b.pod("gateway")
	b.report(p, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodPending
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: "0/1 nodes are available: 1 node(s) had untolerated taint(s).", LastTransitionTime: metav1.Now()}}
	})
	// The wait has seen the Pod unschedulable (its own report says so) and goes on.
	log.await(t, "unschedulable: 0/1 nodes are available")
	select {
	case err := <-done:
		t.Fatalf("the wait ended while the node was still starting: %v", err)
	default:
	}
	b.report(b.pod("gateway"), func(p *corev1.Pod) { testbed.SetPodReady(p) })
	if err := <-done; err != nil {
		t.Fatalf("the wait after the node became ready: %v", err)
	}
}

// The proxy mounts a Secret that does not exist: the kubelet has reported FailedMount for 40
// seconds, six times. The wait stops as soon as it reads that.
func TestWaitStopsOnPersistentFailedMount(t *testing.T) {
	b := newWaitBed(t, "wait-failedmount")
	done, _ := b.wait(b.deployment("proxy"), kube.WaitOptions{})
	p := b.scheduled("proxy")
	b.report(p, waiting("main", "ContainerCreating", "", 0))
	msg := `MountVolume.SetUp failed for volume "config" : secret "occ-auth" not found`
	at := b.event(p, "FailedMount", msg, 6, time.Now().Add(-40*time.Second), time.Now())
	stuck(t, done, at, "Pod wait-failedmount/"+p.Name, "FailedMount", msg)
}

// A mount that has just started failing is given its grace: the wait stops only once the
// failure has persisted that long (here 3 s instead of 30 s), not at the first report.
func TestWaitGivesAFreshFailedMountItsGrace(t *testing.T) {
	b := newWaitBed(t, "wait-mountgrace")
	const grace = 3 * time.Second
	done, _ := b.wait(b.deployment("proxy"), kube.WaitOptions{Grace: grace})
	p := b.scheduled("proxy")
	b.report(p, waiting("main", "ContainerCreating", "", 0))
	msg := `MountVolume.SetUp failed for volume "config" : secret "occ-auth" not found`
	at := b.event(p, "FailedMount", msg, 2, time.Now(), time.Now())
	stuck(t, done, at, "Pod wait-mountgrace/"+p.Name, "FailedMount", msg)
	if took := time.Since(at); took < grace-time.Second {
		t.Errorf("the wait gave up after %s, before the mount failure's grace of %s", took, grace)
	}
}

// The proxy's Secret was created late: its mount failed for 40 seconds, then succeeded, and
// the kubelet went on to pull the image, which takes its time. The failure is over (the
// kubelet moved past mounting), so the wait keeps going and completes when the Pod is ready.
func TestWaitOutlastsAMountFailureThatCleared(t *testing.T) {
	b := newWaitBed(t, "wait-mountcleared")
	w := b.deployment("proxy")
	p := b.scheduled("proxy")
	b.report(p, waiting("main", "ContainerCreating", "", 0))
	now := time.Now()
	b.event(p, "FailedMount", `MountVolume.SetUp failed for volume "config" : secret "occ-auth" not found`, 5, now.Add(-42*time.Second), now.Add(-2*time.Second))
	b.event(p, "Pulling", `Pulling image "registry.invalid/proxy:1"`, 1, now, now)
	done, log := b.wait(w, kube.WaitOptions{Grace: time.Second})
	log.await(t, "Pending (ContainerCreating)")
	select {
	case err := <-done:
		t.Fatalf("the wait stopped on a mount failure that had cleared: %v", err)
	default:
	}
	if log.has("FailedMount") {
		t.Errorf("the status still reports the cleared mount failure: %v", log.lines)
	}
	b.report(p, testbed.SetPodReady)
	if err := <-done; err != nil {
		t.Fatalf("wait: %v", err)
	}
}

// The migration Job's container exits 1 and the Job (backoffLimit 0) fails: the wait stops with
// the Job's reason and its Pod's exit code.
func TestWaitStopsOnFailedJob(t *testing.T) {
	b := newWaitBed(t, "wait-job")
	done, _ := b.wait(b.job("migrate"), kube.WaitOptions{})
	p := b.scheduled("migrate")
	at := b.report(p, func(p *corev1.Pod) {
		now := metav1.Now()
		p.Status.Phase = corev1.PodFailed
		p.Status.StartTime = &now
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: p.Spec.Containers[0].Image,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 1, StartedAt: now, FinishedAt: now}}}}
	})
	se := stuck(t, done, at, "Job wait-job/migrate", "BackoffLimitExceeded", "Error, exit code 1")
	if !strings.Contains(se.Error(), "Pod wait-job/"+p.Name) || se.LogContainer != "main" || se.LogError == "" {
		t.Errorf("the error does not name the failed Pod and its unreadable log:\n%s", se)
	}
}

// A slow node: the Pod is created, waits in ContainerCreating, runs without being ready, then
// becomes ready. The wait keeps going through all of it, says what it waits for, and completes.
func TestWaitOutlastsASlowButHealthyPod(t *testing.T) {
	b := newWaitBed(t, "wait-slow")
	done, log := b.wait(b.deployment("api"), kube.WaitOptions{})
	p := b.scheduled("api")
	b.report(p, waiting("main", "ContainerCreating", "", 0))
	log.await(t, "newest Pod "+p.Name+" Pending (ContainerCreating) for ")
	b.report(p, func(p *corev1.Pod) {
		now := metav1.Now()
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Image: p.Spec.Containers[0].Image, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: now}}
	})
	log.await(t, "newest Pod "+p.Name+" Running, not ready")
	select {
	case err := <-done:
		t.Fatalf("the wait ended before the Pod was ready: %v", err)
	default:
	}
	b.report(p, testbed.SetPodReady)
	if err := <-done; err != nil {
		t.Fatalf("wait: %v", err)
	}
	log.await(t, "0/1 ready")
}

// A rollout replaces a crash-looping Pod: the old Pod's state is not the new template's, so the
// wait judges only the new Pod and completes when it is ready.
func TestWaitJudgesOnlyTheRolloutsNewPods(t *testing.T) {
	b := newWaitBed(t, "wait-rollout")
	w := b.deployment("api")
	old := b.pod("api")
	b.report(old, waiting("main", "CrashLoopBackOff", "back-off 5m0s restarting failed container", 9))
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := b.c.AppsV1().Deployments(b.ns).Get(context.Background(), "api", metav1.GetOptions{})
		if err != nil {
			return err
		}
		d.Spec.Template.Spec.Containers[0].Image = "registry.invalid/api:2"
		_, err = b.c.AppsV1().Deployments(b.ns).Update(context.Background(), d, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	done, _ := b.wait(w, kube.WaitOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	fresh, err := kube.WaitForPod(ctx, b.c, b.ns, "app=api", func(p *corev1.Pod) bool { return p.Spec.Containers[0].Image == "registry.invalid/api:2" })
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("the wait ended on the old Pod's crash loop: %v", err)
	default:
	}
	// Once the new Pod is available the old ReplicaSet is scaled down and its Pod, never
	// scheduled, is deleted at once: the rollout is complete.
	b.report(fresh, testbed.SetPodReady)
	if err := <-done; err != nil {
		t.Fatalf("wait: %v", err)
	}
}

// A Helm install creates its migration Job while an old Pod of the namespace already crash
// loops: the guard of the install leaves the old Pod alone and stops at the Job's Pod, whose
// controller image was never imported.
func TestWatchNewPodsStopsOnANewPodOnly(t *testing.T) {
	b := newWaitBed(t, "wait-guard")
	b.deployment("old")
	old := b.scheduled("old")
	b.report(old, waiting("main", "CrashLoopBackOff", "back-off 5m0s restarting failed container", 9))
	ctx, cancel := context.WithTimeout(context.Background(), stuckTimeout)
	defer cancel()
	wait, err := kube.WatchNewPods(ctx, b.c, b.ns, "Helm release openclaw-enterprise in namespace wait-guard", kube.WaitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- wait() }()
	b.job("migrate")
	p := b.scheduled("migrate")
	msg := `Container image "registry.invalid/migrate:1" is not present with pull policy of Never`
	at := b.report(p, waiting("main", "ErrImageNeverPull", msg, 0))
	se := stuck(t, done, at, "Pod wait-guard/"+p.Name, "ErrImageNeverPull", msg)
	if !strings.HasPrefix(se.Error(), "Helm release openclaw-enterprise in namespace wait-guard will not become ready") {
		t.Errorf("the guarded operation is not named: %s", se)
	}
}
