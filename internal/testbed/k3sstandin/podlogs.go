package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	listerscorev1 "k8s.io/client-go/listers/core/v1"
)

// Container logs, played. No container of a Pod runs in the stand-in node, so nothing writes
// the container's stdout. The played kubelet writes one line into each container's log when it
// reports the container started, at the path and in the format the CRI runtime writes
// (/var/log/pods/<namespace>_<pod>_<uid>/<container>/<restart count>.log, one
// "<RFC 3339 time> <stream> <F|P> <text>" entry per line). A test that needs a container to say
// more appends entries there itself, as the container's runtime would. The kubelet's log
// endpoint (GET /containerLogs/<namespace>/<pod>/<container> on port 10250, which the
// apiserver's pods/log subresource calls) serves these files with the kubelet's query
// parameters: follow, previous, tailLines, sinceSeconds, sinceTime, timestamps, limitBytes.

// podLogRoot is where the CRI runtime writes container logs on a node.
const podLogRoot = "/var/log/pods"

// kubeletPort is the kubelet's HTTPS port, which the Node's daemonEndpoints announce.
const kubeletPort = 10250

// followPoll is how often a followed log file is read again for new entries: the stand-in has
// no inotify watch, and a tenth of a second is below what a reader notices.
const followPoll = 100 * time.Millisecond

// containerLogPath is the log file of one run (restart count) of a Pod's container.
// root is podLogRoot in the node.
func containerLogPath(root string, pod *corev1.Pod, container string, restart int32) string {
	dir := fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID)
	return filepath.Join(root, dir, container, strconv.Itoa(int(restart))+".log")
}

// writeStartLines writes, for every container status reports started (running or completed)
// whose log file does not exist yet, the one line the played container says. It is repeated on
// every sync and writes a file once.
func writeStartLines(root string, pod *corev1.Pod, status *corev1.PodStatus) {
	for _, list := range [][]corev1.ContainerStatus{status.InitContainerStatuses, status.ContainerStatuses} {
		for _, cs := range list {
			var what string
			switch {
			case cs.State.Running != nil:
				what = "started"
			case cs.State.Terminated != nil:
				what = "ran to completion"
			default:
				continue
			}
			path := containerLogPath(root, pod, cs.Name, cs.RestartCount)
			if _, err := os.Stat(path); err == nil {
				continue
			}
			text := fmt.Sprintf("occ test-bed played kubelet: container %s of Pod %s/%s %s from image %s (no process runs in the stand-in node)", cs.Name, pod.Namespace, pod.Name, what, cs.Image)
			if err := appendCRILine(path, "stdout", text); err != nil {
				logf("warning", "played kubelet: write the log of %s/%s container %s: %v", pod.Namespace, pod.Name, cs.Name, err)
			}
		}
	}
}

// appendCRILine appends one full-line entry to a CRI log file, creating it and its directory.
func appendCRILine(path, stream, text string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "%s %s F %s\n", time.Now().UTC().Format(time.RFC3339Nano), stream, text)
	return errors.Join(err, f.Close())
}

// removePodLogs removes a deleted Pod's log directory, as the kubelet does once its containers
// are gone.
func removePodLogs(root, namespace, name, uid string) {
	_ = os.RemoveAll(filepath.Join(root, fmt.Sprintf("%s_%s_%s", namespace, name, uid)))
}

