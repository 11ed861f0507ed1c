package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/driver/compute"
	"github.com/openclaw/occ/internal/sandbox"
)

func init() { sandboxSubcommands = append(sandboxSubcommands, newSandboxEnsureNamespaceCommand) }

func newSandboxEnsureNamespaceCommand(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ensure-namespace",
		Short: "Prepare an OCC Namespace: Kubernetes namespace, baseline isolation, driver ensureNamespace",
		Long: `Prepare Namespace, as Kubernetes Compute does before any revision runs in it: create (or adopt
on exact ownership) the physical namespace oce-<digest>, server-side apply the baseline
isolation (ResourceQuota, LimitRange, default-deny ingress and egress NetworkPolicies), then
call the Sandbox driver's ensureNamespace (namespace labels, workspace resources, provider
NetworkPolicies, gateway Health, Workspace create or adopt). Safe to repeat.

Name the Namespace with -n/--namespace (an OCC Namespace ID, or the physical name of an
existing namespace) or take it from --revision FILE. Prints the Namespace's ID and physical
name.`,
		Example: `  # Prepare the OCC Namespace ns_acme
  occ sandbox ensure-namespace --installation installation.yaml -n ns_acme

  # Prepare the Namespace a revision runs in, on another context, against an emulator
  occ sandbox ensure-namespace --installation installation.yaml --revision revision.yaml \
    --context k3d-occ-dev --gateway 127.0.0.1:17670`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return runSandboxEnsureNamespace(g, cmd) },
	}
	addInstallationFlag(cmd)
	addGatewayFlag(cmd)
	addRevisionFlag(cmd, "revision file whose namespaceId to prepare")
	addNamespaceFlag(cmd, "OCC Namespace ID (or an existing physical namespace name) to prepare")
	return cmd
}

func runSandboxEnsureNamespace(g *Globals, cmd *cobra.Command) error {
	opts, err := sessionOptions(g)
	if err != nil {
		return err
	}
	nsArg, revPath := g.v.GetString(flagNamespace), g.v.GetString(flagRevision)
	if (nsArg == "") == (revPath == "") {
		return usageErrorf("give exactly one of --namespace NAME or --revision FILE")
	}
	var nsID string
	if revPath != "" {
		rf, err := loadRevision(g)
		if err != nil {
			return err
		}
		nsID = rf.NamespaceID
	}
	s, err := sandbox.Open(cmd.Context(), opts)
	if err != nil {
		return err
	}
	defer s.Close()
	if nsArg != "" {
		if nsID, err = compute.NamespaceIDFromArgument(cmd.Context(), s.Kube, nsArg); err != nil {
			return err
		}
	}
	ns, err := s.Compute.PrepareNamespace(cmd.Context(), nsID)
	if err != nil {
		return err
	}
	return g.print(ns, func() error {
		_, err := fmt.Fprintf(g.Stdout, "OCC Namespace %s is prepared in Kubernetes namespace %s\n", ns.ID, ns.Name)
		return err
	})
}
