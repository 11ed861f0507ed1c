package main

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"
)

// runController stands in for apps/controller/src/server.mjs: the startup rules of the
// development mode, GET /api/auth/session (anonymous; 503 DEPENDENCY_UNAVAILABLE when the
// database does not answer), GET /installation and GET /namespaces/<id> authenticated by the
// bootstrap key in x-api-key (no bearer scheme), and a probe of the Kubernetes API server named
// by the Installation's kubeconfig authentication, reported on GET /_standin/kubernetes and as
// a log line; GET /_standin/log?line=<text> writes <text> as a log line (a test-bed route, so a
// test that follows the logs has a new line when it asks for one); GET /_standin/source answers
// the sha256 of the script file it was started as, read at startup (a test-bed route, so a test
// that changes the checkout's source sees which build runs).
func runController() int {
	fail := func(code, msg string) int {
		logEvent(map[string]any{"event": "startup-error", "code": code, "message": msg})
		return 1
	}
	mode := os.Getenv("NODE_ENV")
	if mode != "development" && mode != "production" {
		return fail("STARTUP_FAILED", "NODE_ENV must explicitly select development or production mode.")
	}
	host := os.Getenv("OCC_HOST")
	switch {
	case mode == "development" && (host == "127.0.0.1" || host == "::1"):
	case mode == "development" && host == "0.0.0.0" && os.Getenv("OCC_DEVELOPMENT_TRUSTED_BRIDGE_CIDR") != "":
	case mode == "development":
		return fail("STARTUP_FAILED", "Development OCC_HOST must be 127.0.0.1 or ::1, or 0.0.0.0 with OCC_DEVELOPMENT_TRUSTED_BRIDGE_CIDR.")
	default:
		return fail("STARTUP_FAILED", "the stand-in serves development mode only")
	}
	port, err := strconv.Atoi(os.Getenv("OCC_PORT"))
	if err != nil || port < 1 || port > 65535 {
		return fail("STARTUP_FAILED", "OCC_PORT must be a decimal port between 1 and 65535.")
	}
	db, err := newDBClient(os.Getenv("OCC_DATABASE_URL"))
	if err != nil {
		return fail("DATABASE_CONFIGURATION_INVALID", "OCC_DATABASE_URL must be explicitly configured in development.")
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return fail("STARTUP_FAILED", err.Error())
	}
	ctl := &controller{db: db, source: sourceDigest(serverScript)}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go ctl.watchKubernetes(ctx, os.Getenv("OCC_CONFIG_PATH"))
	srv := &http.Server{Handler: ctl, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		logEvent(map[string]any{"event": "shutdown.started"})
		_ = srv.Close()
	}()
	logEvent(map[string]any{"event": "listening", "host": host, "port": port})
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fail("STARTUP_FAILED", err.Error())
	}
	logEvent(map[string]any{"event": "shutdown.completed"})
	return 0
}

// serverScript is the controller's script, relative to the image's working directory.
const serverScript = "apps/controller/src/server.mjs"

// sourceDigest is the hex sha256 of the file at p, or why it cannot be read.
func sourceDigest(p string) string {
	data, err := os.ReadFile(p)
	if err != nil {
		return "unreadable: " + err.Error()
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

type controller struct {
	db *dbClient
	// source is the sha256 of the script the controller was started as.
	source string

	mu   sync.Mutex
	kube kubeProbe
}

func (c *controller) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	meta := map[string]any{"requestId": uuid.NewString()}
	if r.Method != http.MethodGet {
		apiError(w, http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED", "Only GET is served by the stand-in.")
		return
	}
	switch {
	case r.URL.Path == "/api/auth/session":
		if _, err := c.db.state(r.Context()); err != nil {
			apiError(w, http.StatusServiceUnavailable, "DEPENDENCY_UNAVAILABLE", "The controller session could not be resolved.")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"data": nil, "meta": meta})
	case r.URL.Path == "/_standin/log":
		// A line on demand, so a test following the logs sees a new one without waiting.
		logEvent(map[string]any{"event": "standin.log", "line": r.URL.Query().Get("line")})
		writeJSON(w, http.StatusOK, map[string]any{"logged": true})
	case r.URL.Path == "/_standin/source":
		writeJSON(w, http.StatusOK, map[string]any{"script": serverScript, "sha256": c.source})
	case r.URL.Path == "/_standin/kubernetes":
		c.mu.Lock()
		probe := c.kube
		c.mu.Unlock()
		writeJSON(w, http.StatusOK, probe)
	case r.URL.Path == "/installation":
		st, ok := c.authenticate(w, r)
		if !ok {
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"data": st.Installation, "meta": meta})
	case strings.HasPrefix(r.URL.Path, "/namespaces/"):
		st, ok := c.authenticate(w, r)
		if !ok {
			return
		}
		id := strings.TrimPrefix(r.URL.Path, "/namespaces/")
		for _, ns := range st.Namespaces {
			if ns.ID == id {
				writeJSON(w, http.StatusOK, map[string]any{"data": map[string]any{"id": ns.ID, "name": ns.Name, "status": ns.Status}, "meta": meta})
				return
			}
		}
		apiError(w, http.StatusNotFound, "NOT_FOUND", "The Namespace was not found.")
	default:
		apiError(w, http.StatusNotFound, "NOT_FOUND", "The route was not found.")
	}
}

// authenticate accepts only x-api-key; any Authorization header is refused as OCC does.
func (c *controller) authenticate(w http.ResponseWriter, r *http.Request) (dbState, bool) {
	if r.Header.Get("Authorization") != "" {
		apiError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "Controller API bearer authentication is disabled.")
		return dbState{}, false
	}
	key := r.Header.Get("x-api-key")
	if key == "" {
		apiError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "Authentication is required.")
		return dbState{}, false
	}
	st, err := c.db.state(r.Context())
	if err != nil {
		apiError(w, http.StatusServiceUnavailable, "DEPENDENCY_UNAVAILABLE", "The service key could not be verified.")
		return dbState{}, false
	}
	sum := sha256.Sum256([]byte(key))
	if st.Installation == nil || subtle.ConstantTimeCompare([]byte(hex.EncodeToString(sum[:])), []byte(st.KeyHash)) != 1 {
		apiError(w, http.StatusUnauthorized, "UNAUTHENTICATED", "The service key is not valid.")
		return dbState{}, false
	}
	return st, true
}

func apiError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": code, "message": msg}})
}

// watchKubernetes probes the cluster named by the Installation file every few seconds until
// ctx ends, keeping the latest result and logging each change.
func (c *controller) watchKubernetes(ctx context.Context, configPath string) {
	last := ""
	for {
		p := probeKubernetes(ctx, configPath)
		c.mu.Lock()
		c.kube = p
		c.mu.Unlock()
		if s := fmt.Sprint(p.Reachable, p.Server, p.Error); s != last {
			last = s
			logEvent(map[string]any{"event": "standin.kubernetes", "reachable": p.Reachable, "server": p.Server, "gitVersion": p.GitVersion, "error": p.Error})
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
	}
}
