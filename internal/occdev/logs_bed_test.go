package occdev_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/openclaw/occ/internal/occdev/observe"
	"github.com/openclaw/occ/internal/occdev/state"
)

// logWait bounds every wait for a line to arrive on a followed log.
const logWait = 2 * time.Minute

// logBuffer collects what `occ dev logs` writes and lets a test wait until a pattern has
// appeared a number of times: each write wakes the waiters, no polling.
type logBuffer struct {
	mu      sync.Mutex
	buf     strings.Builder
	changed chan struct{}
}

func newLogBuffer() *logBuffer { return &logBuffer{changed: make(chan struct{})} }

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	close(l.changed)
	l.changed = make(chan struct{})
	return len(p), nil
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// count is how many lines match re.
func (l *logBuffer) count(re *regexp.Regexp) int {
	n := 0
	for _, line := range strings.Split(l.String(), "\n") {
		if re.MatchString(line) {
			n++
		}
	}
	return n
}

// waitFor waits until n lines match re, or fails the test after logWait.
func (l *logBuffer) waitFor(t *testing.T, re *regexp.Regexp, n int) {
	t.Helper()
	deadline := time.NewTimer(logWait)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		changed := l.changed
		l.mu.Unlock()
		if l.count(re) >= n {
			return
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("after %s, %d line(s) match %s, want %d; the logs:\n%s", logWait, l.count(re), re, n, l.String())
		}
	}
}

// follow runs `occ dev logs -f` in the background; stop ends it (as Ctrl-C does) and returns
// its result.
func follow(opts observe.LogsOptions) (out *logBuffer, stop func() error) {
	out = newLogBuffer()
	opts.Out, opts.Follow = out, true
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- observe.Logs(ctx, opts) }()
	return out, func() error {
		cancel()
		return <-done
	}
}

// readLogs runs `occ dev logs` once and returns what it wrote.
func readLogs(t *testing.T, opts observe.LogsOptions) string {
	t.Helper()
	var out strings.Builder
	opts.Out = &out
	if err := observe.Logs(context.Background(), opts); err != nil {
		t.Fatalf("occ dev logs %v: %v\n%s", opts.Services, err, out.String())
	}
	return out.String()
}

// prefixed matches a line of service's (padded prefix, then text matching re).
func prefixed(service, re string) *regexp.Regexp {
	return regexp.MustCompile(`^` + regexp.QuoteMeta(service) + ` *\| .*` + re)
}

// playedStart is the line the played kubelet writes when it starts a container.
const playedStart = `occ test-bed played kubelet: container \S+ of Pod \S+ (started|ran to completion)`

// checkComposeLogs is `occ dev logs` on a running Compose-profile environment: every service's
// own lines (the stand-ins' and, for the Gateway and the Agent Sandbox controller, the played
// kubelet's) under its prefix; --tail and --since bound one service's; a follow of all of them
// sees a line the controller writes on demand and the first line of the worker's next run after
// a restart, without repeating the earlier run's, and ends cleanly when cancelled.
func checkComposeLogs(t *testing.T, b *composeBed, dir, apiURL, project string) string {
	t.Helper()
	ctx := context.Background()
	opts := observe.LogsOptions{StateDir: dir, Tail: -1}

	all := readLogs(t, opts)
	t.Logf("occ dev logs, every service:\n%s", all)
	out := newLogBuffer()
	_, _ = out.Write([]byte(all))
	for svc, re := range map[string]string{
		"postgres": "database system is ready", "migrate": "migration.completed", "bootstrap": "installation.bootstrapped",
		"controller": `"event":"listening"`, "worker-kubernetes": "worker.started",
		"openshell-gateway": playedStart, "agent-sandbox-controller": playedStart,
	} {
		if out.count(prefixed(svc, re)) == 0 {
			t.Errorf("occ dev logs has no line of %s matching %q:\n%s", svc, re, all)
		}
	}

	// Follow everything; ask the controller for a line; restart the worker.
	followed, stop := follow(opts)
	followed.waitFor(t, prefixed("worker-kubernetes", "worker.started"), 1)
	mark := fmt.Sprintf("followed-%d", time.Now().UnixNano())
	standinLog(t, apiURL, mark)
	followed.waitFor(t, prefixed("controller", mark), 1)
	worker := composeContainer(t, b, project, "worker-kubernetes")
	if err := b.Engine.API.ContainerRestart(ctx, worker, container.StopOptions{}); err != nil {
		t.Fatal(err)
	}
	followed.waitFor(t, prefixed("worker-kubernetes", "worker.started"), 2)
	if err := stop(); err != nil {
		t.Errorf("the follow ended with %v, want nil after Ctrl-C", err)
	}
	if n := followed.count(prefixed("worker-kubernetes", "worker.started")); n != 2 {
		t.Errorf("the worker's start line was printed %d times across one restart, want 2 (no line twice):\n%s", n, followed)
	}
	if n := followed.count(prefixed("controller", mark)); n != 1 {
		t.Errorf("the controller's line was printed %d times, want once", n)
	}

	// --tail and --since bound one service's lines (printed bare: one service, no prefix).
	tail := readLogs(t, observe.LogsOptions{StateDir: dir, Services: []string{"controller"}, Tail: 1})
	if lines := strings.Split(strings.TrimSuffix(tail, "\n"), "\n"); len(lines) != 1 || strings.Contains(tail, " | ") {
		t.Errorf("--tail 1 controller: %q", tail)
	}
	stamped := readLogs(t, observe.LogsOptions{StateDir: dir, Services: []string{"controller"}, Tail: -1, Timestamps: true})
	at := lineTime(t, stamped, mark)
	later := fmt.Sprintf("after-%d", time.Now().UnixNano())
	standinLog(t, apiURL, later)
	since := readLogsUntil(t, observe.LogsOptions{StateDir: dir, Services: []string{"controller"}, Tail: -1, Since: at.Add(time.Nanosecond).Format(time.RFC3339Nano)}, later)
	if strings.Contains(since, mark) || strings.Contains(since, `"event":"listening"`) {
		t.Errorf("--since after the marked line still shows it or earlier ones:\n%s", since)
	}
	return all + followed.String() + tail + stamped + since
}

