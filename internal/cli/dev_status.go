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

func init() { devSubcommands = append(devSubcommands, newDevStatusCommand) }

func newDevStatusCommand(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Compare the recorded development state with the live cluster",
		Long: `Read the recorded state and report, for every object 'occ dev up' created, whether it is
present, missing, changed (the name now belongs to a different object) or unknown (occ could
not look, for example because the cluster does not answer; the cause is shown). For a k3d
cluster occ created it also says whether the cluster exists, is missing or is not ours any more
(same name, another cluster), and whether each imported image still has the recorded digest in
the node. For the Compose control plane it lists the Compose services (running with their
health, exited with their code, or missing) and whether the OCE API answers. Workloads lists
the Kubernetes services (the Gateway, the Agent Sandbox controller, the in-cluster control
plane) with their readiness; these and the Compose services are the names 'occ dev logs' reads. Only the recorded
kubeconfig, Docker engine and Compose snapshot are used. -o json prints
the same as a document, also when nothing is recorded. The exit status is 1 when the state of
any object is unknown.`,
		Example: `  # Is everything 'occ dev up' made still there?
  occ dev status

  # The same for scripts
  occ dev status -o json --state-dir ~/.local/state/occ/dev`,
		Args: exactArgs(0),
	}
	flags, opts := devStatusFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := flags.resolve(g); err != nil {
			return err
		}
		st, err := occdev.GetStatus(cmd.Context(), *opts)
		if err != nil {
			return err
		}
		if err := g.print(st, func() error { return printDevStatus(g, st) }); err != nil {
			return err
		}
		if n := st.Unknown(); n > 0 {
			return fmt.Errorf("the state of %d recorded object(s) is unknown: %s", n, firstNonEmpty(st.Problem, "see the detail of each object"))
		}
		return nil
	}
	return cmd
}

