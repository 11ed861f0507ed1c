package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/occdev"
	"github.com/openclaw/occ/internal/occdev/engine/locate"
)

func init() { devSubcommands = append(devSubcommands, newDevUpCommand) }

func newDevUpCommand(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Bring up a disposable k3d cluster with the OpenShell development platform",
		Long: `Bring up a disposable OpenShell development platform: a k3d cluster in your Docker or Podman
engine with the pinned OpenShell Gateway and Agent Sandbox controller, the pinned images
imported and verified in its node, and the Installation the OpenShell Sandbox Driver reads.
From an OpenClaw Enterprise checkout (or --repository) it also starts the OCE control plane: in
Compose (the default) or, with --control-plane kubernetes, inside the cluster.

Everything is recorded in a private state directory before it is created; a failed run removes
what it made, and 'occ dev down' removes exactly what was recorded. --dry-run shows the plan.
--name keeps environments side by side (own state, Compose project, host ports; occ dev list).
Each flag names its variable; only the environment gives OCC_DEVELOPMENT_CONTROLLER_IMAGE and
OCC_KUBERNETES_RUNTIME_IMAGE (CI-built images by digest), OCC_DEVELOPMENT_NODE_BASE_IMAGE,
OCC_DEVELOPMENT_NODE_RUNTIME_BASE_IMAGE, OCC_DEVELOPMENT_COMPOSE_PROJECT, OCC_DEVELOPMENT_K3S_IMAGE,
and for the Kubernetes-only profile OPENCLAW_DEV_PORT and OCC_DEVELOPMENT_POSTGRES_IMAGE.
How every step works: docs/dev-up.md.`,
		Example: `  # Preview every step and what it would create; creates nothing
  occ dev up --dry-run

  # From an OCE checkout: the whole stack, with a Compose file of your own layered on top
  cd ~/src/openclaw-enterprise && occ dev up -- -f compose.local.yaml

  # From an OCE checkout: the whole stack inside the k3d cluster, the API on 127.0.0.1:3000
  occ dev up --control-plane kubernetes

  # An OpenShell engineer's own charts, offline with a local Agent Sandbox manifest
  occ dev up --openshell-helm-chart ~/src/OpenShell/deploy/helm/openshell \
    --openshell-workspace-helm-chart ~/src/OpenShell/deploy/helm/openshell-workspace \
    --agent-sandbox-manifest ~/Downloads/sandbox.yaml

  # Install into a cluster of your kubeconfig instead of creating one
  occ dev up --cluster-provider existing --context kind-dev -n openshell-dev`,
		Args: composeArgs,
	}
	opts := &occdev.UpOptions{}
	flags, dry, engine := devUpFlags(cmd, opts)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := flags.resolve(g); err != nil {
			return err
		}
		opts.Kubeconfig, opts.Context = g.Kubeconfig, g.Context
		opts.EngineSetting = engine.name()
		opts.OCCCommand = occCommand()
		opts.OCCVersion = currentVersion().line()
		opts.OCE.ComposeArgs = args
		if *dry {
			return flags.attribute(runDevUpDryRun(cmd.Context(), g, *opts))
		}
		return flags.attribute(runDevUp(g, cmd, *opts))
	}
	completeValues(cmd, settingClusterProvider.flag, occdev.SupportedProviders)
	completeValues(cmd, settingControlPlane.flag, occdev.SupportedControlPlanes)
	completeValues(cmd, settingEngine.flag, locate.Choices)
	return cmd
}

