package openshell

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/gateway"
)

// A provisioned Codex revision is reached at its Sandbox's bearer-passthrough service: the
// advertised origin becomes a ws:// URL on the port the client reaches the gateway on, and the
// workspace root is the configured data mount. Before provisioning there is nothing to reach,
// and a revision asking for another app-server port is not served by this service.
func TestHarnessEndpointCodexOnEmulator(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.driver(nil)
	e.prepare(d)
	h := e.attach(d, e.hctx(driver.HarnessCodex))

	if _, err := d.HarnessEndpoint(e.ctx, h); err == nil || !strings.Contains(err.Error(), "has no Harness service; provision the revision first") {
		t.Fatalf("before provisioning: %v", err)
	}
	ref, err := d.ProvisionHarness(e.ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	e.gw.Journal().Reset()
	ep, err := d.HarnessEndpoint(e.ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	host := e.harnessHost(t, ref)
	// The route reaches the gateway the client dials and names the service only in Host.
	route := gateway.ServiceRoute{Address: e.gw.Addr(), Host: host, ServerName: "127.0.0.1"}
	want := HarnessEndpoint{URL: "ws://" + host + "/", Origin: "http://" + host + "/", WorkspaceRoot: "/sandbox/enterprise", Route: route}
	if *ep != want {
		t.Fatalf("endpoint %+v, want %+v", *ep, want)
	}
	if d.DataMountPath() != want.WorkspaceRoot {
		t.Fatalf("fixture data mount %q", d.DataMountPath())
	}
	if got := e.methods(); len(got) != 1 || got[0] != "GetService" {
		t.Fatalf("HarnessEndpoint made calls %v, want one GetService", got)
	}
	if len(e.mutations()) != 0 {
		t.Fatalf("HarnessEndpoint mutated the gateway: %+v", e.mutations())
	}

	other := h
	other.Requirements.Env = append([]driver.EnvVar(nil), h.Requirements.Env...)
	for i := range other.Requirements.Env {
		if other.Requirements.Env[i].Name == envAppServerPort {
			other.Requirements.Env[i].Value = "4501"
		}
	}
	if _, err := d.HarnessEndpoint(e.ctx, other); err == nil || !strings.Contains(err.Error(), "without its exact bearer-passthrough Harness service") {
		t.Fatalf("port mismatch: %v", err)
	}
}

// Native OpenClaw connects outbound: its answer is an outbound endpoint, typed rather than an
// error, and the gateway is not asked.
func TestHarnessEndpointOpenClawOnEmulator(t *testing.T) {
	e := newEnv(t, envOptions{})
	d := e.driver(nil)
	e.prepare(d)
	h := e.attach(d, e.hctx(driver.HarnessOpenClaw))
	if _, err := d.ProvisionHarness(e.ctx, h); err != nil {
		t.Fatal(err)
	}
	e.gw.Journal().Reset()
	ep, err := d.HarnessEndpoint(e.ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	if *ep != (HarnessEndpoint{Outbound: true}) {
		t.Fatalf("endpoint %+v", *ep)
	}
	if got := e.methods(); len(got) != 0 {
		t.Fatalf("HarnessEndpoint called the gateway for OpenClaw: %v", got)
	}
}

// Issue 31: on a host whose resolver does not map *.localhost to loopback (no systemd-resolved
// or nss-myhostname), a serving Codex Harness read "starting" for ever, because the probe dialed
// the advertised <workspace>--<sandbox>.openshell.localhost host. OpenShell serves service
// traffic on its gateway listener and routes it by Host; here one listener in front of the
// emulator plays that (gRPC to the emulator, HTTP to the Harness only when Host is exactly the
// advertised service host). The gateway advertises its own port, not the front's, so only a
// probe that dials the configured endpoint and sends the advertised Host sees the Harness.
func TestHarnessStatusServingThroughGatewayListener(t *testing.T) {
	e := newEnv(t, envOptions{})
	h := &fakeHarness{statusCode: http.StatusServiceUnavailable}
	h.serving.Store(true)
	var advertised atomic.Pointer[string]
	services := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if want := advertised.Load(); want == nil || r.Host != *want {
			h.misrouted.Add(1)
			http.Error(w, "service endpoint not found", http.StatusNotFound)
			return
		}
		h.ServeHTTP(w, r)
	})
	front := frontGateway(t, e.gw.Addr(), services)
	client, err := gateway.Dial(e.ctx, gateway.Config{Endpoint: "http://" + front, InsecureTransport: gateway.InsecureTransportNetworkPolicy, Retry: testRetry})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	e.client = client
	d := e.driver(nil)
	e.prepare(d)
	hctx := e.attach(d, e.hctx(driver.HarnessCodex))
	ref, err := d.ProvisionHarness(e.ctx, hctx)
	if err != nil {
		t.Fatal(err)
	}
	host := e.harnessHost(t, ref)
	advertised.Store(&host)

	ep, err := d.HarnessEndpoint(e.ctx, hctx)
	if err != nil {
		t.Fatal(err)
	}
	st, err := d.HarnessStatus(e.ctx, ep, harnessToken)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != HarnessServing || h.upgrades.Load() != 1 || h.misrouted.Load() != 0 {
		t.Fatalf("status %+v, upgrades %d, misrouted requests %d; want serving through %s with Host %s", st, h.upgrades.Load(), h.misrouted.Load(), front, host)
	}

	// The same route carries the runtime's failure report; a runtime that echoes the bearer
	// header gets it back redacted, and the token reaches no gateway request.
	h.serving.Store(false)
	h.statusCode, h.statusBody = http.StatusOK, `{"runtimeFailure":{"code":"LOGIN_FAILED","message":"rejected {{auth}}"}}`
	st, err = d.HarnessStatus(e.ctx, ep, harnessToken)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != HarnessFailed || st.Failure != "LOGIN_FAILED: rejected Bearer [redacted]" || h.misrouted.Load() != 0 {
		t.Fatalf("status %+v, misrouted requests %d", st, h.misrouted.Load())
	}
	b, _ := json.Marshal(st)
	e.requireNoLeak(harnessToken, string(b))
}

// frontGateway listens on one loopback port the way OpenShell's gateway does for both of its
// protocols: a connection opening with the HTTP/2 preface (gRPC) is relayed to grpcAddr, any
// other is served as HTTP/1.1 by services. It returns the listener's address.
func frontGateway(t *testing.T, grpcAddr string, services http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	httpConns := &connQueue{addr: ln.Addr(), conns: make(chan net.Conn), done: make(chan struct{})}
	srv := &http.Server{Handler: services, ErrorLog: log.New(io.Discard, "", 0)}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var open []net.Conn
	track := func(c net.Conn) {
		mu.Lock()
		open = append(open, c)
		mu.Unlock()
	}
	wg.Add(2)
	go func() { defer wg.Done(); _ = srv.Serve(httpConns) }()
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			track(c)
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := bufio.NewReader(c)
				head, err := r.Peek(3)
				if err != nil {
					c.Close()
					return
				}
				conn := &peekedConn{Conn: c, r: r}
				if string(head) != "PRI" {
					httpConns.put(conn)
					return
				}
				up, err := (&net.Dialer{}).DialContext(context.Background(), "tcp", grpcAddr)
				if err != nil {
					c.Close()
					return
				}
				track(up)
				go func() { _, _ = io.Copy(up, conn); up.Close() }()
				_, _ = io.Copy(c, up)
				c.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		srv.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// connQueue is a net.Listener handing out connections frontGateway already accepted.
type connQueue struct {
	addr  net.Addr
	conns chan net.Conn
	once  sync.Once
	done  chan struct{}
}

func (q *connQueue) put(c net.Conn) {
	select {
	case q.conns <- c:
	case <-q.done:
		c.Close()
	}
}

func (q *connQueue) Accept() (net.Conn, error) {
	select {
	case c := <-q.conns:
		return c, nil
	case <-q.done:
		return nil, net.ErrClosed
	}
}

func (q *connQueue) Close() error {
	q.once.Do(func() { close(q.done) })
	return nil
}

func (q *connQueue) Addr() net.Addr { return q.addr }

// peekedConn replays the bytes frontGateway read to choose a protocol.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// harnessHost is the host the gateway serves the Harness service of ref on:
// <workspace>--<sandbox>.openshell.localhost, at the gateway's port.
func (e *env) harnessHost(t *testing.T, ref driver.SandboxResourceRef) string {
	t.Helper()
	ws, err := WorkspaceName(e.ns.Name)
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(e.gw.Addr())
	return ws + "--" + ref.ResourceName + ".openshell.localhost:" + port
}
