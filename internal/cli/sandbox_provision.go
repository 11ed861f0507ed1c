package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/driver/compute"
	"github.com/openclaw/occ/internal/sandbox"
)

func init() { sandboxSubcommands = append(sandboxSubcommands, newSandboxProvisionCommand) }

func newSandboxProvisionCommand(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "provision",
		Short: "Run the whole Compute flow for a revision and print its SandboxResourceRef",
		Long: `Provision a revision the way Kubernetes Compute does: check everything that can be checked
offline (driver pin, frozen configuration, the exact CreateSandbox request), prepare the
Namespace (physical namespace, baseline isolation, driver ensureNamespace), attach the
revision's credential sources, call the driver's provisionHarness, wait for the revision's
Harness Pod to be Ready (by watch), and wait until every credential attachment is applied.
Progress, with timings, goes to stderr; the stable SandboxResourceRef goes to stdout.

Running it again adopts what an earlier run created and resumes where it stopped.`,
		Example: `  # Provision a revision and print its SandboxResourceRef
  occ sandbox provision --installation installation.yaml --revision revision.yaml

  # Through a port-forward to the gateway, waiting longer for a slow image pull, as JSON
  occ sandbox provision --installation installation.yaml --revision revision.yaml \
    --gateway 127.0.0.1:30051 --pod-timeout 10m -o json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return runSandboxProvision(g, cmd) },
	}
	addInstallationFlag(cmd)
	addGatewayFlag(cmd)
	addRevisionFlag(cmd, "revision file to provision (required)")
	cmd.Flags().Duration("pod-timeout", compute.DefaultPodReadyTimeout, "how long to wait for the Harness Pod to become Ready")
	cmd.Flags().Duration("attachment-timeout", compute.DefaultAttachmentGate().Timeout, "how long to wait for every credential attachment to be applied")
	return cmd
}

func runSandboxProvision(g *Globals, cmd *cobra.Command) error {
	opts, rf, err := sessionForRevision(g)
	if err != nil {
		return err
	}
	if opts.PodTimeout, err = g.durationSetting(cmd, "pod-timeout"); err != nil {
		return err
	}
	gate, err := g.durationSetting(cmd, "attachment-timeout")
	if err != nil {
		return err
	}
	opts.Gate = compute.AttachmentGate{Timeout: gate}
	s, err := sandbox.Open(cmd.Context(), opts)
	if err != nil {
		return err
	}
	defer s.Close()
	res, err := s.Compute.Provision(cmd.Context(), rf)
	if err != nil {
		return err
	}
	ref := res.Ref
	return g.print(ref, func() error {
		_, err := fmt.Fprintf(g.Stdout, "Sandbox %s/%s runs revision %s of Agent %s (Harness Pod %s is Ready)\n",
			ref.NamespaceName, ref.ResourceName, ref.RevisionID, ref.AgentID, res.Pod)
		return err
	})
}
