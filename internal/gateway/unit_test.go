package gateway

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Unit tests of the pieces that need no gateway: configuration rules, the token file, request
// ids, error decoding, argument checks. The client-to-gateway behaviour is in
// conformance_test.go.

func TestConfigValidate(t *testing.T) {
	dir := t.TempDir()
	token := filepath.Join(dir, "token")
	ca := filepath.Join(dir, "ca.pem")
	cases := []struct {
		name    string
		cfg     Config
		wantKey string // empty: valid
		tls     bool
		target  string
	}{
		// The production shape: TLS with a private CA and a bearer token.
		{name: "https origin with CA and token", cfg: Config{Endpoint: "https://gw.example:8443", RootCertificatePath: ca, BearerTokenFile: token}, tls: true, target: "gw.example:8443"},
		{name: "https origin default port uses system roots", cfg: Config{Endpoint: "https://gw.example/", BearerTokenFile: token}, tls: true, target: "gw.example:443"},
		{name: "bare host:port with CA is TLS", cfg: Config{Endpoint: "gw.example:8080", RootCertificatePath: ca, BearerTokenFile: token}, tls: true, target: "gw.example:8080"},
		// A bare host:port never silently falls back to plaintext.
		{name: "bare host:port without CA is still TLS", cfg: Config{Endpoint: "gw.example:8080", BearerTokenFile: token}, tls: true, target: "gw.example:8080"},
		// The development profile: plaintext behind a NetworkPolicy, no token.
		{name: "dev plaintext declared", cfg: Config{Endpoint: "http://127.0.0.1:8080", InsecureTransport: "network-policy"}, target: "127.0.0.1:8080"},
		{name: "dev bare host:port declared", cfg: Config{Endpoint: "[::1]:8080", InsecureTransport: "network-policy"}, target: "[::1]:8080"},
		{name: "timeout bounds inclusive", cfg: Config{Endpoint: "http://h:1", InsecureTransport: "network-policy", RequestTimeout: 30 * time.Second}, target: "h:1"},

		{name: "plaintext without declaration", cfg: Config{Endpoint: "http://gw:80", BearerTokenFile: token}, wantKey: "endpoint"},
		{name: "token with insecure transport", cfg: Config{Endpoint: "http://gw:80", InsecureTransport: "network-policy", BearerTokenFile: token}, wantKey: "bearerTokenFile"},
		{name: "no token without declaration", cfg: Config{Endpoint: "https://gw"}, wantKey: "bearerTokenFile"},
		{name: "unknown insecureTransport", cfg: Config{Endpoint: "https://gw", InsecureTransport: "yes"}, wantKey: "insecureTransport"},
		{name: "timeout too small", cfg: Config{Endpoint: "http://h:1", InsecureTransport: "network-policy", RequestTimeout: 999 * time.Millisecond}, wantKey: "requestTimeoutMs"},
		{name: "timeout too large", cfg: Config{Endpoint: "http://h:1", InsecureTransport: "network-policy", RequestTimeout: 31 * time.Second}, wantKey: "requestTimeoutMs"},
		{name: "relative token path", cfg: Config{Endpoint: "https://gw", BearerTokenFile: "token"}, wantKey: "bearerTokenFile"},
		{name: "relative CA path", cfg: Config{Endpoint: "https://gw", BearerTokenFile: token, RootCertificatePath: "ca.pem"}, wantKey: "rootCertificatePath"},
		{name: "path in origin", cfg: Config{Endpoint: "https://gw/api", BearerTokenFile: token}, wantKey: "endpoint"},
		{name: "credentials in origin", cfg: Config{Endpoint: "https://user:pw@gw", BearerTokenFile: token}, wantKey: "endpoint"},
		{name: "query in origin", cfg: Config{Endpoint: "https://gw?x=1", BearerTokenFile: token}, wantKey: "endpoint"},
		{name: "grpc scheme", cfg: Config{Endpoint: "grpc://gw:1", BearerTokenFile: token}, wantKey: "endpoint"},
		{name: "http with CA", cfg: Config{Endpoint: "http://gw:1", RootCertificatePath: ca, BearerTokenFile: token}, wantKey: "endpoint"},
		{name: "no port", cfg: Config{Endpoint: "gw", BearerTokenFile: token}, wantKey: "endpoint"},
		{name: "port out of range", cfg: Config{Endpoint: "gw:70000", BearerTokenFile: token}, wantKey: "endpoint"},
		{name: "empty endpoint", cfg: Config{BearerTokenFile: token}, wantKey: "endpoint"},
		{name: "bad retry policy", cfg: Config{Endpoint: "https://gw", BearerTokenFile: token, Retry: RetryPolicy{InitialBackoff: time.Second}}, wantKey: "retry"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ep, err := tc.cfg.resolve()
			if tc.wantKey == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				if ep.tls != tc.tls || ep.target != tc.target {
					t.Fatalf("endpoint = %+v, want tls=%v target=%s", ep, tc.tls, tc.target)
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Key != tc.wantKey {
				t.Fatalf("Validate error = %v, want a ConfigError for key %s", err, tc.wantKey)
			}
			if !strings.Contains(err.Error(), tc.wantKey) {
				t.Fatalf("error %q does not name the key %s", err, tc.wantKey)
			}
		})
	}
}