// logServer is the kubelet's log endpoint over TLS: a serving certificate of the server CA for
// the node's names and address, and client certificates of that CA required (the apiserver
// presents its kubelet client certificate, as k3s configures it).
type logServer struct {
	pods listerscorev1.PodLister
	// current reads the Pod a request names as the apiserver holds it now. The real kubelet
	// answers from its own container state, so a container it reported running has a log at
	// once; the informer cache can be a moment behind that report, and a reader that saw the
	// report through its own watch would otherwise be told the container has not started. Nil
	// reads the cache.
	current func(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	root    string
}

// serveLogs listens on the kubelet port until ctx ends.
func serveLogs(ctx context.Context, client kubernetes.Interface, pods listerscorev1.PodLister, serving certFiles, caFile string) error {
	cert, err := tls.LoadX509KeyPair(serving.Cert, serving.Key)
	if err != nil {
		return fmt.Errorf("kubelet serving certificate: %w", err)
	}
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("no certificate in %s", caFile)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("0.0.0.0", strconv.Itoa(kubeletPort)))
	if err != nil {
		return fmt.Errorf("listen on the kubelet port: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /containerLogs/{namespace}/{pod}/{container}", &logServer{pods: pods, root: podLogRoot, current: func(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
		return client.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	}})
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12},
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// logQuery is the kubelet's reading of PodLogOptions from the query string.
type logQuery struct {
	follow, previous, timestamps bool
	tailLines, limitBytes        int64 // -1: not set
	since                        time.Time
}

func parseLogQuery(r *http.Request) (logQuery, error) {
	q := logQuery{tailLines: -1, limitBytes: -1}
	v := r.URL.Query()
	boolean := func(key string) (bool, error) {
		s := v.Get(key)
		if s == "" {
			return false, nil
		}
		return strconv.ParseBool(s)
	}
	var err error
	if q.follow, err = boolean("follow"); err != nil {
		return q, fmt.Errorf("follow: %w", err)
	}
	if q.previous, err = boolean("previous"); err != nil {
		return q, fmt.Errorf("previous: %w", err)
	}
	if q.timestamps, err = boolean("timestamps"); err != nil {
		return q, fmt.Errorf("timestamps: %w", err)
	}
	for key, dst := range map[string]*int64{"tailLines": &q.tailLines, "limitBytes": &q.limitBytes} {
		if s := v.Get(key); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < 0 {
				return q, fmt.Errorf("%s %q must be a non-negative integer", key, s)
			}
			*dst = n
		}
	}
	if s := v.Get("sinceSeconds"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 1 {
			return q, fmt.Errorf("sinceSeconds %q must be a positive integer", s)
		}
		q.since = time.Now().Add(-time.Duration(n) * time.Second)
	}
	if s := v.Get("sinceTime"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return q, fmt.Errorf("sinceTime %q: %w", s, err)
		}
		q.since = t
	}
	return q, nil
}

