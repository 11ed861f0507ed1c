package openshell

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/gateway"
	"github.com/openclaw/occ/internal/installation"
)

// harnessToken is the canary app-server token: it must reach the Harness in the Authorization
// header and nowhere else.
const harnessToken = "occ-canary-app-server-token-5f0c2d"

// serviceHost is the host a gateway advertises for the fake Harness's Sandbox service. It does
// not resolve on hosts without a *.localhost resolver, and the probe must never look it up.
const serviceHost = "ws--sb.openshell.localhost:8080"

// fakeHarness plays a Codex Harness behind its bearer-passthrough route on the gateway listener:
// like OpenShell's router it answers only requests whose Host names its service (others get
// 404), the app-server accepts a WebSocket upgrade only with the right bearer token (and only
// once serving is set), and the runtime status route answers with a fixed status code and body.
type fakeHarness struct {
	host         string // the Host the gateway routes to this Harness; empty accepts any
	misrouted    atomic.Int64
	serving      atomic.Bool
	statusCode   int
	statusBody   string
	hang         bool // the app-server accepts the connection and never answers
	upgrades     atomic.Int64
	statusHits   atomic.Int64
	sawStatusTok atomic.Bool
}

func (h *fakeHarness) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.host != "" && r.Host != h.host {
		h.misrouted.Add(1)
		http.Error(w, "service endpoint not found", http.StatusNotFound)
		return
	}
	switch r.URL.Path {
	case RuntimeStatusPath:
		h.statusHits.Add(1)
		h.sawStatusTok.Store(r.Header.Get("Authorization") == "Bearer "+harnessToken)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(h.statusCode)
		// A careless runtime may echo the request; {{auth}} stands for the header it received.
		fmt.Fprint(w, strings.ReplaceAll(h.statusBody, "{{auth}}", r.Header.Get("Authorization")))
	case "/":
		if h.hang {
			<-r.Context().Done()
			return
		}
		if !h.serving.Load() {
			http.Error(w, "app-server not listening", http.StatusBadGateway)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+harnessToken {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		// Counted before the upgrade: the client may return as soon as the 101 is written.
		h.upgrades.Add(1)
		up := websocket.Upgrader{}
		conn, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		conn.Close()
	default:
		http.NotFound(w, r)
	}
}

// start serves the Harness over plain HTTP or TLS as the service serviceHost on a gateway
// listener, and returns its endpoint as HarnessEndpoint would derive it, plus the roots that
// trust a TLS listener.
func (h *fakeHarness) start(t *testing.T, useTLS bool) (*HarnessEndpoint, *x509.CertPool) {
	t.Helper()
	h.host = serviceHost
	srv := serveHarness(t, h, useTLS)
	var roots *x509.CertPool
	if useTLS {
		roots = x509.NewCertPool()
		roots.AddCert(srv.Certificate())
	}
	return endpointVia(t, srv, useTLS), roots
}

// endpointVia is the endpoint of the service serviceHost advertised by the gateway listening at
// srv: the URL names the service, the route reaches srv. httptest's certificate names 127.0.0.1
// and not serviceHost, so a wss probe verifies the gateway, never the Host header.
func endpointVia(t *testing.T, srv *httptest.Server, useTLS bool) *HarnessEndpoint {
	t.Helper()
	scheme := "http://"
	if useTLS {
		scheme = "https://"
	}
	wsURL, origin, err := WebSocketURL(scheme + serviceHost + "/")
	if err != nil {
		t.Fatal(err)
	}
	route := gateway.ServiceRoute{Address: srv.Listener.Addr().String(), Host: serviceHost, TLS: useTLS, ServerName: "127.0.0.1"}
	return &HarnessEndpoint{URL: wsURL, Origin: origin, WorkspaceRoot: "/sandbox/enterprise", Route: route}
}

// serveHarness starts h; TLS handshake failures the tests provoke on purpose are not logged.
func serveHarness(t *testing.T, h http.Handler, useTLS bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	if useTLS {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv
}

// probe runs ProbeHarness and fails the test if the canary token shows up anywhere in the answer.
// Unless the test dials itself, the probe may connect only to its route's gateway address: a
// dial of anything else (the service host above all) fails the test.
func probe(t *testing.T, p HarnessProbe) *HarnessStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if p.DialContext == nil && p.Endpoint != nil {
		p.DialContext = gatewayOnlyDialer(t, p.Endpoint.Route.Address)
	}
	st, err := ProbeHarness(ctx, p)
	if err != nil {
		if strings.Contains(err.Error(), harnessToken) {
			t.Fatalf("token leaked into the error %q", err)
		}
		t.Fatalf("probe: %v", err)
	}
	b, _ := json.Marshal(st)
	if strings.Contains(string(b), harnessToken) {
		t.Fatalf("token leaked into the status %s", b)
	}
	return st
}

// gatewayOnlyDialer dials gatewayAddr and refuses, failing the test, any other address: the
// stand-in for a resolver that knows no *.openshell.localhost name.
func gatewayOnlyDialer(t *testing.T, gatewayAddr string) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if addr != gatewayAddr {
			t.Errorf("the probe dialed %s %s, want only the gateway at %s", network, addr, gatewayAddr)
			return nil, fmt.Errorf("lookup %s: no such host", addr)
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
}

func forBothSchemes(t *testing.T, f func(t *testing.T, useTLS bool)) {
	for _, useTLS := range []bool{false, true} {
		name := "ws"
		if useTLS {
			name = "wss"
		}
		t.Run(name, func(t *testing.T) { f(t, useTLS) })
	}
}

// A Codex app-server that is up accepts the authenticated handshake: the Harness is serving, and
// the status route is not consulted.
func TestProbeHarnessServing(t *testing.T) {
	forBothSchemes(t, func(t *testing.T, useTLS bool) {
		h := &fakeHarness{statusCode: http.StatusOK, statusBody: `{"runtimeFailure":{"code":"LOGIN_FAILED"}}`}
		h.serving.Store(true)
		ep, roots := h.start(t, useTLS)
		st := probe(t, HarnessProbe{Endpoint: ep, Token: harnessToken, RootCAs: roots})
		if st.State != HarnessServing || h.upgrades.Load() != 1 || h.statusHits.Load() != 0 || h.misrouted.Load() != 0 {
			t.Fatalf("status %+v, upgrades %d, status hits %d, misrouted %d", st, h.upgrades.Load(), h.statusHits.Load(), h.misrouted.Load())
		}
	})
}

// A caller with a wrong token is refused by the app-server, and the runtime reports a failed
// login: the Harness is failed with the runtime's own description, and the token the runtime
// echoed in its message is removed.
func TestProbeHarnessWrongTokenRuntimeFailure(t *testing.T) {
	forBothSchemes(t, func(t *testing.T, useTLS bool) {
		h := &fakeHarness{statusCode: http.StatusOK,
			statusBody: `{"runtimeFailure":{"check":"login","code":"LOGIN_FAILED","message":"login rejected for {{auth}}\nretry later"}}`}
		h.serving.Store(true)
		ep, roots := h.start(t, useTLS)
		// The app-server refuses the wrong token, so only the status route can answer.
		st := probe(t, HarnessProbe{Endpoint: ep, Token: "wrong-" + harnessToken, RootCAs: roots})
		if st.State != HarnessFailed || h.upgrades.Load() != 0 {
			t.Fatalf("status %+v, upgrades %d", st, h.upgrades.Load())
		}
		if st.Failure != "check login LOGIN_FAILED: login rejected for Bearer [redacted] retry later" {
			t.Fatalf("failure text %q", st.Failure)
		}
	})
}

// A Harness whose app-server is not listening yet and that reports no failure is starting,
// whatever the status route says short of a failure report; the reason names what was seen.
func TestProbeHarnessStarting(t *testing.T) {
	cases := []struct {
		name, body, reason string
		code               int
	}{
		{"route unavailable", `{"runtimeFailure":{"code":"X"}}`, "runtime status: HTTP 503", http.StatusServiceUnavailable},
		{"garbage body", `<html>proxy error</html>`, "not a JSON object", http.StatusOK},
		{"no failure reported", `{"ready":false}`, "no runtime failure reported", http.StatusOK},
		{"null failure", `{"runtimeFailure":null}`, "no runtime failure reported", http.StatusOK},
		{"oversized body", `{"pad":"` + strings.Repeat("x", 20000) + `"}`, "exceeds 16384 bytes", http.StatusOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := &fakeHarness{statusCode: c.code, statusBody: c.body}
			ep, _ := h.start(t, false)
			st := probe(t, HarnessProbe{Endpoint: ep, Token: harnessToken})
			if st.State != HarnessStarting || !strings.Contains(st.Reason, "app-server handshake: HTTP 502") || !strings.Contains(st.Reason, c.reason) {
				t.Fatalf("status %+v", st)
			}
			if h.statusHits.Load() != 1 || !h.sawStatusTok.Load() {
				t.Fatalf("status route hits %d, bearer seen %v", h.statusHits.Load(), h.sawStatusTok.Load())
			}
		})
	}
}

