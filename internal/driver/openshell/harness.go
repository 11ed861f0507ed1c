package openshell

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/gorilla/websocket"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/gateway"
)

// msgHarnessServiceURL is the driver's refusal of a service URL that is not a plain HTTP origin.
// The same sentence guards the URL CreateSandbox returns.
const msgHarnessServiceURL = "OpenShell Harness service URL must be an HTTP origin without credentials, query, or fragment."

// RuntimeStatusPath is the Harness route that reports a runtime failure while the app-server is
// not serving (for example a failed login or model probe).
const RuntimeStatusPath = "/openclaw/runtime/status"

// Harness states HarnessStatus reports.
const (
	HarnessServing  = "serving"
	HarnessStarting = "starting"
	HarnessFailed   = "failed"
)

// Bounds of one Harness probe.
const (
	// DefaultHarnessProbeTimeout bounds each of the two probes when the caller's context has no
	// earlier deadline, so a Harness that accepts the connection and never answers cannot hold
	// a status read.
	DefaultHarnessProbeTimeout = 5 * time.Second
	// maxRuntimeStatusBytes is the most of the status body that is read; the runtime's own
	// startup summary reads no more.
	maxRuntimeStatusBytes = 16 << 10
	// maxFailureBytes bounds the failure text carried into status output.
	maxFailureBytes = 512
)

// HarnessEndpoint says how Compute reaches a revision's Harness.
type HarnessEndpoint struct {
	// Outbound is true for native OpenClaw, which connects out to its node and exposes no
	// service; the other fields are then empty. It is a normal answer, not a failure.
	Outbound bool `json:"outbound"`
	// URL is the app-server's WebSocket endpoint: the Sandbox's advertised service origin with
	// http turned into ws and https into wss.
	URL string `json:"url,omitempty"`
	// Origin is the same service as an HTTP origin, where the runtime status route lives.
	Origin string `json:"origin,omitempty"`
	// WorkspaceRoot is the Harness's workspace inside the Sandbox: the configured data mount.
	WorkspaceRoot string `json:"workspaceRoot,omitempty"`
	// Route is where a probe connects: the gateway's own address, with the advertised service
	// host sent only in the Host header, so the probe needs no DNS for *.openshell.localhost.
	// It is not printed: URL says which service it is.
	Route gateway.ServiceRoute `json:"-"`
}

// HarnessStatus is what one probe of the Harness found.
type HarnessStatus struct {
	// State is serving, starting or failed.
	State string `json:"state"`
	// Failure is the runtime's own failure report, bounded and single-line, when State is failed.
	Failure string `json:"failure,omitempty"`
	// Reason says why a Harness that is not serving reads as starting.
	Reason string `json:"reason,omitempty"`
}

