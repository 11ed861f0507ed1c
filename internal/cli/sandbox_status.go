package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/driver/compute"
	"github.com/openclaw/occ/internal/driver/openshell"
	"github.com/openclaw/occ/internal/sandbox"
)

const flagAppServerTokenFile = "app-server-token-file"

func init() { sandboxSubcommands = append(sandboxSubcommands, newSandboxStatusCommand) }

func newSandboxStatusCommand(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show a revision's namespace, Sandbox phase, Harness Pod readiness and attachments",
		Long: `Read, without changing anything, what Compute can see of a revision: its physical namespace
(and whether OCC owns it), the Sandbox's phase and conditions from the gateway, the readiness
of the revision's Harness Pods, the state of every credential attachment, and where the
Harness is reached (a Codex app-server's ws(s) URL; native OpenClaw connects outbound). With
--app-server-token-file the Codex Harness is probed too: serving, starting or failed. The probe
connects to the gateway endpoint and names the service in the Host header, so the URL's host
need not resolve.

A part that cannot be read (an unreachable cluster or gateway, a refused request) is shown as
unknown with its cause, never as absent; the rest is still shown, and the command then exits
1, so a script never mistakes "could not look" for "not there".`,
		Example: `  # What Compute sees of a revision
  occ sandbox status --installation installation.yaml --revision revision.yaml

  # Probe the Codex app-server too, and print JSON
  occ sandbox status --installation installation.yaml --revision revision.yaml \
    --app-server-token-file app-server-token -o json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return runSandboxStatus(g, cmd) },
	}
	addInstallationFlag(cmd)
	addGatewayFlag(cmd)
	addRevisionFlag(cmd, "revision file to inspect (required)")
	cmd.Flags().String(flagAppServerTokenFile, "", "file holding the Codex app-server bearer token; probes the Harness (serving, starting or failed)")
	return cmd
}

func runSandboxStatus(g *Globals, cmd *cobra.Command) error {
	opts, rf, err := sessionForRevision(g)
	if err != nil {
		return err
	}
	var sopts sandbox.StatusOptions
	if path := g.v.GetString(flagAppServerTokenFile); path != "" {
		if sopts.AppServerToken, err = openshell.ReadAppServerTokenFile(path); err != nil {
			return usageErrorf("--%s: %v", flagAppServerTokenFile, err)
		}
	}
	s, err := sandbox.Open(cmd.Context(), opts)
	if err != nil {
		return err
	}
	defer s.Close()
	st, err := s.Status(cmd.Context(), rf, sopts)
	if err != nil {
		return err
	}
	err = g.print(st, func() error {
		if err := printObservation(g.Stdout, rf, st.Observation); err != nil {
			return err
		}
		printHarness(g.Stdout, st.Harness)
		return nil
	})
	if err != nil {
		return err
	}
	// A status that could not look everywhere is not a success: a script must not read an
	// unknown part as absent.
	if !st.Complete() {
		return fmt.Errorf("status is incomplete for revision %s: %s could not be read (shown as unknown or as a Problem); fix the cause and run it again",
			rf.RevisionID, countParts(len(st.Problems)))
	}
	return nil
}

func countParts(n int) string {
	if n == 1 {
		return "1 part"
	}
	return fmt.Sprintf("%d parts", n)
}

func printHarness(w io.Writer, h *sandbox.HarnessObservation) {
	switch {
	case h == nil:
		return
	case h.Outbound:
		fmt.Fprintf(w, "Harness     outbound (native OpenClaw connects out; no endpoint)\n")
		return
	default:
		fmt.Fprintf(w, "Harness     %s (workspace %s)\n", h.URL, h.WorkspaceRoot)
	}
	switch st := h.Status; {
	case st == nil:
	case st.State == openshell.HarnessFailed:
		fmt.Fprintf(w, "App-server  %s: %s\n", st.State, st.Failure)
	case st.Reason != "":
		fmt.Fprintf(w, "App-server  %s (%s)\n", st.State, st.Reason)
	default:
		fmt.Fprintf(w, "App-server  %s\n", st.State)
	}
}

func printObservation(w io.Writer, rf *compute.RevisionFile, o *compute.Observation) error {
	ns := o.Namespace
	var state string
	switch ns.State {
	case compute.Present:
		state = ns.Phase
		if !ns.Owned {
			state += ", NOT owned by this OCC Namespace"
		}
	case compute.Unknown:
		state = "unknown (" + ns.Cause + ")"
	default:
		state = "absent"
	}
	shown := map[string]bool{ns.Cause: true, o.PodsCause: true}
	fmt.Fprintf(w, "Revision    %s (Agent %s, Harness %s/%s)\n", rf.RevisionID, rf.AgentID, rf.Harness.ID, rf.Harness.Mode)
	fmt.Fprintf(w, "Namespace   %s (OCC Namespace %s): %s\n", ns.Name, ns.ID, state)
	switch sb := o.Sandbox; {
	case sb == nil:
	case sb.State == compute.Unknown:
		shown[sb.Cause] = true
		fmt.Fprintf(w, "Sandbox     %s: unknown (%s)\n", sb.Name, sb.Cause)
	case sb.State != compute.Present:
		fmt.Fprintf(w, "Sandbox     %s: absent\n", sb.Name)
	default:
		fmt.Fprintf(w, "Sandbox     %s: %s", sb.Name, sb.Phase)
		if len(sb.Conditions) > 0 {
			fmt.Fprintf(w, " [%s]", strings.Join(sb.Conditions, ", "))
		}
		fmt.Fprintln(w)
	}
	switch {
	case o.Pods == nil:
		fmt.Fprintf(w, "Harness Pod unknown (%s)\n", o.PodsCause)
	case len(o.Pods) == 0:
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
	// Causes already printed beside the part they concern are not repeated.
	for _, p := range o.Problems {
		if !shown[p] {
			fmt.Fprintf(w, "Problem     %s\n", p)
		}
	}
	return nil
}
