package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/driver"
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
--app-server-token-file the Codex Harness is probed too: serving, starting or failed. A part
that cannot be read is listed under problems; the rest is still shown.`,
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
	var token string
	if path := g.v.GetString(flagAppServerTokenFile); path != "" {
		if token, err = openshell.ReadAppServerTokenFile(path); err != nil {
			return usageErrorf("--%s: %v", flagAppServerTokenFile, err)
		}
	}
	s, err := sandbox.Open(cmd.Context(), opts)
	if err != nil {
		return err
	}
	defer s.Close()
	obs, err := s.Compute.Observe(cmd.Context(), rf, s.SandboxObserver())
	if err != nil {
		return err
	}
	st := sandboxStatus{Observation: obs}
	if obs.Sandbox != nil && obs.Sandbox.Exists {
		st.Harness = observeHarness(cmd.Context(), s.Driver, rf, token, obs)
	}
	return g.print(st, func() error {
		if err := printObservation(g.Stdout, rf, obs); err != nil {
			return err
		}
		printHarness(g.Stdout, st.Harness)
		return nil
	})
}

// sandboxStatus is Compute's observation plus the driver's view of the Harness endpoint.
type sandboxStatus struct {
	*compute.Observation
	Harness *harnessObservation `json:"harness,omitempty"`
}

type harnessObservation struct {
	*openshell.HarnessEndpoint
	Status *openshell.HarnessStatus `json:"status,omitempty"`
}

// observeHarness asks the driver where the Harness is reached and, given the app-server token,
// how it is doing. Failures become problems, like the rest of the observation.
func observeHarness(ctx context.Context, d *openshell.Driver, rf *compute.RevisionFile, token string, obs *compute.Observation) *harnessObservation {
	ns, err := compute.ResolveNamespace(rf.NamespaceID)
	if err != nil {
		obs.Problems = append(obs.Problems, fmt.Sprintf("Harness endpoint: %v", err))
		return nil
	}
	req, err := rf.Requirements()
	if err != nil {
		obs.Problems = append(obs.Problems, fmt.Sprintf("Harness endpoint: %v", err))
		return nil
	}
	ep, err := d.HarnessEndpoint(ctx, driver.HarnessContext{NamespaceContext: driver.NamespaceContext{Namespace: ns}, Revision: rf.Revision(), Requirements: req})
	if err != nil {
		obs.Problems = append(obs.Problems, fmt.Sprintf("Harness endpoint: %v", err))
		return nil
	}
	h := &harnessObservation{HarnessEndpoint: ep}
	if token != "" && !ep.Outbound {
		if h.Status, err = d.HarnessStatus(ctx, ep, token); err != nil {
			obs.Problems = append(obs.Problems, fmt.Sprintf("Harness status: %v", err))
		}
	}
	return h
}

func printHarness(w io.Writer, h *harnessObservation) {
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