func (s *logServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ns, name, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	q, err := parseLogQuery(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var pod *corev1.Pod
	if s.current != nil {
		pod, err = s.current(r.Context(), ns, name)
	} else {
		pod, err = s.pods.Pods(ns).Get(name)
	}
	if apierrors.IsNotFound(err) {
		http.Error(w, fmt.Sprintf("pod %q/%q not found", ns, name), http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	cs := findStatus(pod.Status.ContainerStatuses, container)
	if cs == nil {
		cs = findStatus(pod.Status.InitContainerStatuses, container)
	}
	if cs == nil {
		http.Error(w, fmt.Sprintf("container %q in pod %q is not available", container, name), http.StatusNotFound)
		return
	}
	restart := cs.RestartCount
	if q.previous {
		if restart == 0 {
			http.Error(w, fmt.Sprintf("previous terminated container %q in pod %q not found", container, name), http.StatusBadRequest)
			return
		}
		restart--
	} else if cs.State.Running == nil && cs.State.Terminated == nil {
		reason := ""
		if wt := cs.State.Waiting; wt != nil {
			reason = ": " + wt.Reason
		}
		http.Error(w, fmt.Sprintf("container %q in pod %q is waiting to start%s", container, name, reason), http.StatusBadRequest)
		return
	}
	f, err := os.Open(containerLogPath(s.root, pod, container, restart))
	if errors.Is(err, fs.ErrNotExist) {
		http.Error(w, fmt.Sprintf("container %q in pod %q has no log yet", container, name), http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "text/plain")
	out := &limitWriter{w: w, left: q.limitBytes}
	flush := func() {
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
	}
	rd := bufio.NewReader(f)
	if q.tailLines >= 0 {
		if err := skipToTail(f, rd, q.tailLines); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	following := q.follow && !q.previous && cs.State.Running != nil
	var partial []byte
	for {
		line, err := rd.ReadBytes('\n')
		if len(line) > 0 && line[len(line)-1] == '\n' {
			line = append(partial, line...)
			partial = nil
			if !writeEntry(out, line, q) {
				return
			}
			continue
		}
		// A line without its newline is still being written: keep it for the next read.
		partial = append(partial, line...)
		if err != nil && !errors.Is(err, io.EOF) {
			return
		}
		flush()
		if !following || !s.stillRunning(r.Context(), pod, container, restart) {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-time.After(followPoll):
		}
	}
}

// stillRunning reports whether the container run whose log is followed is still the running
// one: the kubelet ends a follow once the container stops or the Pod goes. The cache says so
// cheaply; an end it reports is confirmed against the current Pod, as the cache can lag.
func (s *logServer) stillRunning(ctx context.Context, pod *corev1.Pod, container string, restart int32) bool {
	now, err := s.pods.Pods(pod.Namespace).Get(pod.Name)
	if err == nil && runs(now, pod.UID, container, restart) {
		return true
	}
	if s.current == nil {
		return false
	}
	now, err = s.current(ctx, pod.Namespace, pod.Name)
	return err == nil && runs(now, pod.UID, container, restart)
}

// runs reports whether pod is still the one with uid and its container's run restart is running.
func runs(pod *corev1.Pod, uid types.UID, container string, restart int32) bool {
	if pod.UID != uid || pod.DeletionTimestamp != nil {
		return false
	}
	cs := findStatus(pod.Status.ContainerStatuses, container)
	if cs == nil {
		cs = findStatus(pod.Status.InitContainerStatuses, container)
	}
	return cs != nil && cs.State.Running != nil && cs.RestartCount == restart
}

// skipToTail positions rd at the start of the file's last n lines.
func skipToTail(f *os.File, rd *bufio.Reader, n int64) error {
	data, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	start, pos := len(data), len(data)
	if pos > 0 && data[pos-1] == '\n' {
		pos--
	}
	for range n {
		j := bytes.LastIndexByte(data[:pos], '\n')
		if j < 0 {
			start = 0
			break
		}
		start, pos = j+1, j
	}
	if _, err := f.Seek(int64(start), io.SeekStart); err != nil {
		return err
	}
	rd.Reset(f)
	return nil
}

// writeEntry decodes one CRI entry and writes its text as the kubelet does: since-filtered,
// with the timestamp in front when asked. It reports false once the client or the byte limit
// ends the response.
func writeEntry(w *limitWriter, entry []byte, q logQuery) bool {
	fields := bytes.SplitN(bytes.TrimSuffix(entry, []byte("\n")), []byte(" "), 4)
	if len(fields) < 3 {
		return true
	}
	ts, err := time.Parse(time.RFC3339Nano, string(fields[0]))
	if err != nil {
		return true
	}
	if !q.since.IsZero() && ts.Before(q.since) {
		return true
	}
	var text []byte
	if len(fields) == 4 {
		text = fields[3]
	}
	var b bytes.Buffer
	if q.timestamps {
		b.WriteString(ts.UTC().Format(time.RFC3339Nano) + " ")
	}
	b.Write(text)
	if string(fields[2]) != "P" {
		b.WriteByte('\n')
	}
	_, err = w.Write(b.Bytes())
	return err == nil && w.left != 0
}

// limitWriter stops after left bytes (-1: no limit), as limitBytes does.
type limitWriter struct {
	w    io.Writer
	left int64
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if l.left >= 0 && int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.w.Write(p)
	if l.left >= 0 {
		l.left -= int64(n)
	}
	return n, err
}

// kubeletNames are the serving certificate's names: the node's name and its address.
func kubeletNames(cfg *serverConfig, nodeIP net.IP) ([]string, []net.IP) {
	return []string{cfg.nodeName, "localhost"}, []net.IP{nodeIP, net.ParseIP("127.0.0.1")}
}
