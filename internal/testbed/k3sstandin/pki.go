package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// pki is the server's certificate material under <data-dir>/server/tls. It is generated once and
// reused when the node container restarts (k3d cluster stop/start), as k3s keeps its own.
type pki struct {
	dir     string
	ca      *x509.Certificate
	caKey   *ecdsa.PrivateKey
	CAFile  string
	KeyFile string
}

// certFiles names a certificate and its key on disk.
type certFiles struct{ Cert, Key string }

// loadOrCreateCA loads or creates the CA named name (k3s keeps "server-ca" for serving and
// clients, "request-header-ca" for the front proxy).
func loadOrCreateCA(dir, name string) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{dir: dir, CAFile: filepath.Join(dir, name+".crt"), KeyFile: filepath.Join(dir, name+".key")}
	keyFile := p.KeyFile
	if cert, key, err := readPair(p.CAFile, keyFile); err == nil {
		p.ca, p.caKey = cert, key
		return p, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read server CA: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: fmt.Sprintf("k3s-%s@%d", name, now.Unix())},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, _ := x509.ParseCertificate(der)
	if err := writePair(p.CAFile, keyFile, der, key); err != nil {
		return nil, err
	}
	p.ca, p.caKey = cert, key
	return p, nil
}

// serving issues (or reuses, when its names still match) the apiserver's serving certificate.
// A restart with other --tls-san values gets a new certificate, as k3s regenerates on SAN changes.
func (p *pki) serving(name string, dnsNames []string, ips []net.IP) (certFiles, error) {
	f := certFiles{Cert: filepath.Join(p.dir, name+".crt"), Key: filepath.Join(p.dir, name+".key")}
	if cert, _, err := readPair(f.Cert, f.Key); err == nil && sameNames(cert, dnsNames, ips) && cert.CheckSignatureFrom(p.ca) == nil {
		return f, nil
	}
	tmpl := p.leaf(name)
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	tmpl.DNSNames, tmpl.IPAddresses = dnsNames, ips
	return f, p.issue(f, tmpl)
}

// client issues (or reuses) a client certificate for user cn in groups orgs.
func (p *pki) client(name, cn string, orgs ...string) (certFiles, error) {
	f := certFiles{Cert: filepath.Join(p.dir, name+".crt"), Key: filepath.Join(p.dir, name+".key")}
	if cert, _, err := readPair(f.Cert, f.Key); err == nil && cert.CheckSignatureFrom(p.ca) == nil {
		return f, nil
	}
	tmpl := p.leaf(cn)
	tmpl.Subject.Organization = orgs
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return f, p.issue(f, tmpl)
}

func (p *pki) leaf(cn string) *x509.Certificate {
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(1, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
	}
}

func (p *pki) issue(f certFiles, tmpl *x509.Certificate) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	if err != nil {
		return fmt.Errorf("issue certificate %s: %w", tmpl.Subject.CommonName, err)
	}
	return writePair(f.Cert, f.Key, der, key)
}

// serviceAccountKey returns the key file that signs and verifies service-account tokens.
func (p *pki) serviceAccountKey() (string, error) {
	file := filepath.Join(p.dir, "service.key")
	if _, err := os.Stat(file); err == nil {
		return file, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", err
	}
	return file, writeFileAtomic(file, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}

func (p *pki) caPEM() ([]byte, error) { return os.ReadFile(p.CAFile) }

func readPair(certFile, keyFile string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	cb, err := os.ReadFile(certFile)
	if err != nil {
		return nil, nil, err
	}
	kb, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, nil, err
	}
	cblock, _ := pem.Decode(cb)
	kblock, _ := pem.Decode(kb)
	if cblock == nil || kblock == nil {
		return nil, nil, fmt.Errorf("%s or %s is not PEM", certFile, keyFile)
	}
	cert, err := x509.ParseCertificate(cblock.Bytes)
	if err != nil {
		return nil, nil, err
	}
	key, err := x509.ParseECPrivateKey(kblock.Bytes)
	if err != nil {
		return nil, nil, err
	}
	return cert, key, nil
}

func writePair(certFile, keyFile string, der []byte, key *ecdsa.PrivateKey) error {
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return err
	}
	return writeFileAtomic(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

func sameNames(cert *x509.Certificate, dnsNames []string, ips []net.IP) bool {
	if !slices.Equal(cert.DNSNames, dnsNames) || len(cert.IPAddresses) != len(ips) {
		return false
	}
	for i := range ips {
		if !cert.IPAddresses[i].Equal(ips[i]) {
			return false
		}
	}
	return true
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return n
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, mode); err != nil {
		return err
	}
	if err := os.Chmod(tmp, mode); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
