package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	clientset "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
)

// APIExec runs commands in containers through the API server's exec subresource, as kubectl
// exec does (WebSocket first, SPDY for older servers); no kubectl is involved.
type APIExec struct {
	Config *rest.Config
	Client clientset.Interface
}

var _ PodExec = APIExec{}

// errTooLarge reports output over the limit.
var errTooLarge = errors.New("output exceeds the limit")

// limitedBuffer keeps at most limit bytes and fails the stream beyond that.
type limitedBuffer struct {
	buf   bytes.Buffer
	limit int64
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if int64(b.buf.Len()+len(p)) > b.limit {
		return 0, errTooLarge
	}
	return b.buf.Write(p)
}

// Exec runs command and returns its standard output. A failure carries the command's standard
// error (at most 1 KiB), never its standard output, which holds what was read.
func (e APIExec) Exec(ctx context.Context, namespace, pod, container string, command []string, limit int64) ([]byte, error) {
	req := e.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: command, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(e.Config, http.MethodGet, req.URL().String())
	if err != nil {
		return nil, fmt.Errorf("exec in Pod %s/%s: %w", namespace, pod, err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(e.Config, http.MethodPost, req.URL())
	if err != nil {
		return nil, fmt.Errorf("exec in Pod %s/%s: %w", namespace, pod, err)
	}
	executor, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return nil, fmt.Errorf("exec in Pod %s/%s: %w", namespace, pod, err)
	}
	stdout := &limitedBuffer{limit: limit}
	stderr := &limitedBuffer{limit: 1 << 10}
	if err := executor.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: stdout, Stderr: stderr}); err != nil {
		if msg := bytes.TrimSpace(stderr.buf.Bytes()); len(msg) > 0 {
			return nil, fmt.Errorf("exec in Pod %s/%s container %s: %w: %s", namespace, pod, container, err, msg)
		}
		return nil, fmt.Errorf("exec in Pod %s/%s container %s: %w", namespace, pod, container, err)
	}
	return stdout.buf.Bytes(), nil
}