// devUpFlags registers the settings of `occ dev up` on cmd, each bound to the field of opts it
// fills, with the settings of their own of the cluster providers and the profiles opts knows;
// it returns the dry-run switch and the engine setting's source.
func devUpFlags(cmd *cobra.Command, opts *occdev.UpOptions) (flags *devFlags, dry *bool, engine *setting) {
	dry = new(bool)
	flags = newDevFlags(cmd)
	flags.environment(settingStateDir.usage, &opts.StateDir, &opts.Environment)
	flags.text(settingClusterProvider, &opts.ClusterProvider)
	// Each cluster provider's own settings, as its package declares them.
	for _, s := range opts.ProviderSettings() {
		flags.declared(s)
	}
	engine = flags.text(settingEngine, (*string)(&opts.Engine))
	flags.text(settingControlPlane, (*string)(&opts.ControlPlane))
	flags.text(settingNamespace, &opts.Namespace)
	flags.text(settingPinFile, &opts.PinFile)
	flags.text(settingArchive, &opts.ArchiveFile)
	flags.text(settingPinBundle, &opts.Bundle)
	flags.flag(settingOffline, &opts.Offline)
	flags.text(settingGatewayChart, &opts.GatewayChart)
	flags.text(settingWorkspaceChart, &opts.WorkspaceChart)
	flags.text(settingAgentSandboxManifest, &opts.AgentSandboxManifest)
	flags.text(settingCertManagerManifest, &opts.CertManagerManifest)
	flags.text(settingEnvoyGatewayManifest, &opts.EnvoyGatewayManifest)
	flags.text(settingGatewayEndpoint, &opts.GatewayEndpoint)
	flags.timeout(settingStartupTimeout, &opts.StartupTimeout)
	flags.flag(settingDryRun, dry)
	flags.flag(settingNoDiagnose, &opts.NoDiagnose)
	flags.text(settingRepository, &opts.OCE.Repository)
	flags.text(settingKeyOutput, &opts.OCE.KeyOutput)
	flags.text(settingComposeProject, &opts.OCE.ComposeProject)
	flags.text(settingControllerImage, &opts.OCE.Images.Controller)
	flags.text(settingRuntimeImage, &opts.OCE.Images.Runtime)
	// The base-image overrides apply to every image occ builds, in both profiles.
	flags.text(settingNodeBaseImage, &opts.OCE.NodeBaseImage)
	flags.text(settingNodeRuntimeBaseImage, &opts.OCE.NodeRuntimeBaseImage)
	// Each profile's own settings, as its package declares them.
	for _, s := range opts.ProfileSettings() {
		flags.declared(s)
	}
	flags.text(settingK3sImage, &opts.K3sImage)
	return flags, dry, engine
}

// completeValues offers a flag's fixed set of values to shell completion.
func completeValues(cmd *cobra.Command, flag string, values func() []string) {
	_ = cmd.RegisterFlagCompletionFunc(flag, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values(), cobra.ShellCompDirectiveNoFileComp
	})
}

// composeArgs accepts positional arguments only after "--": they are Compose options, and
// anything before the dash is a mistyped flag or argument (the reference's rule).
func composeArgs(cmd *cobra.Command, args []string) error {
	if dash := cmd.ArgsLenAtDash(); (dash < 0 && len(args) > 0) || dash > 0 {
		return usageErrorf("Compose options must follow --: %s takes no arguments of its own (got %q); write %s -- -f <file>", cmd.CommandPath(), args[0], cmd.CommandPath())
	}
	return nil
}

func runDevUpDryRun(ctx context.Context, g *Globals, opts occdev.UpOptions) error {
	dr, err := occdev.PlanUp(ctx, opts)
	if err != nil {
		return err
	}
	verbose := g.Verbosity > 0
	if err := g.print(dr, func() error { return printDryRun(g.Stdout, dr, verbose) }); err != nil {
		return err
	}
	if n := len(dr.Problems); n > 0 {
		if g.Output == "table" {
			// The table listed them, each once.
			return fmt.Errorf("the dry run found %d problem(s) occ dev up would stop at (listed above)", n)
		}
		return fmt.Errorf("the dry run found %d problem(s) occ dev up would stop at: %s", n, strings.Join(dr.Problems, "; "))
	}
	return nil
}