// A bearer token over plaintext is refused with fixes that work: the advice never sends the
// operator to insecureTransport while the token stays, which the same validation then refuses
// ("token with insecure transport" above).
func TestBearerOverPlaintextAdviceDoesNotLoop(t *testing.T) {
	token := filepath.Join(t.TempDir(), "token")
	_, err := Config{Endpoint: "http://gw:80", BearerTokenFile: token}.resolve()
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Key != "endpoint" || !strings.Contains(err.Error(), "a bearer token needs TLS") {
		t.Fatalf("resolve = %v, want the endpoint refused because a bearer token needs TLS", err)
	}
	if !strings.Contains(err.Error(), "drop bearerTokenFile and declare insecureTransport") {
		t.Errorf("the advice %q offers insecureTransport without dropping the token, which validation refuses", err)
	}
	// Following either fix resolves.
	for _, fixed := range []Config{
		{Endpoint: "https://gw:443", BearerTokenFile: token},
		{Endpoint: "http://gw:80", InsecureTransport: InsecureTransportNetworkPolicy},
	} {
		if _, err := fixed.resolve(); err != nil {
			t.Errorf("the advised fix %+v is refused: %v", fixed, err)
		}
	}
}

// A token file that breaks the one-line rule is refused with the path and the rule, and its
// content never appears in the error.
func TestReadBearerTokenRules(t *testing.T) {
	const canary = "canary-Token-7f3a9c"
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := []struct{ name, content string }{
		{"plain", canary},
		{"trailing newline", canary + "\n"},
		{"trailing CRLF", canary + "\r\n"},
	}
	for _, g := range good {
		got, err := readBearerToken(write(g.name, g.content))
		if err != nil || got != canary {
			t.Fatalf("%s: got %q, %v; want the token", g.name, got, err)
		}
	}
	bad := []struct{ name, content, rule string }{
		{"empty", "", "is empty"},
		{"only newline", "\n", "is empty"},
		{"two lines", canary + "\n" + canary + "\n", "more than one line"},
		{"blank second line", canary + "\n\n", "more than one line"},
		{"leading space", " " + canary, "space"},
		{"inner space", "Bearer " + canary, "space"},
		{"tab", canary + "\t", "space"},
		{"non-ASCII", canary + "é", "non-ASCII"},
		{"huge", strings.Repeat("a", maxTokenFileBytes+1), "larger than"},
	}
	for _, b := range bad {
		p := write(b.name, b.content)
		_, err := readBearerToken(p)
		var te *TokenFileError
		if !errors.As(err, &te) {
			t.Fatalf("%s: error %v, want *TokenFileError", b.name, err)
		}
		msg := err.Error()
		if !strings.Contains(msg, p) || !strings.Contains(msg, b.rule) || !strings.Contains(msg, "exactly one line") {
			t.Fatalf("%s: error %q must name the file, %q and the rule", b.name, msg, b.rule)
		}
		if strings.Contains(msg, canary) {
			t.Fatalf("%s: error %q leaks the token file content", b.name, msg)
		}
	}
	_, err := readBearerToken(filepath.Join(dir, "missing"))
	if err == nil || !strings.Contains(err.Error(), "cannot be opened") || !strings.Contains(err.Error(), filepath.Join(dir, "missing")) {
		t.Fatalf("missing file: error %v, want the path and 'cannot be opened'", err)
	}
}