// HarnessEndpoint finds where Compute reaches the revision's Harness. For dedicated Codex it
// reads the Sandbox's unnamed service and requires it to be the exact bearer-passthrough
// app-server exposure provisioning created (and, when the requirements carry APP_SERVER_PORT,
// on that port), then turns its origin into a ws:// or wss:// URL. The origin is the advertised
// one with the port the client reaches the gateway on (gateway.ServiceEndpoint.URL): the gateway
// advertises its own listener port, which is not the one a Service or port-forward exposes.
// The Route says how the Harness is actually reached: through the gateway endpoint, with the
// advertised host in the Host header (gateway.ServiceRoute). Native OpenClaw connects outbound,
// so its answer is an Outbound endpoint without touching the gateway.
func (d *Driver) HarnessEndpoint(ctx context.Context, hctx driver.HarnessContext) (*HarnessEndpoint, error) {
	rev := hctx.Revision
	if rev.Harness.Mode != driver.HarnessModeDedicated || (rev.Harness.ID != driver.HarnessCodex && rev.Harness.ID != driver.HarnessOpenClaw) {
		return nil, unsupported(msgOnlyCodexOrOpenClaw, errorf("revision %s has Harness %s/%s", rev.ID, rev.Harness.ID, rev.Harness.Mode))
	}
	if !d.operator() {
		return nil, plain("OpenShell managed workspace mode is not implemented; cannot read the Harness endpoint.", nil)
	}
	if rev.NamespaceID != hctx.Namespace.ID || rev.SandboxDriverID != d.id {
		return nil, plain("Refusing to read a Sandbox outside its selected AgentRevision and Namespace.",
			errorf("revision %s has Namespace %q and sandboxDriverId %q; expected %q and %q", rev.ID, rev.NamespaceID, rev.SandboxDriverID, hctx.Namespace.ID, d.id))
	}
	if rev.Harness.ID == driver.HarnessOpenClaw {
		return &HarnessEndpoint{Outbound: true}, nil
	}
	ws, err := WorkspaceName(hctx.Namespace.Name)
	if err != nil {
		return nil, err
	}
	name, err := SandboxName(d.cfg.EffectiveSandboxNamePrefix(), rev.ID)
	if err != nil {
		return nil, err
	}
	if err := d.requireGateway("harnessEndpoint"); err != nil {
		return nil, err
	}
	ep, err := d.gw.GetService(ctx, ws, name, "")
	if gateway.IsNotFound(err) {
		return nil, plain(fmt.Sprintf("OpenShell Sandbox %s has no Harness service; provision the revision first.", name), err)
	}
	if err != nil {
		return nil, gatewayError("GetService", err)
	}
	if ep.AuthorizationMode != gateway.AuthorizationBearerPassthrough {
		return nil, plain(fmt.Sprintf("OpenShell Sandbox %s exists without its exact bearer-passthrough Harness service; remove the stale Sandbox before retrying.", name),
			errorf("its unnamed service has authorization mode %s", ep.AuthorizationMode))
	}
	if port, ok := literalEnv(hctx.Requirements.Env, envAppServerPort); ok && strconv.FormatUint(uint64(ep.TargetPort), 10) != port {
		return nil, plain(fmt.Sprintf("OpenShell Sandbox %s exists without its exact bearer-passthrough Harness service; remove the stale Sandbox before retrying.", name),
			errorf("its unnamed service targets port %d, not %s %s", ep.TargetPort, envAppServerPort, port))
	}
	wsURL, origin, err := WebSocketURL(ep.URL)
	if err != nil {
		return nil, err
	}
	return &HarnessEndpoint{URL: wsURL, Origin: origin, WorkspaceRoot: d.DataMountPath(), Route: ep.Route}, nil
}

func literalEnv(env []driver.EnvVar, name string) (string, bool) {
	for _, e := range env {
		if e.Name == name && e.Literal() {
			return e.Value, true
		}
	}
	return "", false
}

// WebSocketURL turns a Harness service origin into its WebSocket URL (http → ws, https → wss)
// and returns the normalised HTTP origin with it. Anything but a bare origin is refused: a
// credential, query or fragment in an advertised URL could carry a token to wherever the URL
// is printed or logged.
func WebSocketURL(origin string) (wsURL, httpOrigin string, err error) {
	u, perr := url.Parse(origin)
	if perr != nil {
		// The parse error quotes the input, which could hold credentials.
		return "", "", plain(msgHarnessServiceURL, errorf("the service URL does not parse"))
	}
	if u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "" || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return "", "", plain(msgHarnessServiceURL, errorf("the service URL of host %q carries more than scheme, host and port", u.Host))
	}
	var scheme string
	switch u.Scheme {
	case "http":
		scheme = "ws"
	case "https":
		scheme = "wss"
	default:
		return "", "", plain(msgHarnessServiceURL, errorf("scheme %q is not http or https", u.Scheme))
	}
	base := url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/"}
	w := base
	w.Scheme = scheme
	return w.String(), base.String(), nil
}

