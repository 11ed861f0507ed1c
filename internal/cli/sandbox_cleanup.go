package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/driver/compute"
	"github.com/openclaw/occ/internal/sandbox"
)

func init() { sandboxSubcommands = append(sandboxSubcommands, newSandboxCleanupCommand) }

func newSandboxCleanupCommand(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cleanup",
		Short: "Shut a revision down (--revision) or delete an OCC Namespace (-n/--namespace)",
		Long: `With --revision FILE: revision shutdown. The driver deletes the revision's Sandbox by its
derived identity, so this works even when the Harness Pod (or the Sandbox) is already gone.
It needs only the gateway: no kubeconfig is read.

With -n/--namespace NAME (an OCC Namespace ID, or the physical name of an existing namespace):
Namespace deletion. The driver first removes its Namespace-level resources (Workspace,
workspace resources, provider NetworkPolicies); only if that succeeds is the Kubernetes
namespace deleted. A failure keeps the namespace so the cleanup can be retried.

Both are safe to repeat.`,
		Example: `  # Shut a revision down, through a port-forward to the gateway
  occ sandbox cleanup --installation installation.yaml --revision revision.yaml --gateway 127.0.0.1:30051

  # Delete the OCC Namespace ns_acme and its Kubernetes namespace
  occ sandbox cleanup --installation installation.yaml -n ns_acme`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return runSandboxCleanup(g, cmd) },
	}
	addInstallationFlag(cmd)
	addGatewayFlag(cmd)
	addRevisionFlag(cmd, "revision file to shut down")
	addNamespaceFlag(cmd, "OCC Namespace ID (or existing physical namespace name) to delete")
	return cmd
}

// revisionCleanup is what `cleanup --revision` prints.
type revisionCleanup struct {
	NamespaceName string `json:"namespaceName"`
	AgentID       string `json:"agentId"`
	RevisionID    string `json:"revisionId"`
	CleanedUp     bool   `json:"cleanedUp"`
}

func runSandboxCleanup(g *Globals, cmd *cobra.Command) error {
	opts, err := sessionOptions(g)
	if err != nil {
		return err
	}
	nsArg, revPath := g.v.GetString(flagNamespace), g.v.GetString(flagRevision)
	if (nsArg == "") == (revPath == "") {
		return usageErrorf("give exactly one of --revision FILE (revision shutdown) or --namespace NAME (Namespace deletion)")
	}
	if revPath != "" {
		rf, err := loadRevision(g)
		if err != nil {
			return err
		}
		// Revision shutdown addresses the Sandbox by its derived name on the gateway alone.
		s, err := sandbox.OpenGateway(cmd.Context(), opts)
		if err != nil {
			return err
		}
		defer s.Close()
		if err := s.ShutdownRevision(cmd.Context(), rf); err != nil {
			return err
		}
		ns, _ := compute.ResolveNamespace(rf.NamespaceID)
		out := revisionCleanup{NamespaceName: ns.Name, AgentID: rf.AgentID, RevisionID: rf.RevisionID, CleanedUp: true}
		return g.print(out, func() error {
			_, err := fmt.Fprintf(g.Stdout, "Revision %s of Agent %s is shut down in namespace %s\n", out.RevisionID, out.AgentID, out.NamespaceName)
			return err
		})
	}

	s, err := sandbox.Open(cmd.Context(), opts)
	if err != nil {
		return err
	}
	defer s.Close()
	nsID, err := compute.NamespaceIDFromArgument(cmd.Context(), s.Kube, nsArg)
	if err != nil {
		return err
	}
	res, err := s.Compute.DeleteNamespace(cmd.Context(), nsID)
	if err != nil {
		return err
	}
	return g.print(res, func() error {
		if !res.Deleted {
			_, err := fmt.Fprintf(g.Stdout, "OCC Namespace %s is cleaned up; Kubernetes namespace %s did not exist\n", res.Namespace.ID, res.Namespace.Name)
			return err
		}
		_, err := fmt.Fprintf(g.Stdout, "OCC Namespace %s is cleaned up and Kubernetes namespace %s is deleted\n", res.Namespace.ID, res.Namespace.Name)
		return err
	})
}