// checkKubernetesLogs is `occ dev logs` on a running Kubernetes-only environment, through the
// recorded cluster's pods/log (served by the played kubelet): every workload of the control
// plane and the platform under its prefix; a follow of the worker sees a line its container
// writes and the first line of the Pod that replaces it; --tail and --since bound the API's
// lines; the built binary refuses an unknown service naming the known ones and completes the
// names from the state.
func checkKubernetesLogs(t *testing.T, b *kubeBed, bin, dir string) string {
	t.Helper()
	ctx := context.Background()
	st, err := state.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	node := st.Cluster.NodeAddress
	kube, _, _ := kubeClientOf(t, st.Cluster)
	const ns = "oce-system"
	opts := observe.LogsOptions{StateDir: dir, Tail: -1}

	all := readLogs(t, opts)
	out := newLogBuffer()
	_, _ = out.Write([]byte(all))
	t.Logf("occ dev logs, every service:\n%s", all)
	services := []string{"postgres", "openclaw-enterprise-api", "openclaw-enterprise-worker", "openclaw-enterprise-initialization/migration",
		"openclaw-enterprise-initialization/bootstrap", "occ-development-api-proxy", "openshell-gateway", "agent-sandbox-controller"}
	for _, svc := range services {
		if out.count(prefixed(svc, playedStart)) == 0 {
			t.Errorf("occ dev logs has no line of %s:\n%s", svc, all)
		}
	}

	// Follow the worker: a line its container writes, then the Pod that replaces it.
	worker := onePod(t, kube, ns, "app.kubernetes.io/component=worker")
	followed, stop := follow(observe.LogsOptions{StateDir: dir, Services: []string{"openclaw-enterprise-worker"}, Tail: -1})
	followed.waitFor(t, regexp.MustCompile(playedStart), 1)
	mark := fmt.Sprintf("followed-%d", time.Now().UnixNano())
	appendContainerLog(t, b, node, worker, "worker", time.Now(), mark)
	followed.waitFor(t, regexp.MustCompile("^"+mark+"$"), 1)
	if err := kube.CoreV1().Pods(ns).Delete(ctx, worker.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	followed.waitFor(t, regexp.MustCompile(playedStart), 2)
	if err := stop(); err != nil {
		t.Errorf("the follow ended with %v, want nil after Ctrl-C", err)
	}
	if lines := followed.String(); strings.Count(lines, mark) != 1 || !strings.Contains(lines, "Pod "+ns+"/"+worker.Name+" started") {
		t.Errorf("the followed worker logs:\n%s", lines)
	}

	// --tail and --since: an old line and a new one in the API's container log.
	api := onePod(t, kube, ns, "app.kubernetes.io/component=api")
	old, recent := fmt.Sprintf("an-hour-ago-%d", time.Now().UnixNano()), fmt.Sprintf("just-now-%d", time.Now().UnixNano())
	appendContainerLog(t, b, node, api, "api", time.Now().Add(-time.Hour), old)
	appendContainerLog(t, b, node, api, "api", time.Now(), recent)
	one := []string{"openclaw-enterprise-api"}
	if got := readLogs(t, observe.LogsOptions{StateDir: dir, Services: one, Tail: 1}); got != recent+"\n" {
		t.Errorf("--tail 1: %q, want only %q", got, recent)
	}
	got := readLogs(t, observe.LogsOptions{StateDir: dir, Services: one, Tail: -1, Since: "30m"})
	if strings.Contains(got, old) || !strings.Contains(got, recent) {
		t.Errorf("--since 30m: %q, want %q and not %q", got, recent, old)
	}
	stamped := readLogs(t, observe.LogsOptions{StateDir: dir, Services: one, Tail: 1, Timestamps: true})
	if ts, rest, _ := strings.Cut(strings.TrimSuffix(stamped, "\n"), " "); rest != recent {
		t.Errorf("--timestamps: %q", stamped)
	} else if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
		t.Errorf("--timestamps: %q does not start with an RFC 3339 time", stamped)
	}

	// The binary: an unknown service, a bad --since, completion.
	res, err := exec.Command(bin, "dev", "logs", "--state-dir", dir, "openclaw-enterprise-apj").CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(res), `SERVICE "openclaw-enterprise-apj" is not a service`) || !strings.Contains(string(res), "openclaw-enterprise-api, ") {
		t.Errorf("occ dev logs with an unknown service: %v\n%s", err, res)
	}
	res, err = exec.Command(bin, "dev", "logs", "--state-dir", dir, "--since", "yesterday").CombinedOutput()
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(res), `--since "yesterday" is neither a duration nor an RFC 3339 time`) {
		t.Errorf("occ dev logs --since yesterday: %v\n%s", err, res)
	}
	res, err = exec.Command(bin, "__complete", "dev", "logs", "--state-dir", dir, "openclaw-enterprise-").Output()
	if err != nil || !strings.Contains(string(res), "openclaw-enterprise-api\n") || !strings.Contains(string(res), "openclaw-enterprise-worker\n") || strings.Contains(string(res), "postgres") {
		t.Errorf("completion of occ dev logs: %v\n%s", err, res)
	}
	res, err = exec.Command(bin, "dev", "status", "--state-dir", dir).Output()
	for _, svc := range []string{"openclaw-enterprise-api", "openclaw-enterprise-initialization", "openshell-gateway", "agent-sandbox-controller"} {
		if !strings.Contains(string(res), "\n  "+svc+" ") {
			t.Errorf("occ dev status lists no workload %s (%v):\n%s", svc, err, res)
		}
	}
	return all + followed.String() + got + stamped
}

