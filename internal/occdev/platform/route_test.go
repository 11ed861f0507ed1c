package platform

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The trusted proxy range is the nodes' IPv4 Pod ranges, never one wider than /16, and a
// cluster whose nodes have none is refused.
func TestNodePodCIDRs(t *testing.T) {
	node := func(name string, cidrs ...string) corev1.Node {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if len(cidrs) > 0 {
			n.Spec.PodCIDR, n.Spec.PodCIDRs = cidrs[0], cidrs
		}
		return n
	}
	got, err := NodePodCIDRs([]corev1.Node{node("b", "10.42.1.0/24", "fd00:10:42::/64"), node("a", "10.42.0.0/24"), node("c", "10.42.0.0/24")})
	if err != nil || strings.Join(got, ",") != "10.42.0.0/24,10.42.1.0/24" {
		t.Errorf("got %v, %v", got, err)
	}
	if _, err := NodePodCIDRs([]corev1.Node{node("wide", "10.0.0.0/8")}); err == nil || !strings.Contains(err.Error(), "node wide has Pod CIDR 10.0.0.0/8") {
		t.Errorf("a /8: %v", err)
	}
	if _, err := NodePodCIDRs([]corev1.Node{node("none")}); err == nil || !strings.Contains(err.Error(), "no node of the cluster has an IPv4 Pod CIDR") {
		t.Errorf("no Pod CIDR: %v", err)
	}
}

// Only certificates leave the route's CA Secret: a root Secret that also holds its private key
// in tls.crt, one not yet issued, and one with stray bytes are refused, and the refusal never
// repeats the key.
func TestRouteCAIsOnlyCertificates(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "occ-gateway-root"}, IsCA: true,
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	priv := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	if err := checkCertificates(cert); err != nil {
		t.Errorf("a certificate: %v", err)
	}
	for name, data := range map[string][]byte{
		"with its key": append(append([]byte{}, cert...), priv...),
		"not issued":   nil,
		"stray bytes":  append(append([]byte{}, cert...), "garbage"...),
	} {
		err := checkCertificates(data)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		if strings.Contains(err.Error(), string(priv[40:80])) {
			t.Errorf("%s: the refusal repeats the key", name)
		}
	}
	if err := checkCertificates(append(append([]byte{}, cert...), priv...)); err == nil || !strings.Contains(err.Error(), `"EC PRIVATE KEY"`) {
		t.Errorf("a key beside the certificate: %v", err)
	}
}

// The route's names are derived as OCE's chart derives them from the Gateway's namespace.
func TestRouteNames(t *testing.T) {
	r := Route{Namespace: "oce-system"}
	if r.Service() != "occ-gateway-acce0c8a7f22" || r.RootSecret() != "occ-gateway-acce0c8a7f22-root" || r.Certificate() != "openclaw-enterprise-agent-gateways-tls" {
		t.Errorf("names %s %s %s", r.Service(), r.RootSecret(), r.Certificate())
	}
	if RoutingHostname("oce-system") != "occ-gateway-acce0c8a7f22.envoy-gateway-system.svc.cluster.local" {
		t.Errorf("hostname %s", RoutingHostname("oce-system"))
	}
}