// devStatusFlags registers the settings of `occ dev status` on cmd, bound to the options they
// fill.
func devStatusFlags(cmd *cobra.Command) (*devFlags, *occdev.StatusOptions) {
	opts := &occdev.StatusOptions{}
	flags := newDevFlags(cmd)
	flags.environment("state directory of the 'occ dev up' to inspect (env "+state.EnvDirectory+")", &opts.StateDir, &opts.Environment)
	return flags, opts
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// objectCounts says how many objects are recorded and how many are in each state, in the order
// the states first appear ("24 recorded: 24 present", "24 recorded: 20 present, 4 unknown").
func objectCounts(objs []observe.ObjectStatus) string {
	count := map[string]int{}
	var order []string
	for _, o := range objs {
		if count[string(o.State)] == 0 {
			order = append(order, string(o.State))
		}
		count[string(o.State)]++
	}
	parts := make([]string, 0, len(order))
	for _, s := range order {
		parts = append(parts, fmt.Sprintf("%d %s", count[s], s))
	}
	return fmt.Sprintf("%d recorded: %s", len(objs), strings.Join(parts, ", "))
}

func printDevStatus(g *Globals, st *observe.Status) error {
	w := g.Stdout
	if !st.Recorded {
		_, err := fmt.Fprintf(w, "No development state at %s: nothing is up (occ dev up creates it).\n", st.StateDirectory)
		return err
	}
	fmt.Fprintf(w, "State:         %s (profile %s)\n", st.StateDirectory, st.Profile)
	reach := "reachable"
	if !st.Reachable {
		reach = "not reachable"
	}
	if st.Engine != "" {
		fmt.Fprintf(w, "Engine:        %s (%s)\n", st.Engine, st.EngineKind)
	}
	if st.Cluster.Kubeconfig == "" {
		fmt.Fprintf(w, "Cluster:       %s (provider %s, not connected: up stopped before it connected)\n", cmp.Or(st.Cluster.Name, "none"), st.Cluster.Provider)
	} else {
		fmt.Fprintf(w, "Cluster:       %s (context %q in %s, provider %s, %s)\n", st.Cluster.Name, st.Cluster.Context, st.Cluster.Kubeconfig, st.Cluster.Provider, reach)
	}
	if st.ClusterState != "" {
		detail := ""
		if st.ClusterDetail != "" {
			detail = " (" + st.ClusterDetail + ")"
		}
		fmt.Fprintf(w, "%-15s%s%s\n", st.Cluster.Provider+" cluster:", st.ClusterState, detail)
	}
	st.Facts.PrintStatus(w)
	for i, img := range st.Images {
		label := "Images:"
		if i > 0 {
			label = ""
		}
		detail := ""
		if img.Detail != "" {
			detail = " (" + img.Detail + ")"
		}
		fmt.Fprintf(w, "%-14s %s: %s%s\n", label, img.Reference, img.State, detail)
	}
	if s := st.Selections; s != nil && s.Bundle != "" {
		offline := ""
		if s.Offline {
			offline = ", offline"
		}
		fmt.Fprintf(w, "Bundle:        %s (pins %.12s%s)\n", s.Bundle, s.BundlePins, offline)
	}
	if st.Installation != "" {
		fmt.Fprintf(w, "Installation:  %s\n", st.Installation)
	}
	if st.GatewayEndpoint != "" {
		fmt.Fprintf(w, "Gateway:       %s\n", st.GatewayEndpoint)
	}
	if st.Problem != "" {
		fmt.Fprintf(w, "Problem:       %s\n", st.Problem)
	}
	if cp := st.ControlPlane; cp != nil {
		if cp.Runs != "" {
			fmt.Fprintf(w, "Control plane: %s\n", cp.Runs)
		}
		if cp.Checkout != "" {
			fmt.Fprintf(w, "OCE checkout:  %s at %s\n", cp.Checkout, cp.Commit)
		}
		if cp.ComposeProject != "" {
			fmt.Fprintf(w, "Compose:       project %s\n", cp.ComposeProject)
		}
		for _, s := range cp.Services {
			fmt.Fprintf(w, "  %-20s %s\n", s.Service, s.State)
		}
		if cp.ServicesProblem != "" {
			fmt.Fprintf(w, "  services unknown: %s\n", cp.ServicesProblem)
		}
		if cp.APIURL != "" {
			fmt.Fprintf(w, "API:           %s: %s\n", cp.APIURL, cp.API)
		}
		if cp.KeyFile != "" {
			fmt.Fprintf(w, "Key file:      %s (Installation %s)\n", cp.KeyFile, cp.InstallationID)
		}
		for i, im := range cp.Images {
			label := "Images:        "
			if i > 0 {
				label = strings.Repeat(" ", len(label))
			}
			how := "built"
			if im.Selected {
				how = "selected"
			}
			line := fmt.Sprintf("%s: %s (%s)", im.Role, im.Reference, how)
			if im.InCluster != "" {
				line += ", in the cluster as " + im.InCluster
			}
			fmt.Fprintln(w, label+line)
		}
		for i, b := range cp.BaseImages {
			label := "Base images:   "
			if i > 0 {
				label = strings.Repeat(" ", len(label))
			}
			line := b.Reference
			if b.Resolved {
				line += " (" + b.Given + " resolved at its registry)"
			}
			if len(b.Uses) > 0 {
				line += ", for " + strings.Join(b.Uses, "; ")
			}
			fmt.Fprintln(w, label+line)
		}
	}
	if len(st.Workloads) > 0 || st.WorkloadsProblem != "" {
		fmt.Fprintln(w, "Workloads:")
		for _, wl := range st.Workloads {
			fmt.Fprintf(w, "  %-28s %s (%s %s/%s)\n", wl.Service, wl.State, wl.Kind, wl.Namespace, wl.Name)
		}
		if st.WorkloadsProblem != "" {
			fmt.Fprintf(w, "  workloads unknown: %s\n", st.WorkloadsProblem)
		}
	}
	if len(st.Objects) == 0 {
		_, err := fmt.Fprintln(w, "\nNo objects recorded.")
		return err
	}
	// The objects: how many are in each state, and by default only those that are not present
	// listed one by one (-v lists every one; -o json carries them all).
	shown := st.Objects
	if g.Verbosity == 0 {
		shown = nil
		for _, o := range st.Objects {
			if o.State != state.Present {
				shown = append(shown, o)
			}
		}
	}
	fmt.Fprintf(w, "Objects:       %s\n", objectCounts(st.Objects))
	if len(shown) == 0 {
		_, err := fmt.Fprintln(w, "               (occ dev status -v lists them)")
		return err
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tNAMESPACE\tNAME\tSTATE\tDETAIL")
	for _, o := range shown {
		ns := o.Namespace
		if ns == "" {
			ns = "-"
		}
		kind := o.Kind
		if kind == "" {
			kind = string(o.Type)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", kind, ns, o.Name, o.State, o.Detail)
	}
	return tw.Flush()
}