// The derived request ids are the ones the reference implementation derives for the same
// revision (vectors computed independently from the published rule), so both converge on one
// admission record.
func TestCreateSandboxRequestIDs(t *testing.T) {
	ids, err := CreateSandboxRequestIDs("0F8FAD5B-D9CB-469F-A165-70867728950E")
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != MaxCreateSandboxRequestIDs {
		t.Fatalf("got %d ids, want %d", len(ids), MaxCreateSandboxRequestIDs)
	}
	want := map[int]string{
		0:  "0f8fad5b-d9cb-469f-a165-70867728950e",
		1:  "99158eb3-ccc3-821f-bc93-36bf904e3b22",
		2:  "7541ac22-b380-861f-87e7-beeaaf2aea67",
		15: "719d5e66-b658-815d-9cb9-ebcfbc15e3f6",
	}
	for i, w := range want {
		if ids[i] != w {
			t.Errorf("id %d = %s, want %s", i, ids[i], w)
		}
	}
	seen := map[string]bool{}
	for i, id := range ids {
		if !ValidRequestID(id) || seen[id] {
			t.Fatalf("id %d %q is invalid or repeated", i, id)
		}
		seen[id] = true
		if i > 0 && (id[14] != '8' || !strings.ContainsRune("89ab", rune(id[19]))) {
			t.Fatalf("id %d %q is not an RFC 9562 version-8 UUID", i, id)
		}
	}
	again, _ := CreateSandboxRequestIDs("0f8fad5b-d9cb-469f-a165-70867728950e")
	if fmt.Sprint(again) != fmt.Sprint(ids) {
		t.Fatal("derivation is not deterministic across case of the input")
	}
	for _, bad := range []string{"", "rev_0f8fad5b-d9cb-469f-a165-70867728950e", "00000000-0000-0000-0000-000000000000", "0f8fad5bd9cb469fa16570867728950e"} {
		if _, err := CreateSandboxRequestIDs(bad); err == nil {
			t.Fatalf("CreateSandboxRequestIDs(%q) accepted a non-UUID", bad)
		}
	}
}

func statusErr(t *testing.T, c codes.Code, msg string, details ...*errdetails.ErrorInfo) error {
	t.Helper()
	st := status.New(c, msg)
	for _, d := range details {
		var err error
		if st, err = st.WithDetails(d); err != nil {
			t.Fatal(err)
		}
	}
	return st.Err()
}