// HarnessProbe is one status read of a Harness.
type HarnessProbe struct {
	Endpoint *HarnessEndpoint
	// Token is the app-server bearer token. Compute holds it; the driver uses it for this probe
	// only and never stores, logs or reports it.
	Token string
	// RootCAs verifies a wss endpoint's certificate; nil uses the system roots.
	RootCAs *x509.CertPool
	// Timeout bounds each probe; zero means DefaultHarnessProbeTimeout. The context's deadline
	// still applies when it is earlier.
	Timeout time.Duration
	// DialContext opens the TCP connections of the probe; nil uses a net.Dialer. It is only
	// ever asked for the route's gateway address (or a proxy's), never the service host.
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
}

// HarnessStatus probes the revision's Harness with the caller's app-server token. The gateway
// is reached over TLS with the Backend's root certificate, so a wss endpoint is verified with
// the same roots. See ProbeHarness for what is checked.
func (d *Driver) HarnessStatus(ctx context.Context, ep *HarnessEndpoint, token string) (*HarnessStatus, error) {
	p := HarnessProbe{Endpoint: ep, Token: token}
	if d.backend != nil && d.backend.Configuration.RootCertificatePath != nil && *d.backend.Configuration.RootCertificatePath != "" {
		path := *d.backend.Configuration.RootCertificatePath
		pem, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read the openshell Backend rootCertificatePath %s for the Harness probe: %w", path, err)
		}
		p.RootCAs = x509.NewCertPool()
		if !p.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("the openshell Backend rootCertificatePath %s holds no PEM certificate; fix the file", path)
		}
	}
	return ProbeHarness(ctx, p)
}

// ProbeHarness reads a Harness's state. Both requests connect to the endpoint's route: the
// gateway address, with the service host in the Host header and TLS verified against the
// gateway's name, because OpenShell routes service traffic on its own listener by Host and the
// advertised host need not resolve. An authenticated WebSocket handshake with the
// app-server means serving. Otherwise the runtime status route decides: a 200 whose JSON
// object carries runtimeFailure means failed, with the failure text; anything else (refused
// handshake, no route yet, 503, an unreadable body) means starting, because a Harness that has
// not reported a failure may still come up. Only a probe that cannot be made at all (no
// endpoint, no token, an endpoint that is not ws or wss) is an error. The token appears in no
// error, reason or failure text.
func ProbeHarness(ctx context.Context, p HarnessProbe) (*HarnessStatus, error) {
	switch {
	case p.Endpoint == nil || p.Endpoint.Outbound:
		return nil, errors.New("the native OpenClaw Harness connects outbound and has no endpoint to probe; read its Sandbox phase instead")
	case p.Token == "":
		return nil, errors.New("the Harness probe needs the app-server bearer token: pass the token Compute holds for the revision")
	case strings.ContainsAny(p.Token, "\r\n"):
		return nil, errors.New("the app-server bearer token must be a single line: remove the line break from the token file")
	}
	u, err := url.Parse(p.Endpoint.URL)
	if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, plain(msgHarnessServiceURL, errorf("Harness endpoint is not a ws or wss origin"))
	}
	route := p.Endpoint.Route
	if err := checkRoute(route); err != nil {
		return nil, err
	}
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = DefaultHarnessProbeTimeout
	}
	dial := p.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	// ServerName is the gateway's, never the Host header's: the certificate vouches for the
	// listener the connection reaches, as on the gRPC channel.
	tlsConfig := &tls.Config{RootCAs: p.RootCAs, MinVersion: tls.VersionTLS12, ServerName: route.ServerName}
	// Host names the service for the gateway's router; the request itself goes to the gateway.
	auth := http.Header{"Authorization": {"Bearer " + p.Token}, "Host": {route.Host}}
	wsURL := url.URL{Scheme: "ws", Host: route.Address, Path: "/"}
	statusURL := url.URL{Scheme: "http", Host: route.Address, Path: RuntimeStatusPath}
	if route.TLS {
		wsURL.Scheme, statusURL.Scheme = "wss", "https"
	}

	handshake := handshakeHarness(ctx, wsURL.String(), auth, tlsConfig, dial, timeout)
	if handshake == nil {
		return &HarnessStatus{State: HarnessServing}, nil
	}
	failure, statusReason := readRuntimeStatus(ctx, statusURL.String(), auth, tlsConfig, dial, timeout)
	if err := ctx.Err(); err != nil {
		// The caller gave up; what the probes saw says nothing about the Harness.
		return nil, fmt.Errorf("probe the Harness %s through the gateway at %s: %w", route.Host, route.Address, err)
	}
	if failure != nil {
		return &HarnessStatus{State: HarnessFailed, Failure: describeFailure(failure, p.Token)}, nil
	}
	return &HarnessStatus{State: HarnessStarting, Reason: redact("app-server handshake: "+handshake.Error()+"; runtime status: "+statusReason, p.Token)}, nil
}

