package emulator

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
)

// A gateway with user authentication: calls without the bearer token, or with another one, are
// UNAUTHENTICATED and never reach the handlers; Health stays open.
func TestBearerToken(t *testing.T) {
	s := StartT(t, Options{Token: "s3cret-token"})
	c := dial(t, s)
	ctx := ctxT(t)
	if _, err := c.Health(ctx, &pb.HealthRequest{}); err != nil {
		t.Fatalf("Health without a token: %v", err)
	}
	_, err := c.CreateWorkspace(ctx, &pb.CreateWorkspaceRequest{Name: "team-t"})
	wantCode(t, err, codes.Unauthenticated)
	_, err = c.CreateWorkspace(metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer wrong"), &pb.CreateWorkspaceRequest{Name: "team-t"})
	st := wantCode(t, err, codes.Unauthenticated)
	if strings.Contains(st.Message(), "s3cret-token") || strings.Contains(st.Message(), "wrong") {
		t.Fatalf("the refusal echoes a token: %q", st.Message())
	}
	authed := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer s3cret-token")
	if _, err := c.CreateWorkspace(authed, &pb.CreateWorkspaceRequest{Name: "team-t"}); err != nil {
		t.Fatalf("with the token: %v", err)
	}
	if _, err := c.GetWorkspace(ctx, &pb.GetWorkspaceRequest{Name: "team-t"}); err == nil {
		t.Fatal("a read without the token succeeded")
	}
}

// The gateway serves TLS with the given certificate; a client trusting that CA connects.
func TestTLS(t *testing.T) {
	cert, pool := selfSigned(t)
	s := StartT(t, Options{TLS: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}})
	c := dial(t, s, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})))
	ctx := ctxT(t)
	h, err := c.Health(ctx, &pb.HealthRequest{})
	mustNot(t, err)
	if h.GetStatus() != pb.ServiceStatus_SERVICE_STATUS_HEALTHY || h.GetVersion() != DefaultVersion {
		t.Fatalf("health = %v", h)
	}
	resp, err := c.CreateSandbox(ctx, &pb.CreateSandboxRequest{Name: "box", Spec: minimalSpec(), ServiceExposures: []*pb.SandboxServiceExposure{{TargetPort: 80}}})
	mustNot(t, err)
	if u := resp.GetServiceUrls()[""]; !strings.HasPrefix(u, "https://default--box.openshell.localhost:") {
		t.Fatalf("service URL over TLS = %q", u)
	}
	// A client that does not trust the certificate is refused at the handshake.
	bad := dial(t, s, grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS12})))
	_, err = bad.Health(ctx, &pb.HealthRequest{})
	wantCode(t, err, codes.Unavailable)
}

// The emulator trusts every caller, so it refuses to listen beyond loopback.
func TestListenLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", ":0", "example.com:1"} {
		if _, err := Start(Options{Listen: addr}); err == nil || !strings.Contains(err.Error(), "loopback") && !strings.Contains(err.Error(), "listen address") {
			t.Fatalf("Listen %q: err = %v, want a loopback refusal", addr, err)
		}
	}
	s, err := Start(Options{Listen: "localhost:0"})
	if err != nil {
		t.Fatalf("Listen localhost:0: %v", err)
	}
	s.Close()
}

func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	mustNot(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "gatewaytest"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA: true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	mustNot(t, err)
	leaf, err := x509.ParseCertificate(der)
	mustNot(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}
