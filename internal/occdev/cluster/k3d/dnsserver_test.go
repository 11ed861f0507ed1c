package k3d

import (
	"errors"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// DNSMode is how a test's DNS server treats the queries it gets.
type DNSMode int32

const (
	// DNSAnswers answers every A query with the server's address for it, and other types with
	// no records.
	DNSAnswers DNSMode = iota
	// DNSRefuses answers every query with the REFUSED code, as a resolver that does not serve
	// the asker.
	DNSRefuses
	// DNSSilent reads every query and never answers, as a network that drops DNS.
	DNSSilent
)

// DNSServer is a tiny UDP DNS server a test runs in place of the internet's: what the node's
// DNS check meets is the server's mode. Tests here and in package k3d_test use it.
type DNSServer struct {
	conn    net.PacketConn
	answer  netip.Addr
	mode    atomic.Int32
	queries atomic.Int32
}

// StartDNSServer listens on addr (host:port, UDP) until the test ends, answering A queries with
// answer while in DNSAnswers mode.
func StartDNSServer(t testing.TB, addr string, answer netip.Addr) *DNSServer {
	t.Helper()
	conn, err := net.ListenPacket("udp4", addr)
	if err != nil {
		t.Fatalf("start the test's DNS server at %s: %v", addr, err)
	}
	s := &DNSServer{conn: conn, answer: answer}
	done := make(chan struct{})
	go func() { defer close(done); s.serve() }()
	t.Cleanup(func() { s.Close(); <-done })
	return s
}

// Addr is the address the server listens on.
func (s *DNSServer) Addr() net.Addr { return s.conn.LocalAddr() }

// SetMode changes how the following queries are treated.
func (s *DNSServer) SetMode(m DNSMode) { s.mode.Store(int32(m)) }

// Queries counts the queries the server read.
func (s *DNSServer) Queries() int { return int(s.queries.Load()) }

// Close stops the server: queries to its address are then refused by the host (an ICMP port
// unreachable), as where nothing listens.
func (s *DNSServer) Close() { _ = s.conn.Close() }

func (s *DNSServer) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := s.conn.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		s.queries.Add(1)
		reply, ok := s.reply(buf[:n])
		if ok {
			_, _ = s.conn.WriteTo(reply, from)
		}
	}
}

func (s *DNSServer) reply(query []byte) ([]byte, bool) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, false
	}
	q, err := p.Question()
	if err != nil {
		return nil, false
	}
	mode := DNSMode(s.mode.Load())
	if mode == DNSSilent {
		return nil, false
	}
	rh := dnsmessage.Header{ID: h.ID, Response: true, OpCode: h.OpCode, RecursionDesired: h.RecursionDesired, RecursionAvailable: true}
	if mode == DNSRefuses {
		rh.RCode = dnsmessage.RCodeRefused
	}
	b := dnsmessage.NewBuilder(nil, rh)
	b.EnableCompression()
	if b.StartQuestions() != nil || b.Question(q) != nil || b.StartAnswers() != nil {
		return nil, false
	}
	if mode == DNSAnswers && q.Type == dnsmessage.TypeA {
		if b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}, dnsmessage.AResource{A: s.answer.As4()}) != nil {
			return nil, false
		}
	}
	msg, err := b.Finish()
	return msg, err == nil
}