// The Sandbox route exists but nothing listens behind it yet (connection refused): starting, not
// an error, because the Harness may still come up.
func TestProbeHarnessUnreachableIsStarting(t *testing.T) {
	h := &fakeHarness{}
	srv := httptest.NewServer(h)
	ep := endpointVia(t, srv, false)
	srv.Close()
	st := probe(t, HarnessProbe{Endpoint: ep, Token: harnessToken})
	if st.State != HarnessStarting || !strings.Contains(st.Reason, "connection refused") {
		t.Fatalf("status %+v", st)
	}
}

// A wss endpoint whose certificate the caller does not trust is never treated as serving, and
// the reason points at the root certificate setting.
func TestProbeHarnessUntrustedCertificate(t *testing.T) {
	h := &fakeHarness{statusCode: http.StatusOK, statusBody: `{"runtimeFailure":"x"}`}
	h.serving.Store(true)
	ep, _ := h.start(t, true)
	st := probe(t, HarnessProbe{Endpoint: ep, Token: harnessToken})
	if st.State != HarnessStarting || !strings.Contains(st.Reason, "rootCertificatePath") || h.upgrades.Load() != 0 || h.statusHits.Load() != 0 {
		t.Fatalf("status %+v, upgrades %d, status hits %d", st, h.upgrades.Load(), h.statusHits.Load())
	}
}

