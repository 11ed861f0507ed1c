package kube

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A crashing Node.js service logs a stack trace with colours, CRLF endings, blank lines and one
// huge line: the tail keeps the last lines, plain and bounded.
func TestLogTailKeepsTheLastPlainLines(t *testing.T) {
	raw := "boot\r\n\x1b[31mError: connect ECONNREFUSED 10.42.0.7:5432\x1b[0m\r\n\n\tat TCPConnectWrap.afterConnect\n" + strings.Repeat("x", 1000) + "\n\n"
	got := logTail([]byte(raw), 3)
	if len(got) != 3 {
		t.Fatalf("tail = %q, want 3 lines", got)
	}
	if got[0] != "Error: connect ECONNREFUSED 10.42.0.7:5432" || got[1] != " at TCPConnectWrap.afterConnect" {
		t.Errorf("tail = %q", got)
	}
	if !strings.HasSuffix(got[2], " …") || len(got[2]) > maxLogLine+len(" …") {
		t.Errorf("the long line is not cut: %d bytes", len(got[2]))
	}
	if tail := logTail(nil, 20); len(tail) != 0 {
		t.Errorf("empty log: %q", tail)
	}
}

// The error of a crash loop is one paragraph naming the workload, the Pod, the reason, the
// message and the fix, followed by the log lines, indented.
func TestStuckErrorReadsAsOneParagraphWithTheLog(t *testing.T) {
	e := &StuckError{Workload: "Deployment oce-system/api", Object: "Pod oce-system/api-1 (container api)", Reason: "CrashLoopBackOff",
		Message: "back-off 10s restarting failed container.", Fix: "Fix: read the log", LogContainer: "api", Previous: true,
		LogTail: []string{"listening", "Error: missing OCC_DATABASE_URL"}}
	want := "Deployment oce-system/api will not become ready: Pod oce-system/api-1 (container api) is CrashLoopBackOff: back-off 10s restarting failed container. Fix: read the log. " +
		"The last 2 log lines of container api's previous run:\n    listening\n    Error: missing OCC_DATABASE_URL"
	if got := e.Error(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	e.LogTail, e.LogError = nil, "dial tcp 172.18.0.3:10250: connection refused"
	if got := e.Error(); !strings.HasSuffix(got, "Fix: read the log. The log of container api could not be read (dial tcp 172.18.0.3:10250: connection refused).") {
		t.Errorf("got: %s", got)
	}
}

// FailedMount stops a wait only once it repeated over the grace and the kubelet did not move
// on; a single report, a young one, or one followed by a pull are waited out.
func TestFailedMountNeedsRepeatsAndTime(t *testing.T) {
	now := time.Now()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "proxy-1", Namespace: "ns", UID: "u1"}}
	ev := func(reason string, count int32, first, last time.Time) *corev1.Event {
		return &corev1.Event{Reason: reason, Count: count, Message: "secret \"x\" not found",
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "proxy-1", UID: "u1"},
			FirstTimestamp: metav1.NewTime(first), LastTimestamp: metav1.NewTime(last)}
	}
	grace := 30 * time.Second
	for _, c := range []struct {
		name   string
		events []*corev1.Event
		seen   time.Time
		stuck  bool
	}{
		{"repeated for 40s", []*corev1.Event{ev("FailedMount", 5, now.Add(-40*time.Second), now)}, time.Time{}, true},
		{"reported once, 40s ago", []*corev1.Event{ev("FailedMount", 1, now.Add(-40*time.Second), now.Add(-40*time.Second))}, time.Time{}, false},
		{"repeated for 5s", []*corev1.Event{ev("FailedMount", 3, now.Add(-5*time.Second), now)}, time.Time{}, false},
		{"repeated, seen failing by the wait for 40s", []*corev1.Event{ev("FailedMount", 3, time.Time{}, now)}, now.Add(-40 * time.Second), true},
		{"then pulling", []*corev1.Event{ev("FailedMount", 5, now.Add(-40*time.Second), now.Add(-time.Second)), ev("Pulling", 1, now, now)}, time.Time{}, false},
		{"about another Pod", []*corev1.Event{func() *corev1.Event {
			e := ev("FailedMount", 5, now.Add(-40*time.Second), now)
			e.InvolvedObject.UID = "u0"
			return e
		}()}, time.Time{}, false},
	} {
		got := podStuck(pod, c.events, now, c.seen, grace)
		if (got != nil) != c.stuck {
			t.Errorf("%s: stuck = %v, want %v", c.name, got, c.stuck)
		}
	}
}

// An unschedulable Pod stops a wait only once the scheduler has found no node for it over the
// grace: a node that is still starting makes Pods unschedulable for a moment.
func TestUnschedulableNeedsTime(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		since time.Duration
		stuck bool
	}{{0, false}, {5 * time.Second, false}, {40 * time.Second, true}} {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "gw-0", Namespace: "ns"}, Status: corev1.PodStatus{Phase: corev1.PodPending,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
				Message: "0/1 nodes are available: 1 node(s) had untolerated taint(s).", LastTransitionTime: metav1.NewTime(now.Add(-c.since))}}}}
		got := podStuck(pod, nil, now, time.Time{}, 30*time.Second)
		if (got != nil) != c.stuck {
			t.Errorf("unschedulable for %s: stuck = %v, want %v", c.since, got, c.stuck)
		}
		if got != nil && !strings.Contains(got.Error(), "(for 40s)") {
			t.Errorf("the error does not say how long: %v", got)
		}
	}
}