func TestDecodeErrorClassification(t *testing.T) {
	info := func(reason string) *errdetails.ErrorInfo {
		return &errdetails.ErrorInfo{Reason: reason, Domain: ErrorDomain}
	}
	cases := []struct {
		name string
		err  error
		is   []error
		not  []error
	}{
		{"not found", statusErr(t, codes.NotFound, "sandbox 'x' not found"), []error{ErrNotFound}, []error{ErrUnavailable, ErrAlreadyExists}},
		{"already exists", statusErr(t, codes.AlreadyExists, "sandbox already exists"), []error{ErrAlreadyExists}, []error{ErrNotFound}},
		{"outcome uncertain", statusErr(t, codes.FailedPrecondition, "request is admitted but has no confirmed replayable success", info(ReasonRequestOutcomeUncertain)), []error{ErrReplayRefused}, []error{ErrFailedPrecondition, ErrUnavailable}},
		{"payload mismatch", statusErr(t, codes.FailedPrecondition, "request_id was already used with a different payload", info(ReasonRequestIDPayloadMismatch)), []error{ErrReplayRefused}, nil},
		{"replay unavailable", statusErr(t, codes.FailedPrecondition, "no longer replayable", info(ReasonRequestReplayUnavailable)), []error{ErrReplayRefused}, nil},
		// A replay reason counts only with FAILED_PRECONDITION, as the contract says.
		{"replay reason with wrong code", statusErr(t, codes.Aborted, "x", info(ReasonRequestOutcomeUncertain)), []error{ErrUnavailable}, []error{ErrReplayRefused}},
		// A reason from another domain was not written by the gateway.
		{"foreign domain", statusErr(t, codes.FailedPrecondition, "x", &errdetails.ErrorInfo{Reason: ReasonRequestOutcomeUncertain, Domain: "example.com"}), []error{ErrFailedPrecondition}, []error{ErrReplayRefused}},
		{"version conflict", statusErr(t, codes.Aborted, "update failed due to concurrent modification (current resource_version: 7)", &errdetails.ErrorInfo{Reason: ReasonResourceVersionConflict, Domain: ErrorDomain, Metadata: map[string]string{"current_resource_version": "7"}}), []error{ErrVersionConflict}, []error{ErrUnavailable}},
		{"workspace still has resources", statusErr(t, codes.FailedPrecondition, "workspace 'w' still contains resources: 1 sandbox"), []error{ErrFailedPrecondition}, []error{ErrReplayRefused}},
		{"admission limit", statusErr(t, codes.ResourceExhausted, "caller has reached the durable mutation admission limit; unresolved requests require reconciliation"), []error{ErrAdmissionLimit}, []error{ErrUnavailable}},
		{"rate limit", statusErr(t, codes.ResourceExhausted, "gRPC rate limit exceeded"), []error{ErrUnavailable}, []error{ErrAdmissionLimit}},
		{"unavailable", statusErr(t, codes.Unavailable, "gateway not ready", info("GATEWAY_NOT_READY")), []error{ErrUnavailable}, nil},
		{"internal", statusErr(t, codes.Internal, "mutation admission storage failed"), []error{ErrUnavailable}, nil},
		{"unauthenticated", statusErr(t, codes.Unauthenticated, "missing token"), []error{ErrPermissionDenied}, []error{ErrUnavailable}},
		{"invalid argument", statusErr(t, codes.InvalidArgument, "must be a nonzero hyphenated UUID (36 characters)", info("INVALID_ARGUMENT")), nil, []error{ErrUnavailable, ErrReplayRefused}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := decodeError("CreateSandbox", tc.err, nil)
			for _, s := range tc.is {
				if !errors.Is(e, s) {
					t.Errorf("errors.Is(%v, %v) = false", e, s)
				}
			}
			for _, s := range tc.not {
				if errors.Is(e, s) {
					t.Errorf("errors.Is(%v, %v) = true", e, s)
				}
			}
			var asErr *Error
			if !errors.As(fmt.Errorf("wrapped: %w", e), &asErr) || asErr.Method != "CreateSandbox" {
				t.Errorf("errors.As through a wrap failed")
			}
		})
	}
}

