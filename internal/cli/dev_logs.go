package cli

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/occdev"
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
		ValidArgsFunction: func(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
			ctx, cancel := context.WithTimeout(cmd.Context(), completionTimeout)
			defer cancel()
			var out []string
			for _, name := range occdev.ServiceNames(ctx, devSetting(g, cmd, "state-dir", "OCC_DEVELOPMENT_STATE_DIRECTORY")) {
				if strings.HasPrefix(name, prefix) && !slices.Contains(args, name) {
					out = append(out, name)
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			f := cmd.Flags()
			follow, _ := f.GetBool("follow")
			tail, _ := f.GetInt("tail")
			since, _ := f.GetString("since")
			timestamps, _ := f.GetBool("timestamps")
			return devError(occdev.Logs(cmd.Context(), occdev.LogsOptions{
				StateDir: devSetting(g, cmd, "state-dir", "OCC_DEVELOPMENT_STATE_DIRECTORY"),
				Services: args, Follow: follow, Tail: tail, Since: since, Timestamps: timestamps,
				Out: g.Stdout, Notes: g.Stderr,
			}))
		},
	}
	f := cmd.Flags()
	f.BoolP("follow", "f", false, "keep printing new lines until Ctrl-C, and the lines of containers that start meanwhile")
	f.Int("tail", -1, "how many of each container's last lines to print first; -1 prints all")
	f.String("since", "", "only lines newer than a duration (10m, 1h30m) or an RFC 3339 time (2026-01-02T15:04:05Z)")
	f.Bool("timestamps", false, "print each line's RFC 3339 time in front of it")
	f.String("state-dir", "", "state directory of the 'occ dev up' whose services to read (env OCC_DEVELOPMENT_STATE_DIRECTORY)")
	return cmd
}
