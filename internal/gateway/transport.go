package gateway

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/openclaw/occ/internal/gateway/openshellv1"
)

// replayedHeader is the response header (initial metadata) a replayed success carries, with the
// value "true".
const replayedHeader = "openshell-replayed"

// Client calls one OpenShell gateway. It is safe for concurrent use.
type Client struct {
	cfg     Config
	ep      endpoint
	timeout time.Duration
	// deleteBound is DeleteSandboxTimeout; a field so tests can shorten it.
	deleteBound time.Duration
	retry       RetryPolicy
	log         *slog.Logger
	conn        *grpc.ClientConn
	rpc         openshellv1.OpenShellClient
}

// Dial validates cfg and prepares a connection. Like grpc.NewClient it does not contact the
// gateway; the first call (usually Health) does. ctx is checked so a cancelled caller does not
// open a connection.
func Dial(ctx context.Context, cfg Config, opts ...DialOption) (*Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("dial OpenShell gateway: %w", err)
	}
	ep, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	if cfg.BearerTokenFile != "" {
		// Read once now so a missing or malformed token file is reported by Dial, before any
		// work starts; every call reads it again to pick up rotations.
		if _, err := readBearerToken(cfg.BearerTokenFile); err != nil {
			return nil, err
		}
	}
	o := dialOptions{logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, opt := range opts {
		opt(&o)
	}
	var creds credentials.TransportCredentials
	if ep.tls {
		tc := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: ep.host}
		if cfg.RootCertificatePath != "" {
			pool, err := loadRootCertificates(cfg.RootCertificatePath)
			if err != nil {
				return nil, err
			}
			tc.RootCAs = pool
		}
		creds = credentials.NewTLS(tc)
	} else {
		creds = insecure.NewCredentials()
	}
	conn, err := grpc.NewClient(ep.target, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, fmt.Errorf("dial OpenShell gateway %s: %w", ep.target, err)
	}
	return &Client{
		cfg:         cfg,
		ep:          ep,
		timeout:     cfg.timeout(),
		deleteBound: DeleteSandboxTimeout,
		retry:       cfg.Retry.orDefault(),
		log:         o.logger,
		conn:        conn,
		rpc:         openshellv1.NewOpenShellClient(conn),
	}, nil
}

// DialOption adjusts Dial beyond Config.
type DialOption func(*dialOptions)

type dialOptions struct {
	logger *slog.Logger
}

// WithLogger sends the client's retry and polling lines to l. Lines carry the method, code,
// attempt and delay; never a credential, and never a message the caller's secrets could appear in
// unscrubbed.
func WithLogger(l *slog.Logger) DialOption {
	return func(o *dialOptions) {
		if l != nil {
			o.logger = l
		}
	}
}

// Close releases the connection.
func (c *Client) Close() error {
	if err := c.conn.Close(); err != nil {
		return fmt.Errorf("close OpenShell gateway connection %s: %w", c.ep.target, err)
	}
	return nil
}

// Conn exposes the underlying connection so benchmarks and tests can make bare grpc-go calls
// on the same transport. Production code uses the Client's methods.
func (c *Client) Conn() *grpc.ClientConn { return c.conn }

// Target is the host:port the client dials, for messages and service URL checks.
func (c *Client) Target() string { return c.ep.target }

// RequestTimeout is the per-call deadline in effect.
func (c *Client) RequestTimeout() time.Duration { return c.timeout }

// causeOf strips the *PathError wrapper, whose text repeats the path the caller already names.
func causeOf(err error) error {
	if inner := errors.Unwrap(err); inner != nil {
		return inner
	}
	return err
}

func loadRootCertificates(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, &ConfigError{Key: "rootCertificatePath", Value: path, Rule: "cannot be read: " + causeOf(err).Error()}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, &ConfigError{Key: "rootCertificatePath", Value: path, Rule: "holds no PEM CERTIFICATE block; give the CA bundle that signs the gateway certificate"}
	}
	return pool, nil
}

