package emulator

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/openclaw/occ/internal/kube"
)

// StandaloneConfig configures an emulator run as its own process (`occ gateway-emulator`).
type StandaloneConfig struct {
	// Listen is the loopback host:port to serve on.
	Listen string
	// UseKubernetes backs sandboxes by Harness Pods in the cluster Kubeconfig/Context select.
	UseKubernetes bool
	Kubeconfig    string
	Context       string
	// TokenFile, when set, holds the bearer token callers must present (one line).
	TokenFile string
	// TLSCertFile and TLSKeyFile, when both set, serve TLS with that key pair.
	TLSCertFile string
	TLSKeyFile  string
	// AdmissionLimit overrides the per-caller admission limit (0 keeps 1000).
	AdmissionLimit int
	// DropConnectionsFor, when positive, closes the connection of every call that arrives in
	// the emulator's first DropConnectionsFor, after executing it: the pinned Gateway's startup
	// defect, for trying a client's retries by hand.
	DropConnectionsFor time.Duration
}

// Options turns the standalone configuration into emulator Options, reading the token and key
// files and connecting to the cluster. The token value never appears in errors.
func (c StandaloneConfig) Options() (Options, error) {
	opts := Options{Listen: c.Listen, AdmissionLimit: c.AdmissionLimit}
	if c.AdmissionLimit < 0 {
		return opts, fmt.Errorf("--admission-limit %d must be positive (or 0 for the gateway's 1000)", c.AdmissionLimit)
	}
	if c.DropConnectionsFor < 0 {
		return opts, fmt.Errorf("--drop-connections-for %s must not be negative (0 drops nothing)", c.DropConnectionsFor)
	}
	if c.DropConnectionsFor > 0 {
		opts.Faults = append(opts.Faults, Fault{Kind: FaultDropConnection, Window: c.DropConnectionsFor, AfterCommit: true})
	}
	if c.TokenFile != "" {
		b, err := os.ReadFile(c.TokenFile)
		if err != nil {
			return opts, fmt.Errorf("read --token-file %s: %w", c.TokenFile, err)
		}
		token := strings.TrimRight(string(b), "\r\n")
		if token == "" || strings.ContainsAny(token, "\r\n") {
			return opts, fmt.Errorf("--token-file %s must hold exactly one non-empty line (the bearer token)", c.TokenFile)
		}
		opts.Token = token
	}
	switch {
	case c.TLSCertFile != "" && c.TLSKeyFile != "":
		pair, err := tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile)
		if err != nil {
			return opts, fmt.Errorf("load --tls-cert %s and --tls-key %s: %w", c.TLSCertFile, c.TLSKeyFile, err)
		}
		opts.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	case c.TLSCertFile != "" || c.TLSKeyFile != "":
		return opts, fmt.Errorf("--tls-cert and --tls-key go together: pass both to serve TLS, or neither for plaintext")
	}
	if c.UseKubernetes {
		cfg, err := kube.RESTConfig(c.Kubeconfig, c.Context)
		if err != nil {
			return opts, err
		}
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return opts, fmt.Errorf("build Kubernetes client for %s: %w", cfg.Host, err)
		}
		opts.Kube = client
	}
	return opts, nil
}

// RunStandalone serves until ctx ends. ready is called with the listening address once the
// emulator accepts calls.
func RunStandalone(ctx context.Context, c StandaloneConfig, ready func(addr string)) error {
	opts, err := c.Options()
	if err != nil {
		return err
	}
	s, err := Start(opts)
	if err != nil {
		return err
	}
	if ready != nil {
		ready(s.Addr())
	}
	stopped := make(chan error, 1)
	go func() { stopped <- s.Wait() }()
	select {
	case <-ctx.Done():
		s.Close()
		return nil
	case err := <-stopped:
		return err
	}
}
