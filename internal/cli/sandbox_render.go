package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/sandbox"
	"github.com/openclaw/occ/internal/strictyaml"
)

func init() { sandboxSubcommands = append(sandboxSubcommands, newSandboxRenderCommand) }

func newSandboxRenderCommand(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "render",
		Short: "Print the exact CreateSandbox request for a revision (offline)",
		Long: `Print, as JSON, the exact CreateSandbox request the OpenShell driver would send first to
provision the revision: spec, policy, driver configuration, providers (with the credential
attachments the paired Credential Gateway issues), exposure and request_id. Every check
provisioning makes before contacting the gateway runs, so a revision the driver refuses fails
here with the same message. No cluster and no gateway are contacted, and no Secret is read:
the request carries only literal values. -o yaml prints the same request as YAML.`,
		Example: `  # The exact request, as JSON
  occ sandbox render --installation installation.yaml --revision revision.yaml

  # The same request as YAML, compared with what a colleague rendered
  occ sandbox render --installation installation.yaml --revision revision.yaml -o yaml | diff - theirs.yaml`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return runSandboxRender(g) },
	}
	addInstallationFlag(cmd)
	addRevisionFlag(cmd, "revision file to render (required)")
	return cmd
}

func runSandboxRender(g *Globals) error {
	path, err := installationPath(g)
	if err != nil {
		return err
	}
	rf, err := loadRevision(g)
	if err != nil {
		return err
	}
	off, err := sandbox.OpenOffline(path, g.Stdin)
	if err != nil {
		return err
	}
	js, err := off.Render(rf)
	if err != nil {
		return err
	}
	// What render could not resolve offline goes to stderr, so stdout stays the exact request.
	notes, err := off.RenderNotes(rf)
	if err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintf(g.Stderr, "note: %s\n", n)
	}
	if g.Output == "yaml" {
		y, err := strictyaml.JSONToYAML(js)
		if err != nil {
			return fmt.Errorf("encode YAML output: %w", err)
		}
		_, err = g.Stdout.Write(y)
		return err
	}
	_, err = g.Stdout.Write(js)
	return err
}
