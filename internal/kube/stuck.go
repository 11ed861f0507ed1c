package kube

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// StuckError ends a wait early: what it waited for reached a state that does not recover by
// itself (an image the node cannot get, a container that keeps crashing, a Pod no node can
// run, a failed Job), so waiting out the timeout would only delay the same answer.
type StuckError struct {
	// Workload is what the wait waited for ("Deployment oce-system/api").
	Workload string
	// Object is the object in the stuck state ("Pod oce-system/api-7d9f-x, container api").
	Object string
	// Reason is the kubelet's, scheduler's or controller's reason (ImagePullBackOff,
	// Unschedulable, BackoffLimitExceeded); Message is its message, as it reported it.
	Reason, Message string
	// Fix says what makes the state go away.
	Fix string
	// LogContainer is the container whose log LogTail holds (its previous run when it restarted).
	LogContainer string
	// LogTail are the last lines of that container's log, oldest first.
	LogTail []string
	// LogError says why the log was wanted and could not be read.
	LogError string
	// Previous says LogTail is the log of the container's previous run.
	Previous bool

	// logPod is the Pod whose container's log is wanted.
	logPod string
}

func (e *StuckError) Error() string {
	var b strings.Builder
	outcome := "become ready"
	switch {
	case strings.HasPrefix(e.Workload, "Job "):
		outcome = "complete"
	case strings.HasPrefix(e.Workload, "Pod "):
		outcome = "run"
	}
	fmt.Fprintf(&b, "%s will not %s: %s is %s", e.Workload, outcome, e.Object, e.Reason)
	if m := strings.TrimSpace(e.Message); m != "" {
		fmt.Fprintf(&b, ": %s", strings.TrimSuffix(m, "."))
	}
	b.WriteString(". ")
	b.WriteString(e.Fix)
	switch {
	case e.LogError != "":
		fmt.Fprintf(&b, ". The log of container %s could not be read (%s)", e.LogContainer, e.LogError)
	case len(e.LogTail) > 0:
		run := ""
		if e.Previous {
			run = "'s previous run"
		}
		fmt.Fprintf(&b, ". The last %d log lines of container %s%s:", len(e.LogTail), e.LogContainer, run)
		for _, l := range e.LogTail {
			b.WriteString("\n    ")
			b.WriteString(l)
		}
		return b.String()
	case e.LogContainer != "":
		fmt.Fprintf(&b, ". Container %s logged nothing", e.LogContainer)
	}
	b.WriteString(".")
	return b.String()
}

// The waiting reasons the kubelet reports for a container that will not start until someone
// changes something: the image, the Pod's configuration or the objects it reads. ErrImagePull
// is among them: the dev cluster runs imported images, so a pull that failed once has nothing
// to wait for (and the kubelet turns it into ImagePullBackOff within seconds anyway).
var stuckWaitingReasons = map[string]func(image string) string{
	"ErrImageNeverPull": func(image string) string {
		return fmt.Sprintf("Fix: the image %s is not on the node and the Pod's imagePullPolicy is Never, so it is never pulled: import the image into the cluster's node (occ dev up imports the images it pins and builds), or correct the reference", image)
	},
	"ImagePullBackOff": pullFix,
	"ErrImagePull":     pullFix,
	"InvalidImageName": func(image string) string {
		return fmt.Sprintf("Fix: %q is not a valid image reference; correct it in the workload's Pod template", image)
	},
	"CrashLoopBackOff": func(string) string {
		return "Fix: the container keeps exiting and the kubelet backs off restarting it; its log says why: correct the configuration, the Secret or the image it runs, then run the command again"
	},
	"CreateContainerConfigError": func(string) string {
		return "Fix: the container reads a Secret or ConfigMap (or a key in one) that does not exist: create it, or correct the reference in the workload's Pod template"
	},
	"CreateContainerError": runtimeFix,
	"RunContainerError":    runtimeFix,
}

func pullFix(image string) string {
	return fmt.Sprintf("Fix: the node cannot pull the image %s: import it into the cluster's node and use imagePullPolicy IfNotPresent or Never, or correct the reference, the registry's address or its pull credentials", image)
}

func runtimeFix(string) string {
	return "Fix: the container runtime cannot create or start the container: correct the command, the mounts or the security context the message names"
}

const (
	unschedulableFix = "Fix: no node can run the Pod: free the resources the message names, or relax the Pod's resource requests, node selector, affinity or tolerations"
	failedMountFix   = "Fix: a volume of the Pod cannot be mounted: create the Secret, ConfigMap or PersistentVolumeClaim the message names, or correct the volume in the workload's Pod template"
	jobFailedFix     = "Fix: the Job's Pods failed; their log says why: correct the cause (configuration, database, image) and run the command again, which runs the Job again"
)

