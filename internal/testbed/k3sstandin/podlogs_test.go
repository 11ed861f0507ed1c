package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// playedLogs is the log endpoint of the played kubelet over plain HTTP (the TLS listener is the
// bed's), with Pods held in an indexer as the informer would hold them.
type playedLogs struct {
	root    string
	indexer cache.Indexer
	server  *logServer
	srv     *httptest.Server
}

func newPlayedLogs(t *testing.T) *playedLogs {
	t.Helper()
	p := &playedLogs{root: t.TempDir(), indexer: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})}
	mux := http.NewServeMux()
	p.server = &logServer{pods: listerscorev1.NewPodLister(p.indexer), root: p.root}
	mux.Handle("GET /containerLogs/{namespace}/{pod}/{container}", p.server)
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

func (p *playedLogs) get(t *testing.T, ctx context.Context, path string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.srv.URL+path, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

func runningPod(state corev1.ContainerState) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "api-1", Namespace: "oce-system", UID: "u1"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "api", Image: "r@sha256:1"}}},
		Status:     corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "api", Image: "r@sha256:1", State: state}}},
	}
}

// kubectl logs (through the apiserver's pods/log) on a Pod of the stand-in node: the line the
// played kubelet writes at start and lines a test appends in the runtime's format come back with
// the kubelet's tailLines, sinceTime and timestamps; a follow sees an appended line and ends
// when the container stops; a waiting container and a missing previous run are refused.
func TestPlayedContainerLogs(t *testing.T) {
	p := newPlayedLogs(t)
	pod := runningPod(corev1.ContainerState{Running: &corev1.ContainerStateRunning{}})
	if err := p.indexer.Add(pod); err != nil {
		t.Fatal(err)
	}
	writeStartLines(p.root, pod, &pod.Status)
	writeStartLines(p.root, pod, &pod.Status) // once per run, however often the Pod syncs
	path := containerLogPath(p.root, pod, "api", 0)
	mid := time.Now().UTC()
	for _, l := range []string{"second", "third"} {
		if err := appendCRILine(path, "stderr", l); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	base := "/containerLogs/oce-system/api-1/api"

	resp, body := p.get(t, ctx, base)
	lines := strings.Split(strings.TrimSuffix(body, "\n"), "\n")
	if resp.StatusCode != 200 || len(lines) != 3 || !strings.Contains(lines[0], "played kubelet: container api of Pod oce-system/api-1 started from image r@sha256:1") || lines[2] != "third" {
		t.Errorf("all lines: %d %q", resp.StatusCode, body)
	}
	if _, body = p.get(t, ctx, base+"?tailLines=2"); body != "second\nthird\n" {
		t.Errorf("tailLines=2: %q", body)
	}
	if _, body = p.get(t, ctx, base+"?tailLines=0"); body != "" {
		t.Errorf("tailLines=0: %q", body)
	}
	if _, body = p.get(t, ctx, base+"?sinceTime="+mid.Add(time.Second).Format(time.RFC3339)); body != "" {
		t.Errorf("sinceTime after every line: %q", body)
	}
	if _, body = p.get(t, ctx, base+"?tailLines=1&timestamps=true"); !strings.HasSuffix(body, " third\n") {
		t.Errorf("timestamps: %q", body)
	} else if _, err := time.Parse(time.RFC3339Nano, strings.Fields(body)[0]); err != nil {
		t.Errorf("timestamps: %q does not start with an RFC 3339 time", body)
	}
	if resp, body = p.get(t, ctx, base+"?previous=true"); resp.StatusCode != 400 || !strings.Contains(body, "previous terminated container") {
		t.Errorf("previous of a first run: %d %q", resp.StatusCode, body)
	}

	// Follow: an appended line arrives; stopping the container ends the response.
	fctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(fctx, http.MethodGet, p.srv.URL+base+"?follow=true&tailLines=0", nil)
	fresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer fresp.Body.Close()
	if err := appendCRILine(path, "stdout", "followed"); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(fresp.Body)
	if line, err := rd.ReadString('\n'); err != nil || line != "followed\n" {
		t.Fatalf("followed line: %q %v", line, err)
	}
	stopped := runningPod(corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}})
	if err := p.indexer.Update(stopped); err != nil {
		t.Fatal(err)
	}
	if rest, err := io.ReadAll(rd); err != nil || len(rest) != 0 {
		t.Errorf("after the container stopped: %q %v", rest, err)
	}

	waiting := runningPod(corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImageNeverPull"}})
	waiting.Name, waiting.UID = "api-2", "u2"
	if err := p.indexer.Add(waiting); err != nil {
		t.Fatal(err)
	}
	if resp, body = p.get(t, ctx, "/containerLogs/oce-system/api-2/api"); resp.StatusCode != 400 || !strings.Contains(body, "is waiting to start: ErrImageNeverPull") {
		t.Errorf("waiting container: %d %q", resp.StatusCode, body)
	}
	if resp, _ = p.get(t, ctx, "/containerLogs/oce-system/api-3/api"); resp.StatusCode != 404 {
		t.Errorf("absent Pod: %d", resp.StatusCode)
	}
	removePodLogs(p.root, "oce-system", "api-1", "u1")
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the deleted Pod's log is still there: %v", err)
	}
}

// The informer cache a moment behind the kubelet's own report: a reader that saw the container
// start through its watch asks for the log while the cache still holds the Pod waiting; the
// endpoint answers from the Pod as the apiserver holds it, as the kubelet answers from its own
// container state.
func TestPlayedLogsAnswerFromTheReportedPod(t *testing.T) {
	p := newPlayedLogs(t)
	stale := runningPod(corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}})
	if err := p.indexer.Add(stale); err != nil {
		t.Fatal(err)
	}
	reported := runningPod(corev1.ContainerState{Running: &corev1.ContainerStateRunning{}})
	writeStartLines(p.root, reported, &reported.Status)
	ctx := context.Background()
	base := "/containerLogs/oce-system/api-1/api"
	if resp, body := p.get(t, ctx, base); resp.StatusCode != 400 {
		t.Fatalf("from the stale cache: %d %q, want the waiting refusal (the race this test is about)", resp.StatusCode, body)
	}
	p.server.current = func(_ context.Context, ns, name string) (*corev1.Pod, error) {
		if ns == reported.Namespace && name == reported.Name {
			return reported, nil
		}
		return nil, apierrors.NewNotFound(corev1.Resource("pods"), name)
	}
	if resp, body := p.get(t, ctx, base); resp.StatusCode != 200 || !strings.Contains(body, "container api of Pod oce-system/api-1 started") {
		t.Errorf("from the reported Pod: %d %q", resp.StatusCode, body)
	}
	if resp, _ := p.get(t, ctx, "/containerLogs/oce-system/api-3/api"); resp.StatusCode != 404 {
		t.Errorf("a Pod the apiserver does not hold: %d", resp.StatusCode)
	}
}
