package cli

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/occdev/observe"
	"github.com/openclaw/occ/internal/occdev/state"
)

func init() { devSubcommands = append(devSubcommands, newDevLogsCommand) }

// completionTimeout bounds the cluster lookup behind SERVICE completion: a shell waits for it.
const completionTimeout = 5 * time.Second

func newDevLogsCommand(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "logs [SERVICE...]",
		Short: "Print the logs of the development environment's services",
		Long: `Print the logs of the services of the environment 'occ dev up' recorded, by the names
'occ dev status' lists: the Compose services of the control plane (read through the recorded
Docker engine) and the Kubernetes workloads — the Gateway, the Agent Sandbox controller and, with
--control-plane kubernetes, the control plane in the cluster (read through the recorded
kubeconfig, every container of every Pod). Only the recorded engine and kubeconfig are used.

Without SERVICE every service is printed, interleaved, each line prefixed with its service
(and the container, for a Pod of several) as 'docker compose logs' does; with one SERVICE the
lines are printed bare. The flags read as kubectl's and compose's:
  --tail N        the last N lines of each container first (-1: all)
  --since D|T     only lines newer than a duration (10m, 1h30m) or an RFC 3339 time
  --timestamps    each line's time in front of it
  -f, --follow    keep printing until Ctrl-C. A container that starts meanwhile — a restarted
                  one, a recreated Compose service, a Pod that replaces another — is printed
                  from its first line of that run, so nothing is shown twice.`,
		Example: `  # Everything every service said, interleaved
  occ dev logs

  # Follow the controller from its last 20 lines
  occ dev logs controller -f --tail 20

  # The Gateway's last hour, with timestamps
  occ dev logs openshell-gateway --since 1h --timestamps`,
	}
	flags, opts := devLogsFlags(cmd)
	cmd.ValidArgsFunction = serviceCompletion(g, flags, &opts.StateDir, &opts.Environment)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := flags.resolve(g); err != nil {
			return err
		}
		opts.Services, opts.Out, opts.Notes = args, g.Stdout, g.Stderr
		return flags.attribute(observe.Logs(cmd.Context(), *opts))
	}
	return cmd
}

// devLogsFlags registers the settings of `occ dev logs` on cmd, bound to the options they fill.
func devLogsFlags(cmd *cobra.Command) (*devFlags, *observe.LogsOptions) {
	opts := &observe.LogsOptions{}
	flags := newDevFlags(cmd)
	flags.flag(settingFollow, &opts.Follow)
	flags.number(settingTail, -1, &opts.Tail)
	flags.text(settingSince, &opts.Since)
	flags.flag(settingTimestamps, &opts.Timestamps)
	flags.environment("state directory of the 'occ dev up' whose services to read (env "+state.EnvDirectory+")", &opts.StateDir, &opts.Environment)
	return flags, opts
}

// serviceCompletion completes SERVICE arguments from the environment the command's settings
// name once resolved into stateDir and environment.
func serviceCompletion(g *Globals, flags *devFlags, stateDir, environment *string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
		// A bad setting completes to what the state directory still gives.
		_ = flags.resolve(g)
		return completeServices(cmd, *stateDir, *environment, args, prefix)
	}
}

// completeServices completes SERVICE from the services of the environment recorded in
// stateDir (or named environment), leaving out those already given.
func completeServices(cmd *cobra.Command, stateDir, environment string, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
	defer cancel()
	var out []string
	for _, name := range observe.ServiceNames(ctx, stateDir, environment) {
		if strings.HasPrefix(name, prefix) && !slices.Contains(args, name) {
			out = append(out, name)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