// DefaultGrace is how long a failing mount must persist, and have repeated, or a Pod stay
// unschedulable, before a wait calls it stuck. A mount fails for a moment when a Secret is
// created just after the Pod or the kubelet's cache of it is still syncing ("failed to sync
// secret cache"), and a Pod is unschedulable while the only node is still starting; the
// kubelet and the scheduler retry, so by this time a transient failure has cleared.
const DefaultGrace = 30 * time.Second

// progressReasons are the Pod events a kubelet reports once the volumes are mounted: the Pod
// has moved past a mount failure reported before them.
var progressReasons = map[string]bool{"Pulling": true, "Pulled": true, "Created": true, "Started": true}

// podStuck judges one Pod of a workload at now, from its status and the Events about it
// (events may hold Events of other objects; only those naming the Pod count). firstMountFailure
// is when the wait first saw the Pod's mount fail, or zero. It returns nil while the Pod may
// still come up by itself: Pending while it is created or initialized, Running and not ready
// yet, a mount failure younger than grace.
func podStuck(p *corev1.Pod, events []*corev1.Event, now, firstMountFailure time.Time, grace time.Duration) *StuckError {
	if p.DeletionTimestamp != nil {
		return nil
	}
	pod := fmt.Sprintf("Pod %s/%s", p.Namespace, p.Name)
	for _, c := range p.Status.Conditions {
		// A node that is still starting carries the not-ready taint for a few seconds (k3d hands
		// the cluster over as soon as its API answers), and a Pod scheduled then is unschedulable
		// until the node is ready: only a Pod unschedulable for grace is stuck.
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable &&
			!c.LastTransitionTime.IsZero() && now.Sub(c.LastTransitionTime.Time) >= grace {
			return &StuckError{Object: pod, Reason: c.Reason, Message: fmt.Sprintf("%s (for %s)", strings.TrimSuffix(strings.TrimSpace(c.Message), "."), now.Sub(c.LastTransitionTime.Time).Round(time.Second)), Fix: unschedulableFix}
		}
	}
	statuses := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, s := range statuses {
		w := s.State.Waiting
		if w == nil {
			continue
		}
		fix, ok := stuckWaitingReasons[w.Reason]
		if !ok {
			continue
		}
		e := &StuckError{Object: fmt.Sprintf("%s (container %s)", pod, s.Name), Reason: w.Reason, Message: w.Message, Fix: fix(containerImage(p, s))}
		if w.Reason == "CrashLoopBackOff" {
			e.logPod, e.LogContainer, e.Previous = p.Name, s.Name, s.RestartCount > 0
			if t := s.LastTerminationState.Terminated; t != nil && e.Message == "" {
				e.Message = fmt.Sprintf("last run ended %s with exit code %d", t.Reason, t.ExitCode)
			}
		}
		return e
	}
	if mount := lastEvent(p, events, "FailedMount"); mount != nil && !podStarted(p) {
		first := eventFirst(mount)
		if !firstMountFailure.IsZero() && (first.IsZero() || firstMountFailure.Before(first)) {
			first = firstMountFailure
		}
		if eventCount(mount) >= 2 && !first.IsZero() && now.Sub(first) >= grace && !movedOn(p, events, eventLast(mount)) {
			return &StuckError{Object: pod, Reason: mount.Reason, Message: fmt.Sprintf("%s (reported %d times over %s)", mount.Message, eventCount(mount), now.Sub(first).Round(time.Second)), Fix: failedMountFix}
		}
	}
	return nil
}

// PodStuck judges a one-off Pod a caller waits for by its status alone (no Events, so no mount
// failure): a *StuckError for what stops it, with Workload naming the Pod, or nil.
func PodStuck(p *corev1.Pod) *StuckError {
	e := podStuck(p, nil, time.Now(), time.Time{}, DefaultGrace)
	if e != nil {
		e.Workload = fmt.Sprintf("Pod %s/%s", p.Namespace, p.Name)
	}
	return e
}

// podFailed describes a Pod that ended in phase Failed (a Job's Pod, a one-off Pod): the first
// container that terminated with an error, for its log.
func podFailed(p *corev1.Pod) *StuckError {
	if p.Status.Phase != corev1.PodFailed {
		return nil
	}
	e := &StuckError{Object: fmt.Sprintf("Pod %s/%s", p.Namespace, p.Name), Reason: "Failed", Message: p.Status.Message}
	if p.Status.Reason != "" {
		e.Reason = p.Status.Reason
	}
	statuses := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, s := range statuses {
		if t := s.State.Terminated; t != nil && t.ExitCode != 0 {
			e.Object += " (container " + s.Name + ")"
			e.Reason = t.Reason
			if e.Reason == "" {
				e.Reason = "Error"
			}
			e.Message = fmt.Sprintf("exit code %d", t.ExitCode)
			if m := strings.TrimSpace(t.Message); m != "" {
				e.Message += ": " + m
			}
			e.logPod, e.LogContainer = p.Name, s.Name
			break
		}
	}
	return e
}

