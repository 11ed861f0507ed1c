package gateway

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/openclaw/occ/internal/contract"
)

// InsecureTransportNetworkPolicy is the only accepted value of Config.InsecureTransport. It
// records the operator's decision that a NetworkPolicy, not TLS plus a bearer token, protects
// the gateway port, which is what the disposable development profile does.
const InsecureTransportNetworkPolicy = "network-policy"

// Bounds of the per-call deadline (requestTimeoutMs). The lower bound keeps a misconfigured
// millisecond value from failing every call; the upper bound keeps a hung gateway from holding
// a reconcile for minutes.
const (
	MinRequestTimeout     = time.Second
	MaxRequestTimeout     = 30 * time.Second
	DefaultRequestTimeout = 10 * time.Second
)

// Config says how to reach one OpenShell gateway. The field comments name the Installation
// keys they come from; errors from Validate name those keys.
type Config struct {
	// Endpoint (endpoint) is an http:// or https:// origin (scheme, host, optional port, no
	// path, credentials, query or fragment) or a bare host:port.
	Endpoint string
	// RootCertificatePath (rootCertificatePath) is an absolute path to a PEM bundle of the CAs
	// that sign the gateway's certificate. Setting it selects TLS.
	RootCertificatePath string
	// BearerTokenFile is an absolute path to a file holding exactly one line: the bearer token.
	// It is read on every call, so a rotated token takes effect without a restart.
	BearerTokenFile string
	// InsecureTransport (insecureTransport) is empty or "network-policy". Empty requires TLS
	// and a bearer token; "network-policy" allows plaintext and forbids a bearer token.
	InsecureTransport string
	// RequestTimeout (requestTimeoutMs) bounds each call; zero means DefaultRequestTimeout.
	RequestTimeout time.Duration
	// Retry tunes the backoff of transient failures; the zero value means the default policy.
	Retry RetryPolicy
}

// endpoint is the parsed form of Config.Endpoint.
type endpoint struct {
	host   string // host without brackets
	port   int
	tls    bool
	target string // host:port for grpc.NewClient
}

// ConfigError reports a configuration value that breaks a rule. It names the key, the value
// (never for secrets), the rule and the fix.
type ConfigError struct {
	Key   string
	Value string
	Rule  string
}

func (e *ConfigError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("OpenShell gateway %s: %s", e.Key, e.Rule)
	}
	return fmt.Sprintf("OpenShell gateway %s %q: %s", e.Key, e.Value, e.Rule)
}

// Validate checks the configuration without touching the network or the files it names.
func (c Config) Validate() error {
	_, err := c.resolve()
	return err
}

// timeout returns the effective per-call deadline.
func (c Config) timeout() time.Duration {
	if c.RequestTimeout == 0 {
		return DefaultRequestTimeout
	}
	return c.RequestTimeout
}

