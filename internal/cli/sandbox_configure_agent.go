package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/sandbox"
)

func init() { sandboxSubcommands = append(sandboxSubcommands, newSandboxConfigureAgentCommand) }

func newSandboxConfigureAgentCommand(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "configure-agent",
		Short: "Apply the Sandbox driver's configureAgent transform (offline)",
		Long: `Run the OpenShell driver's configureAgent on a native Agent configuration, the transform OCC
applies before it freezes a revision: Codex gets its app-server plugin settings, OpenClaw its
workspace pinned to the Sandbox data mount. Nothing else changes, and the Harness never does.

With --revision FILE the whole revision file is printed with its configuration transformed
(YAML, ready to be used as the frozen revision). With --configuration FILE (a JSON or YAML
object) and --harness ID the transformed configuration alone is printed (JSON).
No cluster and no gateway are contacted.`,
		Example: `  # Freeze a revision: its configuration through configureAgent, the whole file printed
  occ sandbox configure-agent --installation installation.yaml --revision draft.yaml > revision.yaml

  # Transform a bare Codex configuration (JSON or YAML) and print it as JSON
  occ sandbox configure-agent --installation installation.yaml --configuration codex.yaml --harness codex`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return runSandboxConfigureAgent(g, cmd) },
	}
	addInstallationFlag(cmd)
	addRevisionFlag(cmd, "revision file whose configuration to transform")
	cmd.Flags().String("configuration", "", "native configuration file (JSON or YAML object) to transform")
	cmd.Flags().String("harness", "", "Harness runtime of --configuration: codex or openclaw")
	cmd.Flags().String("harness-mode", driver.HarnessModeDedicated, "Harness mode of --configuration")
	return cmd
}

func runSandboxConfigureAgent(g *Globals, cmd *cobra.Command) error {
	path, err := installationPath(g)
	if err != nil {
		return err
	}
	revPath, cfgPath := g.v.GetString(flagRevision), g.v.GetString("configuration")
	if (revPath == "") == (cfgPath == "") {
		return usageErrorf("give exactly one of --revision FILE or --configuration FILE")
	}
	if cfgPath != "" && g.v.GetString("harness") == "" {
		return usageErrorf("--harness is required with --configuration: name the Harness runtime (codex or openclaw)")
	}
	if revPath != "" {
		// A revision file names its own Harness; a second one on the command line would be
		// silently ignored.
		for _, flag := range []string{"harness", "harness-mode"} {
			if s := g.settingOf(cmd, flag); !strings.HasSuffix(s.from, "(default)") {
				return usageErrorf("%s goes with --configuration only: with --revision the Harness is the revision file's harness (remove %s, or edit harness in the revision file)", s.from, s.from)
			}
		}
	}
	off, err := sandbox.OpenOffline(path, g.Stdin)
	if err != nil {
		return err
	}
	if revPath != "" {
		rf, err := loadRevision(g)
		if err != nil {
			return err
		}
		out, err := off.ConfigureRevision(rf)
		if err != nil {
			return err
		}
		return printDocument(g, out, true)
	}
	cfg, err := sandbox.ReadConfiguration(cfgPath)
	if err != nil {
		return fmt.Errorf("--configuration: %w", err)
	}
	out, err := off.Driver.ConfigureAgent(cfg, driver.Harness{ID: g.v.GetString("harness"), Mode: g.v.GetString("harness-mode")})
	if err != nil {
		return err
	}
	return printDocument(g, out, false)
}