// A caller at the gateway's admission limit reads "OpenShell refused <method>: ... limit of 1000
// durable request admissions ..." and the deployment reports SANDBOX_ADMISSION_LIMIT_REACHED.
func TestAdmissionLimitWording(t *testing.T) {
	e := decodeError("CreateSandbox", statusErr(t, codes.ResourceExhausted,
		"caller has reached the durable mutation admission limit; unresolved requests require reconciliation"), nil)
	msg := e.Error()
	if !strings.HasPrefix(msg, "OpenShell refused CreateSandbox: ") || !strings.Contains(msg, "limit of 1000 durable request admissions") {
		t.Fatalf("message %q lacks the seed wording", msg)
	}
	if e.ErrorCode() != "SANDBOX_ADMISSION_LIMIT_REACHED" || !IsAdmissionLimit(e) {
		t.Fatalf("code = %s, want SANDBOX_ADMISSION_LIMIT_REACHED", e.ErrorCode())
	}
}

// A credential the request carried and the gateway echoes back never reaches the error text.
func TestDecodeErrorScrubsRequestSecrets(t *testing.T) {
	const canary = "sk-canary-51d2"
	err := statusErr(t, codes.InvalidArgument, "credential value "+canary+" is malformed",
		&errdetails.ErrorInfo{Reason: "INVALID_ARGUMENT", Domain: ErrorDomain, Metadata: map[string]string{"value": canary}})
	e := decodeError("CreateProvider", err, []string{canary})
	if strings.Contains(e.Error(), canary) || strings.Contains(fmt.Sprint(e.Metadata), canary) {
		t.Fatalf("error leaks the credential: %v %v", e, e.Metadata)
	}
	if !strings.Contains(e.Error(), redactedMarker) {
		t.Fatalf("error %q should show where the value was removed", e)
	}
}

func TestRetryInfoDelayIsHonoured(t *testing.T) {
	st, _ := status.New(codes.Unavailable, "not ready").WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(3 * time.Second)})
	e := decodeError("Health", st.Err(), nil)
	if e.RetryDelay != 3*time.Second {
		t.Fatalf("RetryDelay = %v", e.RetryDelay)
	}
	if d := defaultRetry.backoff(1, e.RetryDelay); d < 3*time.Second {
		t.Fatalf("backoff %v is shorter than the gateway's RetryInfo", d)
	}
}

func TestBackoffGrowsAndIsCapped(t *testing.T) {
	p := RetryPolicy{InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second, MaxAttempts: 10}
	for n := 1; n <= 10; n++ {
		d := p.backoff(n, 0)
		ceiling := min(p.InitialBackoff<<(n-1), p.MaxBackoff)
		if d < ceiling/2 || d > ceiling {
			t.Fatalf("backoff(%d) = %v, want within [%v, %v]", n, d, ceiling/2, ceiling)
		}
	}
}

func TestRetryableStopsWithTheCaller(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	e := &Error{Code: codes.Unavailable}
	if !retryable(ctx, e) {
		t.Fatal("UNAVAILABLE should be retried while the caller waits")
	}
	cancel()
	if retryable(ctx, e) {
		t.Fatal("nothing is retried after the caller gave up")
	}
	if retryable(context.Background(), &Error{Code: codes.ResourceExhausted, Reason: ReasonSandboxAdmissionLimit}) {
		t.Fatal("the admission limit must be reported at once, not retried")
	}
	if retryable(context.Background(), &Error{Code: codes.FailedPrecondition, Reason: ReasonRequestOutcomeUncertain}) {
		t.Fatal("a replay refusal is not transient")
	}
}

func TestParseLogSinceTime(t *testing.T) {
	for _, ok := range []string{"2026-01-02T03:04:05Z", "2026-01-02T03:04:05.123456789Z", "2026-01-02T03:04:05.1Z"} {
		if _, err := ParseLogSinceTime(ok); err != nil {
			t.Errorf("ParseLogSinceTime(%q): %v", ok, err)
		}
	}
	got, _ := ParseLogSinceTime("2026-01-02T03:04:05.000000007Z")
	if got.Nanosecond() != 7 {
		t.Errorf("nanoseconds lost: %v", got)
	}
	for _, bad := range []string{"", "2026-01-02T03:04:05+01:00", "2026-01-02 03:04:05Z", "2026-01-02T03:04:05.1234567891Z", "2026-13-02T03:04:05Z", "yesterday"} {
		_, err := ParseLogSinceTime(bad)
		if err == nil || !strings.Contains(err.Error(), "OpenShell log since time must be an RFC 3339 UTC time.") {
			t.Errorf("ParseLogSinceTime(%q) = %v, want the RFC 3339 UTC rule", bad, err)
		}
	}
}

