package emulator

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"path"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
)

// Server is a running emulator. Its methods are safe for concurrent use.
type Server struct {
	opts     Options
	listener *connListener
	// started is the emulator clock's time at Start, where a fault Window begins.
	started  time.Time
	grpc     *grpc.Server
	journal  Journal
	faults   faultQueue
	done     chan struct{}
	serveErr error

	// mu guards the gateway state. Every handler holds it for its whole body, Kubernetes calls
	// included, so the emulator's state changes are serial like a single gateway replica's
	// database transactions; faults and latency are applied outside it.
	mu sync.Mutex
	st *state

	closeOnce sync.Once
}

// Start validates opts, listens on the loopback address and serves until Close.
func Start(opts Options) (*Server, error) {
	opts = opts.withDefaults()
	if err := checkLoopback(opts.Listen); err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("gateway emulator: listen on %s: %w", opts.Listen, err)
	}
	now := opts.Clock()
	s := &Server{opts: opts, listener: trackConns(lis), started: now, done: make(chan struct{}), st: newState(now)}
	serverOpts := []grpc.ServerOption{grpc.ChainUnaryInterceptor(s.intercept)}
	if opts.TLS != nil {
		serverOpts = append(serverOpts, grpc.Creds(credentials.NewTLS(opts.TLS)))
	}
	s.grpc = grpc.NewServer(serverOpts...)
	pb.RegisterOpenShellServer(s.grpc, &gateway{s: s})
	for _, f := range opts.Faults {
		s.Inject(f)
	}
	go func() {
		s.serveErr = s.grpc.Serve(s.listener)
		close(s.done)
	}()
	return s, nil
}

// TB is the part of testing.TB that StartT uses. The emulator ships in the occ binary
// (`occ gateway-emulator`), so it must not link the testing package; any *testing.T or
// *testing.B satisfies this.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// StartT starts an emulator for a test and closes it when the test ends.
func StartT(t TB, opts Options) *Server {
	t.Helper()
	s, err := Start(opts)
	if err != nil {
		t.Fatalf("start gateway emulator: %v", err)
	}
	t.Cleanup(s.Close)
	return s
}

// checkLoopback refuses listen addresses other than loopback ones: the emulator has no real
// authorization and must not be reachable from other machines.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("gateway emulator: listen address %q: %w (use host:port, for example 127.0.0.1:17670)", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("gateway emulator: listen address %q is not a loopback address; use 127.0.0.1 or [::1]", addr)
}

// Addr is the host:port the emulator listens on.
func (s *Server) Addr() string { return s.listener.Addr().String() }

// Journal is the record of every call the emulator received.
func (s *Server) Journal() *Journal { return &s.journal }

// Inject queues a fault; see Fault.
func (s *Server) Inject(f Fault) { s.faults.add(f, s.started) }

// Close stops serving and drops open connections. It is safe to call more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.grpc.Stop()
		<-s.done
	})
}

// Wait blocks until the server stops and reports why, for the standalone command.
func (s *Server) Wait() error {
	<-s.done
	if errors.Is(s.serveErr, grpc.ErrServerStopped) {
		return nil
	}
	return s.serveErr
}

func (s *Server) now() time.Time { return s.opts.Clock() }

// replayFlag lets a handler tell the journal that it answered from the replay store.
type replayFlagKey struct{}

func markReplayed(ctx context.Context) {
	if p, ok := ctx.Value(replayFlagKey{}).(*bool); ok {
		*p = true
	}
}

// outcomeUnrecordedKey marks a call whose admitted success must not be recorded (a
// FaultDropConnection with OutcomeUnrecorded).
type outcomeUnrecordedKey struct{}

func outcomeUnrecorded(ctx context.Context) bool {
	v, _ := ctx.Value(outcomeUnrecordedKey{}).(bool)
	return v
}

// callerKey identifies the caller for request admission. Upstream keys admissions by the
// authenticated principal; the emulator has one principal per bearer token (or none).
type callerKeyCtx struct{}

func callerOf(ctx context.Context) string {
	if c, ok := ctx.Value(callerKeyCtx{}).(string); ok {
		return c
	}
	return "anonymous"
}

func (s *Server) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	method := path.Base(info.FullMethod)
	call := Call{Method: method, Time: s.now()}
	if m, ok := req.(proto.Message); ok {
		call.Request = proto.Clone(m)
	}
	replayed := false
	drop := false
	defer func() {
		call.Code = status.Code(err)
		call.Replayed = replayed && err == nil
		// The call is journaled before its connection closes, so a client's retry, which can
		// only start after the close, is always journaled after it.
		s.journal.add(call)
		if drop {
			s.listener.drop(ctx)
		}
	}()

	caller, err := s.authenticate(ctx, method)
	if err != nil {
		return nil, err
	}
	ctx = context.WithValue(ctx, callerKeyCtx{}, caller)
	ctx = context.WithValue(ctx, replayFlagKey{}, &replayed)

	fault := s.faults.take(method, s.now())
	if fault != nil {
		call.Fault = fault.Kind
		switch fault.Kind {
		case FaultLatency:
			timer := time.NewTimer(fault.Delay)
			select {
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
				return nil, status.FromContextError(ctx.Err()).Err()
			}
		case FaultUnavailable:
			msg := fault.Message
			if msg == "" {
				msg = "gateway is not ready; retry shortly"
			}
			return nil, unavailable(ReasonGatewayNotReady, msg, time.Second)
		case FaultResourceExhausted:
			msg := fault.Message
			if msg == "" {
				msg = "gRPC rate limit exceeded"
			}
			return nil, status.Error(codes.ResourceExhausted, msg)
		case FaultDropConnection:
			if !fault.AfterCommit {
				drop = true
				return nil, errConnectionDropped
			}
			if fault.OutcomeUnrecorded {
				ctx = context.WithValue(ctx, outcomeUnrecordedKey{}, true)
			}
		}
	}

	resp, err = handler(ctx, req)
	if fault != nil && fault.Kind == FaultDropConnection {
		drop = true
		return nil, errConnectionDropped
	}
	if fault != nil && fault.Kind == FaultDropResponse && err == nil {
		if fault.Code == codes.DeadlineExceeded {
			<-ctx.Done()
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		return nil, status.Error(codes.Unavailable, "connection lost before the response was sent (the request was committed)")
	}
	return resp, err
}

// errConnectionDropped is what the journal records for a call whose connection a fault closed;
// the client never receives it, it sees the connection close.
var errConnectionDropped = status.Error(codes.Unavailable, "connection closed without a response (injected fault)")

// authenticate checks the bearer token when Options.Token is set. Health stays open, as it was
// in v0.0.x (unconfirmed for v0.1).
func (s *Server) authenticate(ctx context.Context, method string) (string, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	var presented string
	for _, v := range md.Get("authorization") {
		if strings.HasPrefix(v, "Bearer ") {
			presented = strings.TrimPrefix(v, "Bearer ")
		}
	}
	if s.opts.Token == "" {
		if presented != "" {
			return principalFor(presented), nil
		}
		return "anonymous", nil
	}
	if method == "Health" {
		return "anonymous", nil
	}
	if presented == "" {
		return "", status.Error(codes.Unauthenticated, "missing bearer token: send authorization: Bearer <token>")
	}
	if subtle.ConstantTimeCompare([]byte(presented), []byte(s.opts.Token)) != 1 {
		return "", status.Error(codes.Unauthenticated, "invalid bearer token")
	}
	return principalFor(presented), nil
}
