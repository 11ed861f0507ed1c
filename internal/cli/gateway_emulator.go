package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/gateway/emulator"
)

// newGatewayEmulatorCommand is the hidden `occ gateway-emulator`: the in-process OpenShell
// gateway emulator as a process of its own, for trying the driver by hand without a gateway.
func newGatewayEmulatorCommand(g *Globals) *cobra.Command {
	cfg := emulator.StandaloneConfig{}
	cmd := &cobra.Command{
		Use:    "gateway-emulator",
		Short:  "Serve an emulated OpenShell v0.1.x gateway on a loopback address (for development)",
		Hidden: true,
		Long: `Serve the test emulator of the OpenShell gateway (service openshell.v1.OpenShell) until
interrupted. With --kubeconfig or --context, sandboxes are Harness Pods in the Namespace named
like their workspace; otherwise they live in memory. The emulator trusts its callers, so it
listens on loopback only.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Kubeconfig, cfg.Context = g.Kubeconfig, g.Context
			cfg.UseKubernetes = g.Kubeconfig != "" || g.Context != ""
			return emulator.RunStandalone(cmd.Context(), cfg, func(addr string) {
				backing := "in memory"
				if cfg.UseKubernetes {
					backing = "Kubernetes"
				}
				fmt.Fprintf(g.Stdout, "OpenShell gateway emulator listening on %s (sandboxes: %s)\n", addr, backing)
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Listen, "listen", "127.0.0.1:17670", "loopback host:port to serve on")
	f.StringVar(&cfg.TokenFile, "token-file", "", "file holding the bearer token callers must send (one line)")
	f.StringVar(&cfg.TLSCertFile, "tls-cert", "", "PEM certificate to serve TLS with (needs --tls-key)")
	f.StringVar(&cfg.TLSKeyFile, "tls-key", "", "PEM private key for --tls-cert")
	f.IntVar(&cfg.AdmissionLimit, "admission-limit", 0, "durable request admissions per caller (0: the gateway's 1000)")
	return cmd
}