// printDryRun prints the plan: the steps by name, then the settings and images (each digest
// once) and the problems; verbose (-v) adds what each step creates or checks.
func printDryRun(w io.Writer, dr *occdev.DryRun, verbose bool) error {
	more := "; -v shows what each step creates"
	if verbose {
		more = ""
	}
	fmt.Fprintf(w, "occ dev up would run %d steps (dry run: nothing was created or contacted%s):\n", dr.Count(), more)
	describe := printDescription
	if !verbose {
		describe = func(io.Writer, string, occdev.Description) {}
	}
	for i, s := range dr.Steps {
		if len(s.Lanes) == 0 {
			fmt.Fprintf(w, "%3d. %s\n", i+1, s.Name)
			describe(w, "       ", s.Description)
			continue
		}
		fmt.Fprintf(w, "%3d. %s (%d lanes side by side):\n", i+1, s.Name, len(s.Lanes))
		printLanes(w, strconv.Itoa(i+1), "       ", s.Lanes, describe)
	}
	fmt.Fprintf(w, "State directory: %s\n", dr.Plan.StateDir)
	if p := dr.Plan; !p.Engine.IsZero() {
		kind := "engine (not answering now)"
		if p.EngineKind != "" {
			kind = p.EngineKind.Name() + " " + p.EngineVersion
		}
		fmt.Fprintf(w, "Engine:          %s at %s (from %s)\n", kind, p.Engine, p.EngineSource)
		port := "a free port chosen at creation"
		if p.APIPort != 0 {
			port = strconv.Itoa(p.APIPort)
		}
		fmt.Fprintf(w, "k3d cluster:     %s (API on 127.0.0.1, %s)\n", p.ClusterName, port)
		if p.NodeDNS != nil {
			fmt.Fprintf(w, "Node DNS:        %s\n", p.NodeDNS)
		}
	}
	if p := dr.Plan; p.GatewayChart != "" {
		fmt.Fprintf(w, "OpenShell charts: %s and %s (selected; the archive is not fetched)\n", p.GatewayChart, p.WorkspaceChart)
	}
	if p := dr.Plan; p.AgentSandboxManifest != "" {
		fmt.Fprintf(w, "Agent Sandbox:   %s (selected)\n", p.AgentSandboxManifest)
	}
	if p := dr.Plan; p.Bundle != "" || p.Offline {
		fmt.Fprintf(w, "Bundle:          %s\n", bundleLine(p.Bundle, p.Offline))
	}
	if r := dr.Plan.Routing; len(r.Controllers) > 0 {
		fmt.Fprintf(w, "Routing:         %s (images by pinned digest)\n", strings.Join(r.Controllers, ", "))
		if r.Route != "" {
			fmt.Fprintf(w, "Agent route:     %s\n", r.Route)
		}
	} else {
		fmt.Fprintf(w, "Routing:         none: %s\n", r.Skipped)
	}
	fmt.Fprintf(w, "Gateway render:  Kubernetes %s (%s); API versions of %s\n", dr.Plan.GatewayRender.KubernetesVersion, dr.Plan.GatewayRender.Source, dr.Plan.GatewayRender.APIVersions)
	roles := make([]string, 0, len(dr.Plan.Images))
	for role := range dr.Plan.Images {
		roles = append(roles, role)
	}
	slices.Sort(roles)
	for i, role := range roles {
		label := "Images:"
		if i > 0 {
			label = ""
		}
		fmt.Fprintf(w, "%-16s %s: %s\n", label, role, dr.Plan.Images[role])
	}
	if dr.ControlPlane != "" {
		fmt.Fprintf(w, "Control plane:   %s\n", dr.ControlPlane)
	}
	if o := dr.Plan.OCE; o != nil {
		o.PrintPlan(w)
	}
	if len(dr.Problems) > 0 {
		fmt.Fprintln(w, "\nProblems (occ dev up would stop at these before creating anything):")
		for _, p := range dr.Problems {
			// A problem of several lines (every place an engine was looked for) is indented
			// under its own bullet.
			fmt.Fprintf(w, "  - %s\n", strings.ReplaceAll(p, "\n", "\n    "))
		}
	}
	return nil
}

// printLanes lists a group's lanes, numbering their steps number.1, number.2, … across lanes;
// a step of a lane that is a group itself lists its own lanes one level deeper.
func printLanes(w io.Writer, number, indent string, lanes []occdev.PlannedLane, describe func(io.Writer, string, occdev.Description)) {
	n := 0
	for _, l := range lanes {
		fmt.Fprintf(w, "%s[%s]\n", indent, l.Name)
		for _, ls := range l.Steps {
			n++
			num := fmt.Sprintf("%s.%d", number, n)
			if len(ls.Lanes) > 0 {
				fmt.Fprintf(w, "%s%s. %s (%d lanes side by side):\n", indent, num, ls.Name, len(ls.Lanes))
				printLanes(w, num, indent+"      ", ls.Lanes, describe)
				continue
			}
			fmt.Fprintf(w, "%s%s. %s\n", indent, num, ls.Name)
			describe(w, indent+strings.Repeat(" ", len(num)+2), ls.Description)
		}
	}
}