// callOptions describes one logical call for invoke.
type callOptions struct {
	// secrets are credential values in the request, scrubbed from any error text.
	secrets []string
	// timeout overrides the per-attempt deadline (DeleteSandbox uses its own bound).
	timeout time.Duration
	// replay asks for the response header, where the gateway marks a replayed success; only
	// callers that act on the marker pay for reading it.
	replay bool
}

// callResult carries response metadata the callers care about.
type callResult struct {
	replayed bool
	attempts int
}

// invoke runs one logical call: it reads the bearer token, applies the per-attempt deadline,
// retries transient failures of a repeatable request with the same request bytes (hence the
// same request_id) inside the caller's context, and decodes failures into *Error. It is the
// only place that sends RPCs.
func invoke[Req, Resp any](ctx context.Context, c *Client, method string, req Req, o callOptions,
	rpc func(context.Context, Req, ...grpc.CallOption) (Resp, error)) (Resp, callResult, error) {
	var zero Resp
	var res callResult
	timeout := c.timeout
	if o.timeout > 0 {
		timeout = o.timeout
	}
	for {
		// Checking the caller first means a cancelled reconcile never dispatches a mutation;
		// once dispatched, cancelling only abandons the local wait (the gateway may still
		// commit), which the request_id replay and adopt-on-exists paths recover from.
		if err := ctx.Err(); err != nil {
			return zero, res, fmt.Errorf("OpenShell %s: %w", method, err)
		}
		res.attempts++
		callCtx, cancel := context.WithTimeout(ctx, timeout)
		if c.cfg.BearerTokenFile != "" {
			token, err := readBearerToken(c.cfg.BearerTokenFile)
			if err != nil {
				cancel()
				return zero, res, fmt.Errorf("OpenShell %s: %w", method, err)
			}
			callCtx = metadata.AppendToOutgoingContext(callCtx, "authorization", "Bearer "+token)
		}
		var header metadata.MD
		var callOpts []grpc.CallOption
		if o.replay {
			callOpts = append(callOpts, grpc.Header(&header))
		}
		resp, err := rpc(callCtx, req, callOpts...)
		cancel()
		if err == nil {
			if v := header.Get(replayedHeader); len(v) > 0 && v[0] == "true" {
				res.replayed = true
			}
			return resp, res, nil
		}
		e := decodeError(method, err, o.secrets)
		e.Attempts = res.attempts
		if !retryable(ctx, e) || !repeatable(method, req) || res.attempts >= c.retry.MaxAttempts {
			if ctxErr := ctx.Err(); ctxErr != nil {
				// The caller gave up; report that rather than a deadline of our own.
				return zero, res, fmt.Errorf("OpenShell %s: %w", method, ctxErr)
			}
			return zero, res, e
		}
		delay := c.retry.backoff(res.attempts, e.RetryDelay)
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= delay {
			// The caller's bound (a startup timeout, DeleteSandbox's own bound) ends before the
			// next attempt could start: report the gateway's failure now instead of sleeping
			// into the deadline and reporting only that.
			c.log.LogAttrs(ctx, slog.LevelDebug, "not retrying OpenShell call: the next attempt would start after the caller's deadline",
				slog.String("method", method), slog.String("code", codeName(e.Code)), slog.Int("attempt", res.attempts), slog.Duration("delay", delay))
			return zero, res, e
		}
		c.log.LogAttrs(ctx, slog.LevelDebug, "retrying OpenShell call",
			slog.String("method", method), slog.String("code", codeName(e.Code)),
			slog.String("reason", e.Reason), slog.Int("attempt", res.attempts), slog.Duration("delay", delay))
		if err := sleep(ctx, delay); err != nil {
			return zero, res, fmt.Errorf("OpenShell %s: %w (last failure: %v)", method, err, e)
		}
	}
}