// An app-server that accepts the TCP connection and never answers cannot hold the probe: each
// step gives up after its bound and the Harness reads as starting.
func TestProbeHarnessHungHandshakeIsBounded(t *testing.T) {
	h := &fakeHarness{hang: true, statusCode: http.StatusServiceUnavailable}
	ep, _ := h.start(t, false)
	st := probe(t, HarnessProbe{Endpoint: ep, Token: harnessToken, Timeout: 200 * time.Millisecond})
	if st.State != HarnessStarting || !strings.Contains(st.Reason, "no answer within 200ms") {
		t.Fatalf("status %+v", st)
	}
}

// A runtime failure report is carried as one bounded line, whatever its size or shape.
func TestDescribeFailureBounded(t *testing.T) {
	long := describeFailure(json.RawMessage(`"`+strings.Repeat("é", 2000)+`"`), harnessToken)
	if len(long) > maxFailureBytes+len("…") || !strings.HasSuffix(long, "…") || !strings.HasPrefix(long, "éé") {
		t.Fatalf("long failure %d bytes: %q…", len(long), long[:20])
	}
	// The token is removed before the cut, so no prefix of it can survive at the boundary.
	edge := describeFailure(json.RawMessage(`"`+strings.Repeat("a", maxFailureBytes-5)+harnessToken+`"`), harnessToken)
	if strings.Contains(edge, harnessToken[:5]) {
		t.Fatalf("a token prefix survived the cut: %q", edge[len(edge)-20:])
	}
	if got := describeFailure(json.RawMessage(`[1,2]`), harnessToken); got != "the Harness reported a runtime failure without a description" {
		t.Fatalf("array failure %q", got)
	}
}