// standinLog has the controller stand-in write line to its log.
func standinLog(t *testing.T, apiURL, line string) {
	t.Helper()
	resp, err := http.Get(apiURL + "/_standin/log?line=" + url.QueryEscape(line))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /_standin/log: %s", resp.Status)
	}
}

// readLogsUntil reads once more until the output holds want: the engine timestamps a line when
// it reads it from the container, which may be after the request that wrote it returned.
func readLogsUntil(t *testing.T, opts observe.LogsOptions, want string) string {
	t.Helper()
	opts.Follow = true
	out, stop := follow(opts)
	out.waitFor(t, regexp.MustCompile(regexp.QuoteMeta(want)), 1)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// lineTime is the timestamp of the first line of stamped (--timestamps output) holding text.
func lineTime(t *testing.T, stamped, text string) time.Time {
	t.Helper()
	for _, l := range strings.Split(stamped, "\n") {
		if strings.Contains(l, text) {
			ts, _, _ := strings.Cut(l, " ")
			at, err := time.Parse(time.RFC3339Nano, ts)
			if err != nil {
				t.Fatalf("line %q does not start with a timestamp", l)
			}
			return at
		}
	}
	t.Fatalf("no line holds %q:\n%s", text, stamped)
	return time.Time{}
}

// composeContainer is the ID of a service's one container.
func composeContainer(t *testing.T, b *composeBed, project, service string) string {
	t.Helper()
	st, err := b.engine.API.ContainerList(context.Background(), container.ListOptions{All: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range st {
		if c.Labels["com.docker.compose.project"] == project && c.Labels["com.docker.compose.service"] == service {
			return c.ID
		}
	}
	t.Fatalf("no container of %s in project %s", service, project)
	return ""
}

// onePod is the one Pod the selector matches in namespace.
func onePod(t *testing.T, kube kubernetes.Interface, namespace, selector string) corev1.Pod {
	t.Helper()
	pods, err := kube.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("Pods %s in %s: %v (%v)", selector, namespace, pods, err)
	}
	return pods.Items[0]
}

// appendContainerLog writes a line into a Pod's container log in the node, at the path and in
// the format the CRI runtime writes it: what the container would print if a process ran in it.
func appendContainerLog(t *testing.T, b *kubeBed, node string, pod corev1.Pod, container string, at time.Time, text string) {
	t.Helper()
	path := fmt.Sprintf("/var/log/pods/%s_%s_%s/%s/0.log", pod.Namespace, pod.Name, pod.UID, container)
	entry := at.UTC().Format(time.RFC3339Nano) + " stdout F " + text
	res, err := b.Engine.Exec(context.Background(), node, false, "sh", "-c", `printf '%s\n' "$1" >> "$2"`, "sh", entry, path)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("append to %s in %s: %v %s", path, node, err, res.Stderr)
	}
}