func printDescription(w io.Writer, indent string, d occdev.Description) {
	for _, c := range d.Creates {
		fmt.Fprintf(w, "%s- %s\n", indent, c)
	}
	if d.Note != "" {
		fmt.Fprintf(w, "%s· %s\n", indent, d.Note)
	}
	// A wait is not a creation: it gets the mark of what a step only checks, after the note
	// that says how long it waits.
	for _, wt := range d.Waits {
		fmt.Fprintf(w, "%s· waits for %s\n", indent, wt)
	}
}

func runDevUp(g *Globals, cmd *cobra.Command, opts occdev.UpOptions) error {
	opts.Progress = newProgressPrinter(g.progressOut()).Sink()
	opts.Log = g.Stderr
	sum, err := occdev.Up(cmd.Context(), opts)
	if err != nil {
		return err
	}
	return g.print(sum, func() error { return printUpSummary(g.Stdout, sum) })
}

func printUpSummary(w io.Writer, s *occdev.Summary) error {
	var rows [][2]string
	if o := s.OCE; o != nil {
		// The reference's summary of the whole stack first, then the platform's details.
		fmt.Fprintf(w, "\nOpenClaw Enterprise development stack is ready.\n\n")
		rows = append(rows,
			[2]string{"Control plane", o.ControlPlane},
			[2]string{"Drivers", o.Drivers},
			[2]string{"API URL", o.APIURL},
			[2]string{"Installation ID", o.InstallationID},
			[2]string{"Key file", o.KeyFile + " (0600; verified against the Installation)"},
		)
		if o.Namespace != "" {
			rows = append(rows, [2]string{"OCC Namespace", o.Namespace + " (ready)"})
		}
		if o.RuntimeImage != "" {
			rows = append(rows, [2]string{"Agent runtime", o.RuntimeImage})
		}
		if o.AdminEmail != "" {
			rows = append(rows, [2]string{"Admin email", o.AdminEmail}, [2]string{"Password file", o.PasswordFile + " (0600)"})
		}
		for i, b := range o.BaseImages {
			label := ""
			if i == 0 {
				label = "Base images"
			}
			rows = append(rows, [2]string{label, b})
		}
		for i, svc := range o.Services {
			label := ""
			if i == 0 {
				label = "Services"
			}
			state := "started"
			if !svc.Started {
				state = "not started: " + svc.Why
			}
			rows = append(rows, [2]string{label, svc.Name + " (" + state + ")"})
		}
	} else {
		fmt.Fprintf(w, "\nOpenShell development platform is ready.\n\n")
	}
	rows = append(rows,
		[2]string{"Engine", s.Engine},
		[2]string{"Cluster", fmt.Sprintf("%s (provider %s, API %s)", s.Cluster, s.ClusterProvider, s.APIServer)},
		[2]string{"Context", s.Context},
		[2]string{"Kubeconfig", s.Kubeconfig},
	)
	if s.ClusterProvider == occdev.ProviderK3d {
		rows[len(rows)-1][1] += " (written by occ; your kubeconfig and current context are untouched)"
	}
	if s.ContainerKubeconfig != "" {
		rows = append(rows, [2]string{"Containers", s.ContainerKubeconfig + " (kubeconfig for containers on the cluster's " + s.EngineKind.Name() + " network)"})
	}
	for i, img := range s.Images {
		label := ""
		if i == 0 {
			label = "Images"
		}
		rows = append(rows, [2]string{label, img + " (verified in the node)"})
	}
	rows = append(rows,
		[2]string{"Namespace", s.Namespace},
		[2]string{"Gateway", s.GatewayEndpoint},
		[2]string{"Installation", s.Installation},
		[2]string{"Routing", s.Routing},
		[2]string{"State", s.StateDirectory},
	)
	if s.ControlPlane != "" {
		rows = append(rows, [2]string{"Control plane", s.ControlPlane})
	}
	for _, r := range rows {
		if r[0] == "" {
			fmt.Fprintf(w, "  %-16s %s\n", "", r[1])
			continue
		}
		fmt.Fprintf(w, "  %-16s %s\n", r[0]+":", r[1])
	}
	_, err := fmt.Fprintf(w, "\nRemove everything it created with:\n  %s\n", s.DownCommand)
	return err
}

// bundleLine says where the pinned artifacts come from with --bundle and --offline.
func bundleLine(bundle string, offline bool) string {
	switch {
	case bundle == "":
		return "none; offline: every image must be in the engine and every download in the cache"
	case offline:
		return bundle + " (every pinned image and download from it; offline: no pull, no download)"
	}
	return bundle + " (every pinned image and download from it)"
}