// Advertised service origins become WebSocket URLs; anything that could carry a secret or a
// second destination is refused with the driver's sentence.
func TestWebSocketURL(t *testing.T) {
	good := map[string][2]string{
		"http://ws--sb.openshell.localhost:8080/": {"ws://ws--sb.openshell.localhost:8080/", "http://ws--sb.openshell.localhost:8080/"},
		"https://sb.example.com":                  {"wss://sb.example.com/", "https://sb.example.com/"},
	}
	for in, want := range good {
		ws, origin, err := WebSocketURL(in)
		if err != nil || ws != want[0] || origin != want[1] {
			t.Errorf("%s: got %q %q %v, want %q %q", in, ws, origin, err, want[0], want[1])
		}
	}
	for _, in := range []string{
		"http://user:" + harnessToken + "@sb.example.com/",
		"https://sb.example.com/?token=" + harnessToken,
		"https://sb.example.com/#" + harnessToken,
		"https://sb.example.com/app",
		"ftp://sb.example.com/",
		"ws://sb.example.com/",
		"sb.example.com:80",
		"http://%zz",
	} {
		_, _, err := WebSocketURL(in)
		if err == nil || !strings.HasPrefix(err.Error(), msgHarnessServiceURL) || strings.Contains(err.Error(), harnessToken) {
			t.Errorf("%s: err %v", in, err)
		}
	}
}

// Probes that cannot be made are errors, never a state, and none quotes the token.
func TestProbeHarnessRefusals(t *testing.T) {
	ctx := context.Background()
	cases := map[string]HarnessProbe{
		"outbound OpenClaw":         {Endpoint: &HarnessEndpoint{Outbound: true}, Token: harnessToken},
		"no endpoint":               {Token: harnessToken},
		"no token":                  {Endpoint: &HarnessEndpoint{URL: "ws://h/"}},
		"multi-line token":          {Endpoint: &HarnessEndpoint{URL: "ws://h/"}, Token: harnessToken + "\nX-Evil: 1"},
		"http endpoint":             {Endpoint: &HarnessEndpoint{URL: "http://h/"}, Token: harnessToken},
		"endpoint with credentials": {Endpoint: &HarnessEndpoint{URL: "ws://u:p@h/"}, Token: harnessToken},
		"endpoint with query":       {Endpoint: &HarnessEndpoint{URL: "ws://h/?t=1"}, Token: harnessToken},
		"endpoint without a route":  {Endpoint: &HarnessEndpoint{URL: "ws://h/"}, Token: harnessToken},
		"route address without port": {Endpoint: &HarnessEndpoint{URL: "ws://h/",
			Route: gateway.ServiceRoute{Address: "gw", Host: "h"}}, Token: harnessToken},
		"route host with a path": {Endpoint: &HarnessEndpoint{URL: "ws://h/",
			Route: gateway.ServiceRoute{Address: "gw:1", Host: "h/x"}}, Token: harnessToken},
	}
	for name, p := range cases {
		st, err := ProbeHarness(ctx, p)
		if err == nil || st != nil || strings.Contains(err.Error(), harnessToken) {
			t.Errorf("%s: status %+v err %v", name, st, err)
		}
	}
}

// HarnessEndpoint refuses shared or foreign revisions before asking the gateway anything.
func TestHarnessEndpointRefusesForeignRevision(t *testing.T) {
	d := newTestDriver(t, nil)
	h := codexContext("oce-0123456789abcde")
	h.Revision.SandboxDriverID = "another-driver"
	if _, err := d.HarnessEndpoint(context.Background(), h); err == nil || !strings.Contains(err.Error(), "outside its selected AgentRevision") {
		t.Fatalf("foreign driver: %v", err)
	}
	h = codexContext("oce-0123456789abcde")
	h.Revision.Harness.Mode = "shared"
	if _, err := d.HarnessEndpoint(context.Background(), h); driver.CodeOf(err) != driver.CodeHarnessUnsupported {
		t.Fatalf("shared Harness: %v", err)
	}
}