func TestServiceURLRewritesPortAndRefusesNonOrigins(t *testing.T) {
	c := &Client{ep: endpoint{host: "127.0.0.1", port: 18080}}
	got, err := c.ServiceURL("http://w--sb.openshell.localhost:8080/")
	if err != nil || got != "http://w--sb.openshell.localhost:18080/" {
		t.Fatalf("ServiceURL = %q, %v", got, err)
	}
	for _, bad := range []string{"ftp://h/", "http://u:secretpw@h/", "http://h/path", "http://h/?token=secretpw", "http://h/#secretpw", "", "http:///"} {
		_, err := c.ServiceURL(bad)
		if err == nil {
			t.Fatalf("ServiceURL(%q) accepted a non-origin", bad)
		}
		if strings.Contains(err.Error(), "secretpw") {
			t.Fatalf("ServiceURL(%q) error leaks a credential: %v", bad, err)
		}
	}
}

// A gateway reached through a port-forward advertises service hosts under openshell.localhost,
// which many resolvers do not know: the route connects to the configured endpoint (its port,
// not the advertised one), names the service in Host exactly as advertised, and takes its TLS
// settings from the endpoint, as the gRPC channel does.
func TestServiceRouteDialsTheGatewayEndpoint(t *testing.T) {
	cases := []struct {
		endpoint, advertised string
		want                 ServiceRoute
	}{
		{"http://127.0.0.1:18080", "http://w--sb.openshell.localhost:8080/",
			ServiceRoute{Address: "127.0.0.1:18080", Host: "w--sb.openshell.localhost:8080", ServerName: "127.0.0.1"}},
		{"https://gw.example.com", "https://w--sb.apps.example.com/",
			ServiceRoute{Address: "gw.example.com:443", Host: "w--sb.apps.example.com", TLS: true, ServerName: "gw.example.com"}},
		{"[::1]:9443", "https://w--sb--app.openshell.localhost:8080",
			ServiceRoute{Address: "[::1]:9443", Host: "w--sb--app.openshell.localhost:8080", TLS: true, ServerName: "::1"}},
	}
	for _, c := range cases {
		ep, err := parseEndpoint(c.endpoint, "", "")
		if err != nil {
			t.Fatal(err)
		}
		got, err := (&Client{ep: ep}).ServiceRoute(c.advertised)
		if err != nil || got != c.want {
			t.Errorf("endpoint %s, service %s: route %+v, %v; want %+v", c.endpoint, c.advertised, got, err, c.want)
		}
	}
	c := &Client{ep: endpoint{host: "127.0.0.1", port: 18080, target: "127.0.0.1:18080"}}
	for _, bad := range []string{"ftp://h/", "http://u:secretpw@h/", "http://h/path", "http://h/?token=secretpw", ""} {
		if _, err := c.ServiceRoute(bad); err == nil || strings.Contains(err.Error(), "secretpw") {
			t.Errorf("ServiceRoute(%q) = %v, want a refusal without the credential", bad, err)
		}
	}
}

func TestSecretsNeverFormatValues(t *testing.T) {
	const canary = "canary-secret-9e1"
	s := Secrets{"api_key": canary}
	for _, out := range []string{fmt.Sprint(s), fmt.Sprintf("%v", s), fmt.Sprintf("%#v", s), fmt.Sprintf("%+v", ProviderSpec{Credentials: s})} {
		if strings.Contains(out, canary) {
			t.Fatalf("formatted Secrets leak the value: %s", out)
		}
	}
}
