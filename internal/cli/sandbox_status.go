package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	compute "github.com/openclaw/occ/internal/driver/kubernetes"
	"github.com/openclaw/occ/internal/driver/kubernetes/session"
)

func init() { sandboxSubcommands = append(sandboxSubcommands, newSandboxStatusCommand) }

func newSandboxStatusCommand(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show a revision's namespace, Sandbox phase, Harness Pod readiness and attachments",
		Long: `Read, without changing anything, what Compute can see of a revision: its physical namespace
(and whether OCC owns it), the Sandbox's phase and conditions from the gateway, the readiness
of the revision's Harness Pods, and the state of every credential attachment. A part that
cannot be read is listed under problems; the rest is still shown.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return runSandboxStatus(g, cmd) },
	}
	addInstallationFlag(cmd)
	addGatewayFlag(cmd)
	addRevisionFlag(cmd, "revision file to inspect (required)")
	return cmd
}

func runSandboxStatus(g *Globals, cmd *cobra.Command) error {
	opts, err := sessionOptions(g)
	if err != nil {
		return err
	}
	rf, err := loadRevision(g)
	if err != nil {
		return err
	}
	s, err := session.Open(cmd.Context(), opts)
	if err != nil {
		return err
	}
	defer s.Close()
	obs, err := s.Compute.Observe(cmd.Context(), rf, s.SandboxObserver())
	if err != nil {
		return err
	}
	return g.print(obs, func() error { return printObservation(g.Stdout, rf, obs) })
}

func printObservation(w io.Writer, rf *compute.RevisionFile, o *compute.Observation) error {
	ns := o.Namespace
	state := "absent"
	if ns.Exists {
		state = ns.Phase
		if !ns.Owned {
			state += ", NOT owned by this OCC Namespace"
		}
	}
	fmt.Fprintf(w, "Revision    %s (Agent %s, Harness %s/%s)\n", rf.RevisionID, rf.AgentID, rf.Harness.ID, rf.Harness.Mode)
	fmt.Fprintf(w, "Namespace   %s (OCC Namespace %s): %s\n", ns.Name, ns.ID, state)
	switch sb := o.Sandbox; {
	case sb == nil:
	case !sb.Exists:
		fmt.Fprintf(w, "Sandbox     %s: absent\n", sb.Name)
	default:
		fmt.Fprintf(w, "Sandbox     %s: %s", sb.Name, sb.Phase)
		if len(sb.Conditions) > 0 {
			fmt.Fprintf(w, " [%s]", strings.Join(sb.Conditions, ", "))
		}
		fmt.Fprintln(w)
	}
	if len(o.Pods) == 0 {
		fmt.Fprintf(w, "Harness Pod none\n")
	}
	for _, p := range o.Pods {
		fmt.Fprintf(w, "Harness Pod %s: %s\n", p.Name, p.State)
	}
	for _, a := range o.Attachments {
		line := fmt.Sprintf("Attachment  %s (%s): %s", a.SourceID, a.Ref, a.State)
		if a.Reason != "" {
			line += " (" + a.Reason + ")"
		}
		fmt.Fprintln(w, line)
	}
	for _, p := range o.Problems {
		fmt.Fprintf(w, "Problem     %s\n", p)
	}
	return nil
}