// A gateway reached over TLS with a private CA serves its Sandbox routes under the same CA: the
// driver verifies a wss Harness with the openshell Backend's rootCertificatePath and finds it
// serving; without that file the same Harness is never trusted.
func TestDriverHarnessStatusUsesBackendRoots(t *testing.T) {
	h := &fakeHarness{statusCode: http.StatusServiceUnavailable, host: serviceHost}
	h.serving.Store(true)
	srv := serveHarness(t, h, true)
	ep := endpointVia(t, srv, true)
	caPath := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	withRoots := func(path string) *Driver {
		opts := testOptions(t, nil)
		backend := *opts.Backend
		backend.Configuration.RootCertificatePath = &path
		opts.Backend = &backend
		d, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	st, err := withRoots(caPath).HarnessStatus(context.Background(), ep, harnessToken)
	if err != nil || st.State != HarnessServing {
		t.Fatalf("with the Backend roots: %+v %v", st, err)
	}
	st, err = newTestDriver(t, nil).HarnessStatus(context.Background(), ep, harnessToken)
	if err != nil || st.State != HarnessStarting || h.upgrades.Load() != 1 {
		t.Fatalf("without the Backend roots: %+v %v (upgrades %d)", st, err, h.upgrades.Load())
	}
	if _, err := withRoots(filepath.Join(t.TempDir(), "missing.pem")).HarnessStatus(context.Background(), ep, harnessToken); err == nil || !strings.Contains(err.Error(), "rootCertificatePath") {
		t.Fatalf("missing root file: %v", err)
	}
}

// The app-server token file follows the bearer token file rule: one line, nothing else, and
// no refusal quotes the content.
func TestReadAppServerTokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for name, content := range map[string]string{"lf": harnessToken + "\n", "crlf": harnessToken + "\r\n", "bare": harnessToken} {
		if got, err := ReadAppServerTokenFile(write(name, content)); err != nil || got != harnessToken {
			t.Errorf("%s: %q %v", name, got, err)
		}
	}
	for name, content := range map[string]string{
		"empty":      "",
		"two lines":  harnessToken + "\n" + harnessToken + "\n",
		"space":      "Bearer " + harnessToken,
		"oversized":  strings.Repeat("x", maxAppServerTokenBytes+1),
		"only break": "\n",
	} {
		_, err := ReadAppServerTokenFile(write(strings.ReplaceAll(name, " ", "-"), content))
		if err == nil || strings.Contains(err.Error(), harnessToken) || !strings.Contains(err.Error(), "app-server token file") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := ReadAppServerTokenFile(filepath.Join(dir, "absent")); err == nil || !strings.Contains(err.Error(), "cannot be opened") {
		t.Errorf("absent file: %v", err)
	}
}

// Managed workspace mode provisions nothing yet, so it has no endpoint to report either.
func TestHarnessEndpointManagedMode(t *testing.T) {
	d := newTestDriver(t, func(c *installation.SandboxConfiguration) {
		c.Gateway.WorkspaceMode = installation.WorkspaceModeManaged
	})
	_, err := d.HarnessEndpoint(context.Background(), codexContext("oce-0123456789abcde"))
	if err == nil || !strings.Contains(err.Error(), "managed workspace mode is not implemented") {
		t.Fatalf("managed mode: %v", err)
	}
}

// A caller that gives up mid-probe gets its cancellation back, not a made-up starting state.
func TestProbeHarnessCancelled(t *testing.T) {
	h := &fakeHarness{hang: true, statusCode: http.StatusServiceUnavailable}
	ep, _ := h.start(t, false)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	st, err := ProbeHarness(ctx, HarnessProbe{Endpoint: ep, Token: harnessToken})
	if !errors.Is(err, context.Canceled) || st != nil || strings.Contains(err.Error(), harnessToken) {
		t.Fatalf("status %+v err %v", st, err)
	}
}
