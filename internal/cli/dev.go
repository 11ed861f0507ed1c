package cli

import "github.com/spf13/cobra"

// devSubcommands lists the `occ dev` subcommands; each lives in its own dev_*.go file.
var devSubcommands []func(*Globals) *cobra.Command

func newDevCommand(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dev",
		Short: "A disposable local OpenClaw Enterprise control plane (up, down, status)",
		Example: `  # Bring the platform up on the current kubeconfig context, look at it, take it down
  occ dev up --control-plane kubernetes
  occ dev status
  occ dev down`,
	}
	for _, sub := range devSubcommands {
		cmd.AddCommand(sub(g))
	}
	return cmd
}
