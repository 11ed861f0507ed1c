package cli

import "github.com/spf13/cobra"

// devSubcommands lists the `occ dev` subcommands; each lives in its own dev_*.go file.
var devSubcommands []func(*Globals) *cobra.Command

func newDevCommand(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "A disposable local OpenShell platform in k3d on Docker (up, down, status, logs, reload)",
		Long: `occ dev brings up, inspects and removes a disposable local development environment: a k3d
cluster occ creates in your Docker engine (or a cluster of your kubeconfig) with the pinned
OpenShell Gateway, its verified images and the Agent Sandbox controller, and, run from an OCE
checkout, the OCE control plane: in Compose beside the cluster (the default), or inside the
cluster with --control-plane kubernetes.`,
		Example: `  # Create a k3d cluster with the platform, look at it, take all of it down again
  occ dev up --control-plane kubernetes
  occ dev status
  occ dev logs -f
  occ dev down`,
	}
	for _, sub := range devSubcommands {
		cmd.AddCommand(sub(g))
	}
	return cmd
}