// checkRoute refuses a route the probe cannot use as is: a Host header value must be one host
// with an optional port, and the address must be host:port.
func checkRoute(r gateway.ServiceRoute) error {
	const fix = "read the endpoint with HarnessEndpoint, which takes the route from the gateway client"
	if r.Address == "" || r.Host == "" {
		return fmt.Errorf("the Harness endpoint has no gateway route (address %q, service host %q); %s", r.Address, r.Host, fix)
	}
	if _, _, err := net.SplitHostPort(r.Address); err != nil {
		return fmt.Errorf("the Harness route's gateway address %q is not host:port; %s", r.Address, fix)
	}
	if strings.ContainsAny(r.Host, "/?#@ \t\r\n") {
		return fmt.Errorf("the Harness route's service host %q is not a host with an optional port; %s", r.Host, fix)
	}
	return nil
}

// handshakeHarness opens and closes one authenticated WebSocket connection. The returned error
// is a status code, a timeout or the bare network error, none of which carries request headers.
func handshakeHarness(ctx context.Context, wsURL string, auth http.Header, tlsConfig *tls.Config, dial func(context.Context, string, string) (net.Conn, error), timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	dialer := websocket.Dialer{
		Proxy:            http.ProxyFromEnvironment,
		HandshakeTimeout: timeout,
		TLSClientConfig:  tlsConfig,
		NetDialContext:   dial,
	}
	conn, resp, err := dialer.DialContext(ctx, wsURL, auth)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err == nil {
		// A clean close tells the app-server this was only a probe.
		_ = conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, "probe"), time.Now().Add(time.Second))
		conn.Close()
		return nil
	}
	switch {
	case resp != nil:
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	case ctx.Err() != nil || isTimeout(err):
		return fmt.Errorf("no answer within %s", timeout)
	default:
		return errors.New(connectFailure(err))
	}
}

// readRuntimeStatus asks the runtime status route for a failure report. It returns the raw
// report when there is one, else a short reason why none was read.
func readRuntimeStatus(ctx context.Context, statusURL string, auth http.Header, tlsConfig *tls.Config, dial func(context.Context, string, string) (net.Conn, error), timeout time.Duration) (failure json.RawMessage, reason string) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, statusURL, nil)
	if err != nil {
		return nil, "request could not be built"
	}
	// Same origin and same service as the handshake: the status route may sit behind the same
	// bearer check, and the token goes nowhere the handshake did not.
	req.Header = auth.Clone()
	req.Header.Del("Host") // net/http sends req.Host, not a Host header field
	req.Host = auth.Get("Host")
	req.Header.Set("Accept", "application/json")
	client := &http.Client{
		Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, TLSClientConfig: tlsConfig, DialContext: dial, DisableKeepAlives: true},
		// A redirect could send the token to another host; the status route never redirects.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil || isTimeout(err) {
			return nil, fmt.Sprintf("no answer within %s", timeout)
		}
		return nil, connectFailure(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Sprintf("HTTP %d", resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRuntimeStatusBytes+1))
	if err != nil {
		return nil, "body could not be read"
	}
	if len(body) > maxRuntimeStatusBytes {
		return nil, fmt.Sprintf("body exceeds %d bytes", maxRuntimeStatusBytes)
	}
	var report struct {
		RuntimeFailure json.RawMessage `json:"runtimeFailure"`
	}
	if err := json.Unmarshal(body, &report); err != nil {
		return nil, "body is not a JSON object"
	}
	if len(report.RuntimeFailure) == 0 || string(report.RuntimeFailure) == "null" {
		return nil, "no runtime failure reported"
	}
	return report.RuntimeFailure, ""
}

