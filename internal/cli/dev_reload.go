package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/reload"
	"github.com/openclaw/occ/internal/occdev/state"
)

func init() { devSubcommands = append(devSubcommands, newDevReloadCommand) }

func newDevReloadCommand(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "reload [SERVICE...]",
		Short: "Rebuild the checkout's images and roll the control plane onto the changed ones",
		Long: `Rebuild, from the OCE checkout of the environment 'occ dev up' recorded, the images 'up' built
(the same builds, through the engine's BuildKit, whose cache makes an unchanged image almost
free), and roll the control plane onto the ones that changed: a changed image that runs in the
cluster is recorded, imported and verified in the node as 'up' does; the Installation is
pointed at a changed Agent runtime; then, for the Compose control plane, exactly the services
whose containers do not run their rebuilt image are recreated (never the one-shot jobs) and the
API and worker are waited for; for --control-plane kubernetes the Deployments are pointed at the
new digests and their rollouts waited for. The checkout's commit is recorded, and the node
images the reload superseded are removed.

With SERVICE (names as 'occ dev status' lists them) only those services are recreated or
rolled out (for Compose only the images they run are rebuilt).

Only the record is used: the recorded Docker engine, k3d cluster (checked to be the recorded one,
as 'down' checks it) and checkout; an environment whose engine, cluster or checkout is gone or
another is refused with what to do. A reload that stops part-way leaves the environment on its
old or its new images: run 'occ dev reload' again to finish it, or 'occ dev down' to remove it.
--dry-run prints the recorded builds and the steps, reading only the record.`,
		Example: `  # Run the edited controller code
  occ dev reload

  # Rebuild and recreate only the controller
  occ dev reload controller

  # Report what changed as JSON
  occ dev reload -o json

  # The builds a reload would repeat, and its steps
  occ dev reload --dry-run`,
	}
	flags, opts, dry := devReloadFlags(cmd)
	cmd.ValidArgsFunction = serviceCompletion(g, flags, &opts.StateDir, &opts.Environment)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := flags.resolve(g); err != nil {
			return err
		}
		opts.Services, opts.OCCCommand, opts.OCCVersion = args, occCommand(), currentVersion().line()
		if *dry {
			plan, err := occdev.PlanReload(*opts)
			if err != nil {
				return err
			}
			return g.print(plan, func() error { return printReloadPlan(g, plan) })
		}
		opts.Progress, opts.Log = newProgressPrinter(g.progressOut()).Sink(), g.Stderr
		res, err := occdev.Reload(cmd.Context(), *opts)
		if err != nil {
			return err
		}
		return g.print(res, func() error { return printReload(g, res) })
	}
	return cmd
}

// devReloadFlags registers the settings of `occ dev reload` on cmd, bound to the options they
// fill; it returns the options and the dry-run switch.
func devReloadFlags(cmd *cobra.Command) (*devFlags, *occdev.ReloadOptions, *bool) {
	opts, dry := &occdev.ReloadOptions{}, new(bool)
	flags := newDevFlags(cmd)
	flags.environment("state directory of the 'occ dev up' to reload (env "+state.EnvDirectory+")", &opts.StateDir, &opts.Environment)
	flags.flag(settingDryRun.withUsage("print the recorded builds a reload repeats and its steps; touch nothing"), dry)
	flags.timeout(settingStartupTimeout.withUsage("bound of the wait for the reloaded services, e.g. 10m (default 10m; env "+occdev.EnvStartupTimeoutSeconds+" in seconds)"), &opts.StartupTimeout)
	flags.flag(settingNoDiagnose.withUsage("write no debug bundle when the reload fails (by default one is written beside the state directory)"), &opts.NoDiagnose)
	return flags, opts, dry
}

func printReload(g *Globals, res *reload.Result) error {
	w := g.Stdout
	var changed []string
	for _, img := range res.Images {
		if img.Changed {
			changed = append(changed, img.Role)
		}
	}
	commit := res.Commit
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if len(changed) == 0 {
		_, err := fmt.Fprintf(w, "Nothing changed: every image built from the checkout at %s is the one running.\n", commit)
		return err
	}
	fmt.Fprintf(w, "Rebuilt from the checkout at %s; changed: %s.\n", commit, strings.Join(changed, ", "))
	if len(res.Rolled) == 0 {
		_, err := fmt.Fprintln(w, "Nothing needed recreating.")
		return err
	}
	_, err := fmt.Fprintf(w, "Rolled onto the new images: %s.\n", strings.Join(res.Rolled, ", "))
	return err
}

func printReloadPlan(g *Globals, p *reload.Plan) error {
	w := g.Stdout
	fmt.Fprintf(w, "Would reload the %s environment recorded in %s, from %s (recorded at %s):\n", p.Profile, p.StateDirectory, p.Checkout, p.RecordedCommit)
	for _, b := range p.Builds {
		where := "imported into the cluster"
		if !b.Imported {
			where = "run by " + strings.Join(b.Services, ", ")
		}
		target := ""
		if b.Target != "" {
			target = ", target " + b.Target
		}
		fmt.Fprintf(w, "  rebuild %s: %s from %s (%s%s), %s; recorded %s\n", b.Role, b.Tag, b.Context, b.Dockerfile, target, where, b.RecordedID)
	}
	for i, s := range p.Steps {
		fmt.Fprintf(w, "%2d. %s\n", i+1, s)
	}
	return nil
}
