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

const (
	flagTail      = "tail"
	flagLines     = "lines"
	flagSince     = "since"
	flagSinceTime = "since-time"
	defaultTail   = 200
)

func init() { sandboxSubcommands = append(sandboxSubcommands, newSandboxLogsCommand) }

func newSandboxLogsCommand(g *Globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "logs",
		Short: "Read a revision's Harness logs from the gateway",
		Long: `Read the revision's Sandbox log buffer through the driver, which calls only GetSandboxLogs.
The flags read as kubectl logs': --tail bounds the count (1 to 2000, the gateway's buffer);
--since keeps the lines of the last DURATION (5m, 2h); --since-time keeps lines at or after an
RFC 3339 UTC time (2026-01-02T03:04:05Z). An absent Sandbox reports
RUNTIME_LOGS_SANDBOX_NOT_FOUND.

Only the gateway is contacted: no kubeconfig is needed, so a port-forward to the gateway
(--gateway) is enough.`,
		Example: `  # The last 200 lines of a revision's Harness
  occ sandbox logs --installation installation.yaml --revision revision.yaml

  # The last 50 lines of the past ten minutes, through a port-forward to the gateway
  occ sandbox logs --installation installation.yaml --revision revision.yaml \
    --gateway 127.0.0.1:30051 --tail 50 --since 10m

  # Everything since a point in time, as JSON
  occ sandbox logs --installation installation.yaml --revision revision.yaml \
    --since-time 2026-01-02T03:04:05Z -o json`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error { return runSandboxLogs(g, cmd) },
	}
	addInstallationFlag(cmd)
	addGatewayFlag(cmd)
	addRevisionFlag(cmd, "revision file whose Harness logs to read (required)")
	f := cmd.Flags()
	f.Int(flagTail, defaultTail, "how many of the latest lines to read, 1 to 2000")
	f.Int(flagLines, defaultTail, "how many lines to read")
	_ = f.MarkDeprecated(flagLines, "use --tail")
	f.String(flagSince, "", "only lines newer than this duration, for example 5m or 2h")
	f.String(flagSinceTime, "", "only lines at or after this RFC 3339 UTC time, for example 2026-01-02T03:04:05Z")
	return cmd
}

// logOptions turns the kubectl-style flags into the driver's options. now anchors --since.
func logOptions(g *Globals, cmd *cobra.Command, now time.Time) (driver.LogOptions, error) {
	flag := flagTail
	if cmd.Flags().Changed(flagLines) {
		if cmd.Flags().Changed(flagTail) {
			return driver.LogOptions{}, usageErrorf("give --tail only; --lines is its deprecated name")
		}
		flag = flagLines
	}
	lines, s, err := g.intSetting(cmd, flag, 1, gateway.MaxLogLines)
	opts := driver.LogOptions{Lines: lines}
	if err != nil {
		return opts, s.bad("is not a whole number from 1 to 2000: OpenShell log line count must be 1 to 2000.")
	}
	since, sinceTime := g.v.GetString(flagSince), g.v.GetString(flagSinceTime)
	switch {
	case since != "" && sinceTime != "":
		return opts, usageErrorf("give at most one of --since and --since-time (a duration, or a point in time)")
	case since != "":
		d, err := time.ParseDuration(since)
		if err != nil {
			return opts, usageErrorf("--since %q is not a duration (for example 5m or 2h); for a point in time use --since-time", since)
		}
		if d <= 0 {
			return opts, usageErrorf("--since %q must be a positive duration (for example 5m)", since)
		}
		opts.Since = now.Add(-d).UTC()
	case sinceTime != "":
		t, err := gateway.ParseLogSinceTime(sinceTime)
		if err != nil {
			return opts, usageErrorf("--since-time %q: OpenShell log since time must be an RFC 3339 UTC time. (for example 2026-01-02T03:04:05Z)", sinceTime)
		}
		opts.Since = t
	}
	return opts, nil
}

func runSandboxLogs(g *Globals, cmd *cobra.Command) error {
	opts, rf, err := sessionForRevision(g)
	if err != nil {
		return err
	}
	lopts, err := logOptions(g, cmd, time.Now())
	if err != nil {
		return err
	}
	s, err := sandbox.OpenGateway(cmd.Context(), opts)
	if err != nil {
		return err
	}
	defer s.Close()
	logs, err := s.ReadLogs(cmd.Context(), rf, lopts)
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