// describeFailure renders a runtime failure report as one bounded line. The runtime reports an
// object with check, code and message; a bare string is taken as the message; any other shape
// is named rather than echoed. The token is removed before the text is cut, so no prefix of it
// survives at the cut.
func describeFailure(raw json.RawMessage, token string) string {
	var text string
	var obj struct {
		Check   string `json:"check"`
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	var s string
	switch {
	case json.Unmarshal(raw, &s) == nil:
		text = s
	case json.Unmarshal(raw, &obj) == nil:
		var parts []string
		if obj.Check != "" {
			parts = append(parts, "check "+obj.Check)
		}
		if obj.Code != "" {
			parts = append(parts, obj.Code)
		}
		text = strings.Join(parts, " ")
		if obj.Message != "" {
			if text != "" {
				text += ": "
			}
			text += obj.Message
		}
	}
	text = strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, redact(text, token)))
	if text == "" {
		return "the Harness reported a runtime failure without a description"
	}
	if len(text) > maxFailureBytes {
		cut := maxFailureBytes
		for cut > 0 && !utf8Start(text[cut]) {
			cut--
		}
		text = text[:cut] + "…"
	}
	return text
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// redact removes the token from text a Harness or the network stack produced, in case either
// echoed the request.
func redact(text, token string) string {
	if token == "" {
		return text
	}
	return strings.ReplaceAll(text, token, "[redacted]")
}

func isTimeout(err error) bool {
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// connectFailure names the class of a connection failure without quoting the error, which for
// some transports includes the request URL or headers.
func connectFailure(err error) string {
	var tlsErr *tls.CertificateVerificationError
	var uaErr x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	switch {
	case errors.As(err, &hostErr):
		return fmt.Sprintf("the Harness certificate is not valid for host %s", hostErr.Host)
	case errors.As(err, &tlsErr), errors.As(err, &uaErr):
		return "the Harness certificate is not trusted (check the openshell Backend rootCertificatePath)"
	case errors.Is(err, websocket.ErrBadHandshake):
		return "the WebSocket handshake was refused"
	default:
		// Without the url.Error wrapper the text is the network error (operation, address,
		// cause), which never includes request headers.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return err.Error()
	}
}

// maxAppServerTokenBytes bounds the token file read, so a wrong path fails fast.
const maxAppServerTokenBytes = 64 << 10

// ReadAppServerTokenFile reads the app-server bearer token for a Harness probe from a file
// holding exactly one line (one trailing newline allowed). Errors name the file and the rule,
// never the content.
func ReadAppServerTokenFile(path string) (string, error) {
	const rule = "must hold exactly one line, the app-server token, with no spaces or control characters (one trailing newline is allowed)"
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("app-server token file %s cannot be opened: %w", path, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxAppServerTokenBytes+1))
	if err != nil {
		return "", fmt.Errorf("app-server token file %s cannot be read: %w", path, err)
	}
	if len(b) > maxAppServerTokenBytes {
		return "", fmt.Errorf("app-server token file %s is larger than %d bytes; it %s", path, maxAppServerTokenBytes, rule)
	}
	s := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if s == "" || strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return "", fmt.Errorf("app-server token file %s %s", path, rule)
	}
	return s, nil
}
