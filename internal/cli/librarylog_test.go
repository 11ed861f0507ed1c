package cli

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// An engineer's Compose file names a variable their environment does not set: compose-go warns
// while loading the model, and the warning reaches occ's log as one plain line, not logrus's
// timestamped format on the process's raw stderr; after the run the logger is as it was.
func TestComposeWarningsGoThroughOCCsLog(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "compose.yaml")
	if err := os.WriteFile(file, []byte("services:\n  app:\n    image: busybox\n    environment:\n      VALUE: ${OCC_TEST_UNSET_VARIABLE}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	restore := routeLibraryLog(&log)
	po, err := cli.NewProjectOptions([]string{file}, cli.WithWorkingDirectory(dir), cli.WithName("occtest"), cli.WithEnv([]string{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := po.LoadProject(context.Background()); err != nil {
		t.Fatal(err)
	}
	restore()
	got := log.String()
	want := "warning: compose: The \"OCC_TEST_UNSET_VARIABLE\" variable is not set. Defaulting to a blank string.\n"
	if got != want {
		t.Fatalf("occ's log got %q, want %q", got, want)
	}
	if strings.Contains(got, "time=") || strings.Contains(got, "level=") {
		t.Fatalf("logrus's own format reached the log: %q", got)
	}
}

// client-go's own log lines (klog) and the API server's warnings (a deprecated API) reach occ's
// log as one plain line each, not klog's "W1206 11:04:05.123456 …" lines on raw stderr.
func TestKubernetesWarningsGoThroughOCCsLog(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Add("Warning", `299 - "policy/v1beta1 PodDisruptionBudget is deprecated"`)
		_, _ = w.Write([]byte(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"kube-system"}}`))
	}))
	defer srv.Close()
	var log bytes.Buffer
	restore := routeLibraryLog(&log)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Get(context.Background(), "kube-system", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	klog.Warning("a watch of the Gateway ended")
	klog.Flush()
	restore()
	got := log.String()
	for _, want := range []string{"warning: kubernetes: policy/v1beta1 PodDisruptionBudget is deprecated\n", "kubernetes: a watch of the Gateway ended\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("occ's log lacks %q:\n%s", want, got)
		}
	}
}
