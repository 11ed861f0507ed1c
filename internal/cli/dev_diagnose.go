package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/occdev/observe"
	"github.com/openclaw/occ/internal/occdev/state"
)

func init() { devSubcommands = append(devSubcommands, newDevDiagnoseCommand) }

func newDevDiagnoseCommand(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "diagnose",
		Short: "Write a debug bundle of the recorded development environment",
		Long: `Write one archive (tar.gz, private to you) of facts about the environment 'occ dev up'
recorded, for a bug report: occ's version, the recorded state, the container engine's version
and image store, the cluster's Events, every Pod's status and container logs (the previous run's
too after a restart), the Helm releases' status, and the Compose services' states and logs. In a
cluster occ created every namespace is collected; in an existing cluster only the environment's
own. A summary lists what was collected and what could not be, and why; that never stops the
bundle. Secret values, tokens, keys, passwords and the userinfo and query of URLs are replaced
by REDACTED. An existing file is never replaced. A failed 'occ dev up' writes the same bundle
by itself, beside the state directory, before it rolls back.`,
		Example: `  # Collect the environment of the default state directory into ./occ-diagnose-<time>.tar.gz
  occ dev diagnose

  # Name the archive
  occ dev diagnose --archive /tmp/occ-bug.tar.gz`,
		Args: exactArgs(0),
	}
	flags, opts := devDiagnoseFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := flags.resolve(g); err != nil {
			return err
		}
		opts.Version = currentVersion().line()
		res, err := observe.Diagnose(cmd.Context(), *opts)
		if err != nil {
			return flags.attribute(err)
		}
		return g.print(res, func() error {
			_, err := fmt.Fprintln(g.Stdout, res.Path)
			return err
		})
	}
	return cmd
}

// devDiagnoseFlags registers the settings of `occ dev diagnose` on cmd, bound to the options
// they fill.
func devDiagnoseFlags(cmd *cobra.Command) (*devFlags, *observe.DiagnoseOptions) {
	opts := &observe.DiagnoseOptions{}
	flags := newDevFlags(cmd)
	flags.environment("state directory of the environment to collect (env "+state.EnvDirectory+")", &opts.StateDir, &opts.Environment)
	flags.text(settingBundle, &opts.Output)
	return flags, opts
}
