package emulator

import (
	"context"
	"net"
	"sync"

	"google.golang.org/grpc/peer"
)

// connListener remembers the open connections it accepted by their remote address, so a fault
// can close the connection one call arrived on, as a Gateway that drops its in-flight requests
// does.
type connListener struct {
	net.Listener
	mu    sync.Mutex
	conns map[string]net.Conn
}

func trackConns(l net.Listener) *connListener {
	return &connListener{Listener: l, conns: map[string]net.Conn{}}
}

func (l *connListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, l: l}
	l.mu.Lock()
	l.conns[c.RemoteAddr().String()] = tc
	l.mu.Unlock()
	return tc, nil
}

// drop closes the connection the call of ctx arrived on. grpc-go reports the connection's
// remote address as the call's peer, with or without TLS.
func (l *connListener) drop(ctx context.Context) {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return
	}
	l.mu.Lock()
	c := l.conns[p.Addr.String()]
	l.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
}

func (l *connListener) forget(c *trackedConn) {
	l.mu.Lock()
	if l.conns[c.RemoteAddr().String()] == c {
		delete(l.conns, c.RemoteAddr().String())
	}
	l.mu.Unlock()
}

// trackedConn leaves its listener's table when it closes.
type trackedConn struct {
	net.Conn
	l    *connListener
	once sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() { c.l.forget(c) })
	return c.Conn.Close()
}