// jobFailed describes a Job whose Failed condition is True, with the failed Pod among pods that
// ended last (the one whose log says why).
func jobFailed(j *batchv1.Job, pods []*corev1.Pod) *StuckError {
	for _, c := range j.Status.Conditions {
		if c.Type != batchv1.JobFailed || c.Status != corev1.ConditionTrue {
			continue
		}
		e := &StuckError{Object: fmt.Sprintf("Job %s/%s", j.Namespace, j.Name), Reason: c.Reason, Message: c.Message, Fix: jobFailedFix}
		var last *StuckError
		var lastAt time.Time
		for _, p := range pods {
			if f := podFailed(p); f != nil && !p.CreationTimestamp.Time.Before(lastAt) {
				last, lastAt = f, p.CreationTimestamp.Time
			}
		}
		if last != nil {
			e.Message = strings.TrimSuffix(strings.TrimSpace(e.Message), ".")
			if e.Message != "" {
				e.Message += "; "
			}
			e.Message += fmt.Sprintf("%s failed: %s, %s", last.Object, last.Reason, last.Message)
			e.logPod, e.LogContainer = last.logPod, last.LogContainer
		}
		return e
	}
	return nil
}

// containerImage is the image the Pod's spec gives the container of status s.
func containerImage(p *corev1.Pod, s corev1.ContainerStatus) string {
	for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
		if c.Name == s.Name {
			return c.Image
		}
	}
	return s.Image
}

// podStarted reports whether a container of the Pod runs or ran: its volumes were mounted.
func podStarted(p *corev1.Pod) bool {
	statuses := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, s := range statuses {
		if s.State.Running != nil || s.State.Terminated != nil || s.RestartCount > 0 {
			return true
		}
	}
	return false
}

// about reports whether the Event is about the Pod (by uid when it names one).
func about(ev *corev1.Event, p *corev1.Pod) bool {
	o := ev.InvolvedObject
	if o.Kind != "Pod" || o.Name != p.Name || o.Namespace != p.Namespace {
		return false
	}
	return o.UID == "" || o.UID == p.UID
}

// lastEvent is the most recently reported Event with reason about the Pod.
func lastEvent(p *corev1.Pod, events []*corev1.Event, reason string) *corev1.Event {
	var last *corev1.Event
	for _, ev := range events {
		if ev.Reason == reason && about(ev, p) && (last == nil || eventLast(ev).After(eventLast(last))) {
			last = ev
		}
	}
	return last
}

// movedOn reports whether the kubelet reported progress past mounting (pulling, creating,
// starting a container) for the Pod after since.
func movedOn(p *corev1.Pod, events []*corev1.Event, since time.Time) bool {
	for _, ev := range events {
		if progressReasons[ev.Reason] && about(ev, p) && eventLast(ev).After(since) {
			return true
		}
	}
	return false
}

// eventFirst and eventLast are when an Event (of either API generation's fields) was first
// and last reported.
func eventFirst(ev *corev1.Event) time.Time {
	if !ev.FirstTimestamp.IsZero() {
		return ev.FirstTimestamp.Time
	}
	return ev.EventTime.Time
}

func eventLast(ev *corev1.Event) time.Time {
	t := ev.LastTimestamp.Time
	if ev.Series != nil && ev.Series.LastObservedTime.After(t) {
		t = ev.Series.LastObservedTime.Time
	}
	if ev.EventTime.After(t) {
		t = ev.EventTime.Time
	}
	if t.IsZero() {
		t = eventFirst(ev)
	}
	return t
}

// eventCount is how often an Event was reported.
func eventCount(ev *corev1.Event) int32 {
	if ev.Series != nil && ev.Series.Count > ev.Count {
		return ev.Series.Count
	}
	return ev.Count
}

// LogTailLines is how many lines of a crashing container's log a StuckError carries.
const LogTailLines = 20

// maxLogLine bounds one log line in an error, so a line of minified JSON does not flood it.
const maxLogLine = 300

// terminalEscape matches a terminal's control sequence (colours, cursor moves) in a log line.
var terminalEscape = regexp.MustCompile(`\x1b\[[0-9;?]*[ -/]*[@-~]`)

// logTail is the last n non-empty lines of a container's log, each cut to maxLogLine bytes and
// stripped of control characters (a log may hold terminal escapes).
func logTail(raw []byte, n int) []string {
	var lines []string
	for _, l := range strings.Split(strings.ReplaceAll(string(raw), "\r\n", "\n"), "\n") {
		l = terminalEscape.ReplaceAllString(l, "")
		l = strings.Map(func(r rune) rune {
			if r == '\t' {
				return ' '
			}
			if r < 0x20 || r == 0x7f {
				return -1
			}
			return r
		}, l)
		l = strings.TrimRight(l, " ")
		if l == "" {
			continue
		}
		if len(l) > maxLogLine {
			l = strings.ToValidUTF8(l[:maxLogLine], "") + " …"
		}
		lines = append(lines, l)
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}
