package cli

import "github.com/spf13/cobra"

// sandboxSubcommands lists the `occ sandbox` subcommands; each registers itself from its own
// sandbox_*.go file with an init function, so command files stay independent.
var sandboxSubcommands []func(*Globals) *cobra.Command

func newSandboxCommand(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Drive the OpenShell SandboxDriver core by hand against any cluster and gateway",
	}
	for _, sub := range sandboxSubcommands {
		cmd.AddCommand(sub(g))
	}
	return cmd
}
