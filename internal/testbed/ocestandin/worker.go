package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/openclaw/occ/internal/contract"
)

// runWorker stands in for apps/controller/src/worker.mjs: it removes a stale readiness marker,
// then on every healthy database observation (each poll interval) writes the readiness file
// (ms timestamp and a newline, 0600), and removes it on shutdown. When the Installation names a
// reachable cluster it also provisions the bootstrap Namespace the way Kubernetes Compute does
// in outline: a Kubernetes namespace labelled openclaw.dev/namespace=<id> and annotated
// openclaw.dev/namespace-id=<id>, then the OCC Namespace marked ready.
func runWorker() int {
	fail := func(msg string) int {
		logEvent(map[string]any{"event": "worker.startup-failed", "message": msg})
		return 1
	}
	mode := os.Getenv("NODE_ENV")
	if mode != "development" && mode != "production" {
		return fail("NODE_ENV must explicitly select development or production mode.")
	}
	db, err := newDBClient(os.Getenv("OCC_DATABASE_URL"))
	if err != nil {
		return fail("OCC_DATABASE_URL must identify a PostgreSQL database.")
	}
	ready := os.Getenv("OCC_WORKER_READINESS_PATH")
	if ready != "" && !filepath.IsAbs(ready) {
		return fail("OCC_WORKER_READINESS_PATH must be absolute.")
	}
	poll := time.Duration(envInt("OCC_WORKER_POLL_INTERVAL_MS", 250)) * time.Millisecond
	if ready != "" {
		_ = os.Remove(ready)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	logEvent(map[string]any{"event": "worker.started"})
	healthy := false
	for {
		st, err := db.state(ctx)
		if err == nil && ready != "" {
			stamp := []byte(strconv.FormatInt(time.Now().UnixMilli(), 10) + "\n")
			if werr := os.WriteFile(ready, stamp, 0o600); werr != nil {
				err = werr
			}
		}
		if (err == nil) != healthy {
			healthy = err == nil
			ev := map[string]any{"event": "worker.database", "healthy": healthy}
			if err != nil {
				ev["error"] = err.Error()
			}
			logEvent(ev)
		}
		if err == nil {
			reconcileNamespaces(ctx, db, st)
		}
		select {
		case <-ctx.Done():
			if ready != "" {
				_ = os.Remove(ready)
			}
			logEvent(map[string]any{"event": "worker.stopped"})
			return 0
		case <-time.After(poll):
		}
	}
}

// reconcileNamespaces provisions every "provisioning" OCC Namespace in the cluster.
func reconcileNamespaces(ctx context.Context, db *dbClient, st dbState) {
	var pending []occNamespc
	for _, ns := range st.Namespaces {
		if ns.Status == "provisioning" {
			pending = append(pending, ns)
		}
	}
	if len(pending) == 0 {
		return
	}
	cfg, err := restConfig(os.Getenv("OCC_CONFIG_PATH"))
	if err != nil {
		return
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return
	}
	for _, ns := range pending {
		sum := sha256.Sum256([]byte(ns.ID))
		name := "oce-" + hex.EncodeToString(sum[:])[:15]
		obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{contract.LabelNamespace: ns.ID},
			Annotations: map[string]string{contract.AnnotationNamespaceID: ns.ID},
		}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			logEvent(map[string]any{"event": "worker.namespace-failed", "namespaceId": ns.ID, "error": err.Error()})
			continue
		}
		if err := db.call(ctx, http.MethodPost, "namespaces/"+ns.ID+"/status", occNamespc{Status: "ready", KubernetesName: name}, nil); err == nil {
			logEvent(map[string]any{"event": "worker.namespace-ready", "namespaceId": ns.ID, "kubernetesName": name})
		}
	}
}

// runHealthcheck stands in for scripts/production-healthcheck.mjs.
func runHealthcheck(args []string) int {
	if len(args) == 0 || args[0] != "worker" {
		fmt.Fprintln(os.Stderr, "Only worker health requires an exec probe.")
		return 1
	}
	ready := len(args) > 1 && args[1] == "ready"
	path := envOr("OCC_WORKER_READINESS_PATH", "/tmp/openclaw-worker-ready")
	fi, err := os.Stat(path)
	if !ready {
		if err != nil {
			fmt.Fprintln(os.Stderr, "The worker has not reported readiness.")
			return 1
		}
		return 0
	}
	poll := envInt("OCC_WORKER_POLL_INTERVAL_MS", 250)
	lease := envInt("OCC_WORKER_LEASE_DURATION_MS", 5000)
	window := max(15000, poll*60, lease*3)
	if err != nil || time.Since(fi.ModTime()) > time.Duration(window)*time.Millisecond {
		fmt.Fprintln(os.Stderr, "The worker has not reported a recent healthy database observation.")
		return 1
	}
	return 0
}

var fetchURL = regexp.MustCompile(`https?://[^'"\s)]+`)

// runFetchHealthcheck stands in for the controller healthcheck's one-line Node fetch: it GETs
// the URL the script names and exits 0 when the status is below 500.
func runFetchHealthcheck(script string) int {
	u := fetchURL.FindString(script)
	if u == "" {
		fmt.Fprintln(os.Stderr, "ocestandin node -e: the stand-in only evaluates a fetch of one http URL")
		return 1
	}
	c := &http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get(u)
	if err != nil {
		return 1
	}
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		return 1
	}
	return 0
}

func envInt(k string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil && v > 0 {
		return v
	}
	return def
}
