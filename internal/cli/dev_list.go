package cli

import (
	"cmp"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/observe"
	"github.com/openclaw/occ/internal/occdev/state"
)

func init() { devSubcommands = append(devSubcommands, newDevListCommand) }

// environmentList is the document `occ dev list -o json` prints.
type environmentList struct {
	Environments []observe.Environment `json:"environments"`
}

func newDevListCommand(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the development environments side by side, with their health",
		Long: `List every environment 'occ dev up --name' made (the default one included): its profile,
engine, cluster, OCE API URL and health, read as 'occ dev status' reads it, for all
environments at once and within 20 seconds. healthy: the cluster answers, every recorded
object is present and the API answers; degraded: something is missing or not ready (the line
under the table says what); unknown: occ could not look. An environment kept under a
--state-dir of its own is not listed (nothing names it).`,
		Example: `  # What is up, and is it well?
  occ dev list

  # The same for scripts
  occ dev list -o json`,
		Args: exactArgs(0),
	}
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		envs, err := occdev.List(cmd.Context(), occdev.ListOptions{})
		if err != nil {
			return err
		}
		doc := environmentList{Environments: envs}
		return g.print(doc, func() error { return printEnvironments(g, envs) })
	}
	return cmd
}

func printEnvironments(g *Globals, envs []observe.Environment) error {
	w := g.Stdout
	if len(envs) == 0 {
		_, err := fmt.Fprintf(w, "No development environments. Create one with occ dev up (the %s environment), or another beside it with occ dev up --name NAME.\n", state.DefaultEnvironment)
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPROFILE\tENGINE\tCLUSTER\tAPI\tHEALTH")
	for _, e := range envs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.Name, cmp.Or(e.Profile, "-"), cmp.Or(e.Engine, "-"), cmp.Or(e.Cluster, "-"), cmp.Or(e.APIURL, "-"), e.Health)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, e := range envs {
		if e.Problem != "" {
			fmt.Fprintf(w, "%s: %s\n", e.Name, oneLine(e.Problem))
		}
	}
	return nil
}

// oneLine keeps a problem to its first line, so the list stays one screen.
func oneLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}