// resolve validates the configuration and parses the endpoint.
func (c Config) resolve() (endpoint, error) {
	if c.RequestTimeout != 0 && (c.RequestTimeout < MinRequestTimeout || c.RequestTimeout > MaxRequestTimeout) {
		return endpoint{}, &ConfigError{
			Key:   "requestTimeoutMs",
			Value: strconv.FormatInt(c.RequestTimeout.Milliseconds(), 10),
			Rule:  "must be 1000 to 30000 milliseconds; omit it for the default of 10000",
		}
	}
	switch c.InsecureTransport {
	case "", InsecureTransportNetworkPolicy:
	default:
		return endpoint{}, &ConfigError{
			Key:   "insecureTransport",
			Value: c.InsecureTransport,
			Rule:  `must be omitted or "network-policy"; omit it to require TLS and a bearer token`,
		}
	}
	if c.RootCertificatePath != "" && !filepath.IsAbs(c.RootCertificatePath) {
		return endpoint{}, &ConfigError{Key: "rootCertificatePath", Value: c.RootCertificatePath,
			Rule: "must be an absolute path to a PEM file of CA certificates"}
	}
	if c.BearerTokenFile != "" && !filepath.IsAbs(c.BearerTokenFile) {
		return endpoint{}, &ConfigError{Key: "bearerTokenFile", Value: c.BearerTokenFile,
			Rule: "must be an absolute path to a file holding the token"}
	}
	ep, err := parseEndpoint(c.Endpoint, c.RootCertificatePath, c.InsecureTransport)
	if err != nil {
		return endpoint{}, err
	}
	if err := c.Retry.validate(); err != nil {
		return endpoint{}, err
	}
	insecure := c.InsecureTransport == InsecureTransportNetworkPolicy
	switch {
	case insecure && c.BearerTokenFile != "":
		// A token next to a declared-insecure transport would travel in clear text over
		// plaintext, and otherwise the declaration is contradictory; either way it is a mistake.
		return endpoint{}, &ConfigError{Key: "bearerTokenFile", Value: c.BearerTokenFile,
			Rule: `must be omitted with insecureTransport "network-policy", which is unauthenticated access; remove one of the two`}
	case !insecure && !ep.tls && c.BearerTokenFile != "":
		// insecureTransport is refused beside a token (above), so it is no fix here.
		return endpoint{}, &ConfigError{Key: "endpoint", Value: contract.RedactURL(c.Endpoint),
			Rule: `is plaintext, and a bearer token needs TLS: use an https:// endpoint, or host:port with rootCertificatePath; or drop bearerTokenFile and declare insecureTransport "network-policy" (development only)`}
	case !insecure && !ep.tls:
		return endpoint{}, &ConfigError{Key: "endpoint", Value: contract.RedactURL(c.Endpoint),
			Rule: `is plaintext; use an https:// endpoint or rootCertificatePath, or declare insecureTransport "network-policy"`}
	case !insecure && c.BearerTokenFile == "":
		return endpoint{}, &ConfigError{Key: "bearerTokenFile",
			Rule: `is required unless insecureTransport is "network-policy"; give the path of the gateway token file`}
	}
	return ep, nil
}

// parseEndpoint accepts an http(s) origin or a bare host:port. A bare host:port uses TLS unless
// the operator declared insecure transport and gave no root certificate: plaintext is never a
// silent default.
func parseEndpoint(raw, rootCertificatePath, insecureTransport string) (endpoint, error) {
	// The value is echoed with any user info redacted: an endpoint refused for carrying
	// credentials must not print them back.
	bad := func(rule string) (endpoint, error) {
		return endpoint{}, &ConfigError{Key: "endpoint", Value: contract.RedactURL(raw), Rule: rule}
	}
	if raw == "" {
		return bad("is required: an http:// or https:// origin, or host:port")
	}
	var ep endpoint
	if strings.Contains(raw, "://") {
		u, err := url.Parse(raw)
		if err != nil {
			// url.Error repeats the input, user info included: name the rule only.
			return bad("is not a valid URL: write scheme://host:port")
		}
		switch u.Scheme {
		case "https":
			ep.tls = true
		case "http":
			if rootCertificatePath != "" {
				return bad("is http:// but rootCertificatePath selects TLS; use https://")
			}
		default:
			return bad("must use scheme http or https")
		}
		if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
			return bad("must be an origin without credentials, path, query or fragment")
		}
		ep.host = u.Hostname()
		ep.port = 80
		if ep.tls {
			ep.port = 443
		}
		if p := u.Port(); p != "" {
			n, err := strconv.Atoi(p)
			if err != nil || n < 1 || n > 65535 {
				return bad("port must be 1 to 65535")
			}
			ep.port = n
		}
	} else {
		host, port, err := net.SplitHostPort(raw)
		if err != nil {
			return bad("must be an http:// or https:// origin, or host:port")
		}
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return bad("port must be 1 to 65535")
		}
		ep.host, ep.port = host, n
		ep.tls = rootCertificatePath != "" || insecureTransport != InsecureTransportNetworkPolicy
	}
	if ep.host == "" || strings.ContainsAny(ep.host, "/?#@ ") {
		return bad("must name a host")
	}
	ep.target = net.JoinHostPort(ep.host, strconv.Itoa(ep.port))
	return ep, nil
}
