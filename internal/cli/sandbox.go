package cli

import "github.com/spf13/cobra"

// sandboxSubcommands lists the `occ sandbox` subcommands; each registers itself from its own
// sandbox_*.go file with an init function, so command files stay independent.
var sandboxSubcommands []func(*Globals) *cobra.Command

func newSandboxCommand(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Drive the OpenShell SandboxDriver core by hand against any cluster and gateway",
		Long: `Drive the OpenShell SandboxDriver core by hand, the way OCC's Kubernetes Compute drives it:
check an Installation (validate), transform and render a revision offline (configure-agent,
render), prepare an OCC Namespace (ensure-namespace), provision a revision and watch it
(provision, status, logs), and take it down again (cleanup).

validate, configure-agent and render contact nothing; logs and cleanup --revision need only
the gateway; the rest need the cluster (--kubeconfig, --context) and the gateway (the
Installation's openshell Backend, or --gateway). To try them without a gateway, run
occ gateway-emulator and pass its address as --gateway.`,
		Example: `  # Offline: check the Installation, freeze a revision, print its CreateSandbox request
  occ sandbox validate installation.yaml
  occ sandbox configure-agent --installation installation.yaml --revision draft.yaml > revision.yaml
  occ sandbox render --installation installation.yaml --revision revision.yaml

  # Provision it, look at it, read its logs, shut it down
  occ sandbox provision --installation installation.yaml --revision revision.yaml
  occ sandbox status --installation installation.yaml --revision revision.yaml
  occ sandbox logs --installation installation.yaml --revision revision.yaml --since 10m
  occ sandbox cleanup --installation installation.yaml --revision revision.yaml`,
	}
	for _, sub := range sandboxSubcommands {
		cmd.AddCommand(sub(g))
	}
	return cmd
}
