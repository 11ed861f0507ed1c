package cli

import (
	"fmt"
	"os"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/interrupt"
	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/state"
)

func init() { devSubcommands = append(devSubcommands, newDevDownCommand) }

func newDevDownCommand(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Remove exactly what 'occ dev up' recorded",
		Long: `Remove, in reverse order, every object the recorded state says 'occ dev up' created, using
only the kubeconfig, context and Docker engine recorded then. A k3d cluster occ created is
deleted only after checking it is the recorded one (its name, k3d's labels, occ's owner label
and the kube-system UID), and then no container, network or volume of it may be left; the
images 'up' pulled are removed, never one that was there before. For the Compose control plane
the controller and worker-kubernetes are stopped first, then the cluster is deleted, then the
recorded Compose project is taken down with its volumes (from its recorded snapshot), and no
container, volume or network of the project may be left. Objects occ did not create are
never touched, and an existing cluster is never deleted. Cleanup continues past failures; the
state directory is deleted only when everything is gone (one that existed before 'up' is
emptied and left), and otherwise kept with the command that retries and a debug bundle of what
is left written beside it (--no-diagnose skips it). A first Ctrl-C is ignored, so the cleanup
is not left half-way; a second stops it, and the next 'down' finishes.`,
		Example: `  # Undo the last 'occ dev up' (the default state directory)
  occ dev down

  # Finish a cleanup that 'occ dev up' or an earlier 'down' could not complete
  occ dev down --state-dir ~/.local/state/occ/dev

  # Report what was removed as JSON
  occ dev down -o json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usageErrorf("Compose options come from recorded Kubernetes development state: occ dev down takes no arguments (got %q); it uses the Compose snapshot 'up' recorded", args[0])
			}
			return nil
		},
	}
	flags, opts := devDownFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := flags.resolve(g); err != nil {
			return err
		}
		opts.OCCCommand, opts.OCCVersion = occCommand(), currentVersion().line()
		if g.Output == "table" {
			opts.Log = g.Stdout
		} else {
			opts.Log = g.Stderr
		}
		// A cleanup stopped half-way helps nobody: the first signal only says so.
		interrupt.From(cmd.Context()).DeferFirst(func(s os.Signal) {
			fmt.Fprintf(g.Stderr, "occ dev down: %s ignored: removing what up made continues (a second one stops it; then run occ dev down again)\n", signalName(s))
		})
		res, err := occdev.Down(cmd.Context(), *opts)
		if err != nil {
			return err
		}
		return g.print(res, func() error {
			if res.NothingRecorded {
				_, err := fmt.Fprintf(g.Stdout, "No development state at %s: nothing to remove.\n", res.StateDirectory)
				return err
			}
			left := ""
			if n := len(res.LeftAlone); n > 0 {
				left = fmt.Sprintf(" (%d recorded name(s) now belong to something occ did not create and were left alone)", n)
			}
			if res.DirectoryKept {
				_, err := fmt.Fprintf(g.Stdout, "Removed %d recorded object(s) and emptied the state directory %s, which existed before up and stays%s.\n", len(res.Removed), res.StateDirectory, left)
				return err
			}
			_, err := fmt.Fprintf(g.Stdout, "Removed %d recorded object(s) and the state directory %s%s.\n", len(res.Removed), res.StateDirectory, left)
			return err
		})
	}
	return cmd
}

// devDownFlags registers the settings of `occ dev down` on cmd, bound to the options they fill.
func devDownFlags(cmd *cobra.Command) (*devFlags, *occdev.DownOptions) {
	opts := &occdev.DownOptions{}
	flags := newDevFlags(cmd)
	flags.environment("state directory of the 'occ dev up' to undo (env "+state.EnvDirectory+")", &opts.StateDir, &opts.Environment)
	flags.flag(settingNoDiagnose.withUsage("write no debug bundle when the cleanup is incomplete (by default one is written beside the kept state directory)"), &opts.NoDiagnose)
	return flags, opts
}

// signalName is how a user knows the signal: Ctrl-C for SIGINT, else its name.
func signalName(s os.Signal) string {
	switch s {
	case os.Interrupt:
		return "Ctrl-C (SIGINT)"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}
