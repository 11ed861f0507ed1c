package gateway_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"log/slog"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/openclaw/occ/internal/gateway"
	"github.com/openclaw/occ/internal/gateway/emulator"
	"github.com/openclaw/occ/internal/kube"
	"github.com/openclaw/occ/internal/syncbuf"
	"github.com/openclaw/occ/internal/testbed"
)

func TestMain(m *testing.M) { os.Exit(testbed.Run(m)) }

// The conformance suite runs against the emulator by default. Setting OCC_OPENSHELL_GATEWAY to
// a live gateway's host:port runs the same client behaviours against it instead:
//
//	OCC_OPENSHELL_GATEWAY=host:port     the gateway (required for a live run)
//	OCC_OPENSHELL_TOKEN_FILE=/abs/path  bearer token file (omit for an unauthenticated gateway)
//	OCC_OPENSHELL_CA=/abs/path          PEM CA bundle; selects TLS
//	OCC_OPENSHELL_KUBECONFIG=/abs/path  optional: the gateway's cluster, so the suite can create
//	                                    the Namespace of each test Workspace (operator mode)
//
// Assertions that need the emulator's journal or fault injection are skipped in a live run,
// each with the reason.
const (
	envGateway    = "OCC_OPENSHELL_GATEWAY"
	envToken      = "OCC_OPENSHELL_TOKEN_FILE"
	envCA         = "OCC_OPENSHELL_CA"
	envKubeconfig = "OCC_OPENSHELL_KUBECONFIG"
)

// target is the gateway one test talks to.
type target struct {
	live bool
	emu  *emulator.Server // nil in a live run
	kube kubernetes.Interface
	cfg  gateway.Config
	logs *syncbuf.Buffer
}

var announceOnce sync.Once

// newTarget starts an emulator backed by the real apiserver test bed (so its Harness Pods exist
// there), or points at the live gateway. opts tune the emulator only.
func newTarget(t *testing.T, opts emulator.Options) *target {
	t.Helper()
	tg := &target{logs: &syncbuf.Buffer{}}
	if addr := os.Getenv(envGateway); addr != "" {
		tg.live = true
		tg.cfg = gateway.Config{Endpoint: addr, RootCertificatePath: os.Getenv(envCA), BearerTokenFile: os.Getenv(envToken)}
		if tg.cfg.BearerTokenFile == "" {
			tg.cfg.InsecureTransport = gateway.InsecureTransportNetworkPolicy
		}
		announceOnce.Do(func() {
			t.Logf("conformance target: LIVE OpenShell gateway %s (TLS: %v, bearer token: %v)", addr, tg.cfg.RootCertificatePath != "", tg.cfg.BearerTokenFile != "")
		})
		if kc := os.Getenv(envKubeconfig); kc != "" {
			rc, err := kube.RESTConfig(kc, "")
			if err != nil {
				t.Fatalf("%s: %v", envKubeconfig, err)
			}
			tg.kube = kubernetes.NewForConfigOrDie(rc)
		}
		return tg
	}
	if opts.Kube == nil {
		opts.Kube = testbed.Client(t)
	}
	tg.kube = opts.Kube
	tg.emu = emulator.StartT(t, opts)
	if tg.cfg.Endpoint == "" {
		tg.cfg = gateway.Config{Endpoint: tg.emu.Addr(), InsecureTransport: gateway.InsecureTransportNetworkPolicy}
	}
	return tg
}

// client dials the target; mutate adjusts the configuration first.
func (tg *target) client(t *testing.T, mutate ...func(*gateway.Config)) *gateway.Client {
	t.Helper()
	cfg := tg.cfg
	for _, m := range mutate {
		m(&cfg)
	}
	logger := slog.New(slog.NewTextHandler(tg.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, err := gateway.Dial(context.Background(), cfg, gateway.WithLogger(logger))
	if err != nil {
		t.Fatalf("dial %s: %v", cfg.Endpoint, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// emulatorOnly stops a test (or a subtest) that needs the emulator's journal or fault injection
// when the target is a live gateway, and says why.
func (tg *target) emulatorOnly(t *testing.T, why string) {
	t.Helper()
	if tg.live {
		t.Skipf("needs the emulator (%s); a live gateway offers no such control", why)
	}
}

// workspace creates a fresh Workspace (and its Namespace where a cluster is known) and deletes
// both when the test ends. Names are unique per test because the test bed has no namespace
// controller: a deleted Namespace stays Terminating.
func (tg *target) workspace(t *testing.T, c *gateway.Client) string {
	t.Helper()
	name := uniqueName(t, "occ")
	tg.namespace(t, name)
	ctx := testContext(t)
	if _, err := c.CreateWorkspace(ctx, name, map[string]string{"app.kubernetes.io/managed-by": "occ-conformance"}); err != nil {
		t.Fatalf("CreateWorkspace %s: %v", name, err)
	}
	t.Cleanup(func() { cleanupWorkspace(t, c, name) })
	return name
}

// namespace creates the Kubernetes Namespace an operator-mode Workspace lives in.
func (tg *target) namespace(t *testing.T, name string) {
	t.Helper()
	if tg.kube == nil {
		return
	}
	ctx := testContext(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"openshell.ai/openclaw-workspace": "true"}}}
	if _, err := tg.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Namespace %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = tg.kube.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
}

// cleanupWorkspace removes what a test left in a workspace, best effort, so a live gateway is
// not littered. Failures are logged, not fatal: the test's own assertions already ran.
func cleanupWorkspace(t *testing.T, c *gateway.Client, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if providers, err := c.ListProviders(ctx, name); err == nil {
		for _, p := range providers {
			_, _ = c.DeleteProvider(ctx, name, p.Name)
		}
	}
	if _, err := c.DeleteWorkspace(ctx, name); err != nil && !gateway.IsNotFound(err) {
		t.Logf("cleanup: DeleteWorkspace %s: %v", name, err)
	}
}

// uniqueName returns prefix-<10 hex>, a DNS label of at most 19 characters without "--".
func uniqueName(t *testing.T, prefix string) string {
	t.Helper()
	b := make([]byte, 5)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return prefix + "-" + hex.EncodeToString(b)
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// testPKI is a throwaway CA and a server certificate for 127.0.0.1 / localhost.
type testPKI struct {
	caPath     string
	serverCert tls.Certificate
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "occ conformance test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srvTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "openshell gateway"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
	}
	srvDER, err := x509.CreateCertificate(rand.Reader, srvTmpl, caCert, &srvKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caPath := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return &testPKI{caPath: caPath, serverCert: tls.Certificate{Certificate: [][]byte{srvDER}, PrivateKey: srvKey}}
}

func (p *testPKI) serverTLS() *tls.Config {
	return &tls.Config{Certificates: []tls.Certificate{p.serverCert}, MinVersion: tls.VersionTLS12}
}

// writeFile writes content to a fresh file in a temp dir and returns its absolute path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// assertNoCanary fails if any of the texts holds the canary value.
func assertNoCanary(t *testing.T, canary string, texts map[string]string) {
	t.Helper()
	for where, s := range texts {
		if strings.Contains(s, canary) {
			t.Errorf("credential canary leaked into %s: %s", where, s)
		}
	}
}

func timestamp(t time.Time) *timestamppb.Timestamp { return timestamppb.New(t) }
