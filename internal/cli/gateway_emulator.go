package cli

import (
	"errors"
	"fmt"
	"net"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/gateway/emulator"
)

// newGatewayEmulatorCommand is `occ gateway-emulator`: the OpenShell gateway emulator the tests
// use, as a process of its own, so the driver can be tried by hand without a gateway.
//
// It is listed in `occ --help`, not hidden: without it, every `occ sandbox` command that talks
// to a gateway needs the pinned OpenShell Gateway running somewhere (its images come only from
// a registry), and "try the driver before you have a gateway" is exactly what a new user wants.
// What keeps it from being mistaken for a gateway is said where a user meets it: its help lists
// what it does not do, its startup line calls it an emulator, Health reports a version ending
// in "-emulator", and it refuses to listen beyond loopback.
func newGatewayEmulatorCommand(g *Globals) *cobra.Command {
	cfg := emulator.StandaloneConfig{}
	cmd := &cobra.Command{
		Use:   "gateway-emulator",
		Short: "Serve an emulated OpenShell gateway on loopback, to try occ sandbox without one",
		Long: `Serve an emulator of the OpenShell gateway's v0.1.x gRPC API (service openshell.v1.OpenShell)
on a loopback address until interrupted, so occ sandbox ensure-namespace, provision, status,
logs and cleanup can be tried without a real gateway: pass its address as --gateway.

It is the emulator occ's own tests run against. It keeps the gateway's wire contract and
semantics: Workspaces, Sandboxes with request_id replay (24 h), ALREADY_EXISTS and the
1000-admission limit, providers and provider profiles with readiness receipts, service
exposure URLs and google.rpc error details.

Sandboxes live in memory, unless --kubeconfig or --context is given: then, like OpenShell's
Kubernetes driver in operator workspace mode, each Sandbox is a Harness Pod in the namespace
named like its Workspace (the namespace must exist; occ sandbox ensure-namespace prepares it),
READY only while that Pod is Ready, and deleted with the Sandbox.

It is NOT a gateway: there is no sandbox supervisor, no network, filesystem or process policy
is enforced, provider credentials are stored but never delivered to a Harness, service URLs
route nowhere, log buffers stay empty, and all state is lost when it stops. It trusts every
caller (--token-file adds one bearer token, nothing more), which is why it listens on loopback
only.`,
		Example: `  # Serve in memory on the default port, and point occ sandbox at it
  occ gateway-emulator
  occ sandbox provision --installation installation.yaml --revision revision.yaml --gateway 127.0.0.1:17670

  # Back Sandboxes by Harness Pods in a cluster, and demand a bearer token over TLS
  occ gateway-emulator --context k3d-occ-dev --token-file gateway-token \
    --tls-cert emulator.pem --tls-key emulator-key.pem --listen 127.0.0.1:30051

  # Reach the 1000-admission limit quickly
  occ gateway-emulator --admission-limit 3`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Kubeconfig, cfg.Context = g.Kubeconfig, g.Context
			cfg.UseKubernetes = g.Kubeconfig != "" || g.Context != ""
			serving := false
			err := emulator.RunStandalone(cmd.Context(), cfg, func(addr string) {
				serving = true
				backing := "in memory"
				if cfg.UseKubernetes {
					backing = "Harness Pods in Kubernetes"
				}
				fmt.Fprintf(g.Stdout, "OpenShell gateway emulator (not a gateway) listening on %s (sandboxes: %s); pass --gateway %s to occ sandbox\n", addr, backing, addr)
			})
			return emulatorError(err, serving)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Listen, "listen", "127.0.0.1:17670", "loopback host:port to serve on")
	f.StringVar(&cfg.TokenFile, "token-file", "", "file holding the bearer token callers must send (one line)")
	f.StringVar(&cfg.TLSCertFile, "tls-cert", "", "PEM certificate to serve TLS with (needs --tls-key)")
	f.StringVar(&cfg.TLSKeyFile, "tls-key", "", "PEM private key for --tls-cert")
	f.IntVar(&cfg.AdmissionLimit, "admission-limit", 0, "durable request admissions per caller (0: the gateway's 1000)")
	f.DurationVar(&cfg.DropConnectionsFor, "drop-connections-for", 0, "close the connection of every call in the first DURATION after start, after executing it (the pinned Gateway's startup defect), e.g. 10s")
	return cmd
}

// emulatorError makes a refusal of the emulator's settings a usage error (exit 2): everything
// that fails before it serves is a flag, file or kubeconfig the user gave, except a listen that
// the system refused (the port is taken, say), which is an operation that failed.
func emulatorError(err error, serving bool) error {
	if err == nil || serving {
		return err
	}
	var op *net.OpError
	var addr *net.AddrError
	if errors.As(err, &op) && !errors.As(err, &addr) {
		return err
	}
	return &usageError{err: err}
}
