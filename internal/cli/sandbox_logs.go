package cli

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/gateway"
	"github.com/openclaw/occ/internal/sandbox"
)

func init() { sandboxSubcommands = append(sandboxSubcommands, newSandboxLogsCommand) }

func newSandboxLogsCommand(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "logs",
		Short: "Read a revision's Harness logs from the gateway",
		Long: `Read the revision's Sandbox log buffer through the driver, which calls only GetSandboxLogs.
--lines bounds the count (1 to 2000); --since keeps lines at or after an RFC 3339 UTC time
(for example 2026-01-02T03:04:05Z). An absent Sandbox reports RUNTIME_LOGS_SANDBOX_NOT_FOUND.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return runSandboxLogs(g, cmd) },
	}
	addInstallationFlag(cmd)
	addGatewayFlag(cmd)
	addRevisionFlag(cmd, "revision file whose Harness logs to read (required)")
	cmd.Flags().Int("lines", 200, "how many lines to read, 1 to 2000")
	cmd.Flags().String("since", "", "only lines at or after this RFC 3339 UTC time")
	return cmd
}

func runSandboxLogs(g *Globals, cmd *cobra.Command) error {
	opts, rf, err := sessionForRevision(g)
	if err != nil {
		return err
	}
	lopts := driver.LogOptions{Lines: g.v.GetInt("lines")}
	if lopts.Lines < 1 || lopts.Lines > gateway.MaxLogLines {
		return usageErrorf("--lines %d: OpenShell log line count must be 1 to 2000.", lopts.Lines)
	}
	if since := g.v.GetString("since"); since != "" {
		t, err := gateway.ParseLogSinceTime(since)
		if err != nil {
			return usageErrorf("--since %q: OpenShell log since time must be an RFC 3339 UTC time. (for example 2026-01-02T03:04:05Z)", since)
		}
		lopts.Since = t
	}
	s, err := sandbox.Open(cmd.Context(), opts)
	if err != nil {
		return err
	}
	defer s.Close()
	logs, err := s.Compute.ReadLogs(cmd.Context(), rf, lopts)
	if err != nil {
		if code := driver.CodeOf(err); code != "" {
			return fmt.Errorf("%s: %w", code, err)
		}
		return err
	}
	return g.print(logs, func() error {
		for _, l := range logs.Lines {
			ts := "-"
			if l.Time != nil {
				ts = l.Time.Format(time.RFC3339Nano)
			}
			line := fmt.Sprintf("%s %s %s: %s", ts, l.Level, l.Target, l.Message)
			if len(l.Fields) > 0 {
				keys := make([]string, 0, len(l.Fields))
				for k := range l.Fields {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				parts := make([]string, 0, len(keys))
				for _, k := range keys {
					parts = append(parts, k+"="+l.Fields[k])
				}
				line += " " + strings.Join(parts, " ")
			}
			fmt.Fprintln(g.Stdout, line)
		}
		return nil
	})
}
