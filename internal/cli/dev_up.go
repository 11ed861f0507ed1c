package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/occdev"
)

func init() { devSubcommands = append(devSubcommands, newDevUpCommand) }

func newDevUpCommand(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Bring up the OpenShell development platform on a cluster",
		Long: `Bring up the pinned OpenShell Gateway, the Agent Sandbox controller, the development
NetworkPolicies and RBAC on a cluster, and write the Installation the OpenShell Sandbox Driver
reads. Every step prints one line with its duration.

Everything created is recorded in a private state directory before it is created; a failed
run removes what it made again, and 'occ dev down' removes exactly what was recorded.
--dry-run prints the steps and what each would create, and touches nothing.

Settings also come from the environment: OCC_DEVELOPMENT_STATE_DIRECTORY,
OCC_DEVELOPMENT_CONTROL_PLANE, OCC_DEVELOPMENT_KUBERNETES_NAMESPACE,
OCC_DEVELOPMENT_STARTUP_TIMEOUT_SECONDS, OCC_DEVELOPMENT_PIN_FILE,
OCC_DEVELOPMENT_OPENSHELL_ARCHIVE, OCC_DEVELOPMENT_CLUSTER_PROVIDER and
OCC_DEVELOPMENT_GATEWAY_ENDPOINT.`,
		Example: `  # Preview every step and what it would create; checks the settings, creates nothing
  occ dev up --dry-run

  # Bring the platform up on the current kubeconfig context, for OCE running in the cluster
  occ dev up --control-plane kubernetes

  # Use another context and namespace, and a local copy of the pinned OpenShell archive
  occ dev up --context kind-dev -n openshell-dev --openshell-archive ./OpenShell-0.1.3.tar.gz

  # Print the summary as JSON (progress goes to stderr)
  occ dev up -o json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts, err := devUpOptions(g, cmd)
			if err != nil {
				return err
			}
			dry, _ := cmd.Flags().GetBool("dry-run")
			if dry {
				return runDevUpDryRun(g, opts)
			}
			return runDevUp(g, cmd, opts)
		},
	}
	f := cmd.Flags()
	f.String("state-dir", "", "private state directory (default $XDG_STATE_HOME/occ/dev; env OCC_DEVELOPMENT_STATE_DIRECTORY)")
	f.String("cluster-provider", "", "where the cluster comes from: "+strings.Join(occdev.SupportedProviders(), ", ")+" (default existing: the kubeconfig context)")
	f.String("control-plane", "", "where OCE is meant to run: compose (Gateway NodePort 30051) or kubernetes (ClusterIP) (default compose)")
	f.StringP("namespace", "n", "", "platform namespace for the Gateway (default openshell-system, or oce-system with --control-plane kubernetes)")
	f.String("pin-file", "", "pin file replacing the built-in OpenShell pins")
	f.String("openshell-archive", "", "local copy of the pinned OpenShell source archive (still verified against the pin)")
	f.String("gateway-endpoint", "", "host:port where the final Health check reaches the Gateway (default: a port-forward)")
	f.String("startup-timeout", "", "bound of each readiness wait, e.g. 10m (default 10m; env OCC_DEVELOPMENT_STARTUP_TIMEOUT_SECONDS in seconds)")
	f.Bool("dry-run", false, "print the steps and what each would create; touch nothing")
	completeValues(cmd, "cluster-provider", occdev.SupportedProviders)
	completeValues(cmd, "control-plane", occdev.SupportedControlPlanes)
	return cmd
}

// completeValues offers a flag's fixed set of values to shell completion.
func completeValues(cmd *cobra.Command, flag string, values func() []string) {
	_ = cmd.RegisterFlagCompletionFunc(flag, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values(), cobra.ShellCompDirectiveNoFileComp
	})
}

func devUpOptions(g *Globals, cmd *cobra.Command) (occdev.UpOptions, error) {
	timeout, err := startupTimeout(g, cmd)
	if err != nil {
		return occdev.UpOptions{}, err
	}
	return occdev.UpOptions{
		StateDir:        devSetting(g, cmd, "state-dir", "OCC_DEVELOPMENT_STATE_DIRECTORY"),
		ClusterProvider: devSetting(g, cmd, "cluster-provider", "OCC_DEVELOPMENT_CLUSTER_PROVIDER"),
		Kubeconfig:      g.Kubeconfig,
		Context:         g.Context,
		ControlPlane:    occdev.ControlPlane(devSetting(g, cmd, "control-plane", "OCC_DEVELOPMENT_CONTROL_PLANE")),
		Namespace:       devSetting(g, cmd, "namespace", "OCC_DEVELOPMENT_KUBERNETES_NAMESPACE"),
		PinFile:         devSetting(g, cmd, "pin-file", "OCC_DEVELOPMENT_PIN_FILE"),
		ArchiveFile:     devSetting(g, cmd, "openshell-archive", "OCC_DEVELOPMENT_OPENSHELL_ARCHIVE"),
		GatewayEndpoint: devSetting(g, cmd, "gateway-endpoint", "OCC_DEVELOPMENT_GATEWAY_ENDPOINT"),
		StartupTimeout:  timeout,
		OCCCommand:      occCommand(),
	}, nil
}

// startupTimeout reads --startup-timeout (a duration) or OCC_DEVELOPMENT_STARTUP_TIMEOUT_SECONDS
// (whole seconds, as in the reference).
func startupTimeout(g *Globals, cmd *cobra.Command) (time.Duration, error) {
	if f := cmd.Flags().Lookup("startup-timeout"); f != nil && f.Changed {
		d, err := time.ParseDuration(f.Value.String())
		if err != nil {
			return 0, usageErrorf("--startup-timeout %q is not a duration: write it like 90s or 10m", f.Value.String())
		}
		return d, nil
	}
	raw := devSetting(g, cmd, "", "OCC_DEVELOPMENT_STARTUP_TIMEOUT_SECONDS")
	if raw == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > 86400 {
		return 0, usageErrorf("OCC_DEVELOPMENT_STARTUP_TIMEOUT_SECONDS must be between 1 and 86400 (got %q)", raw)
	}
	return time.Duration(n) * time.Second, nil
}

func runDevUpDryRun(g *Globals, opts occdev.UpOptions) error {
	dr, err := occdev.PlanUp(opts)
	if err != nil {
		return devError(err)
	}
	if err := g.print(dr, func() error { return printDryRun(g.Stdout, dr) }); err != nil {
		return err
	}
	if n := len(dr.Problems); n > 0 {
		return fmt.Errorf("the dry run found %d problem(s) occ dev up would stop at: %s", n, strings.Join(dr.Problems, "; "))
	}
	return nil
}

func printDryRun(w io.Writer, dr *occdev.DryRun) error {
	fmt.Fprintf(w, "occ dev up would run %d steps (dry run: nothing was created or contacted):\n", dr.Count())
	for i, s := range dr.Steps {
		if len(s.Lanes) == 0 {
			fmt.Fprintf(w, "%3d. %s\n", i+1, s.Name)
			printDescription(w, "       ", s.Description)
			continue
		}
		fmt.Fprintf(w, "%3d. %s (%d lanes side by side):\n", i+1, s.Name, len(s.Lanes))
		n := 0
		for _, l := range s.Lanes {
			fmt.Fprintf(w, "       [%s]\n", l.Name)
			for _, ls := range l.Steps {
				n++
				fmt.Fprintf(w, "       %d.%d. %s\n", i+1, n, ls.Name)
				printDescription(w, "             ", ls.Description)
			}
		}
	}
	fmt.Fprintf(w, "State directory: %s\n", dr.Plan.StateDir)
	if len(dr.Problems) > 0 {
		fmt.Fprintln(w, "\nProblems (occ dev up would stop at these before creating anything):")
		for _, p := range dr.Problems {
			fmt.Fprintf(w, "  - %s\n", p)
		}
	}
	return nil
}

func printDescription(w io.Writer, indent string, d occdev.Description) {
	for _, c := range d.Creates {
		fmt.Fprintf(w, "%s- %s\n", indent, c)
	}
	if d.Note != "" {
		fmt.Fprintf(w, "%s· %s\n", indent, d.Note)
	}
}

func runDevUp(g *Globals, cmd *cobra.Command, opts occdev.UpOptions) error {
	// Progress goes to stdout for people; with -o json|yaml stdout carries only the document.
	progressOut := g.Stdout
	if g.Output != "table" {
		progressOut = g.Stderr
	}
	opts.Progress = newProgressPrinter(progressOut).Sink()
	opts.Log = g.Stderr
	sum, err := occdev.Up(cmd.Context(), opts)
	if err != nil {
		return devError(err)
	}
	return g.print(sum, func() error { return printUpSummary(g.Stdout, sum) })
}

func printUpSummary(w io.Writer, s *occdev.Summary) error {
	fmt.Fprintf(w, "\nOpenShell development platform is ready.\n\n")
	rows := [][2]string{
		{"Engine", s.Engine},
		{"Cluster", fmt.Sprintf("%s (context %q, provider %s)", s.Cluster, s.Context, s.ClusterProvider)},
		{"Namespace", s.Namespace},
		{"Gateway", s.GatewayEndpoint},
		{"Installation", s.Installation},
		{"Kubeconfig", s.Kubeconfig},
		{"State", s.StateDirectory},
	}
	for _, r := range rows {
		fmt.Fprintf(w, "  %-13s %s\n", r[0]+":", r[1])
	}
	_, err := fmt.Fprintf(w, "\nRemove everything it created with:\n  %s\n", s.DownCommand)
	return err
}
