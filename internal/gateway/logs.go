package gateway

import (
	"context"
	"regexp"
	"strconv"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/openclaw/occ/internal/gateway/openshellv1"
)

// MaxLogLines is the most lines one GetSandboxLogs call may ask for: the gateway keeps 2000
// lines per sandbox in memory.
const MaxLogLines = 2000

// Rules quoted from the reference implementation, so users see the same sentences.
const (
	logLinesRule = "OpenShell log line count must be 1 to 2000."
	logSinceRule = "OpenShell log since time must be an RFC 3339 UTC time."
)

// rfc3339UTC is RFC 3339 restricted to UTC ("Z") with up to nine fractional digits: an offset
// would be converted silently, and more digits would be truncated silently.
var rfc3339UTC = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z$`)

// ParseLogSinceTime parses a since-time for GetSandboxLogs.
func ParseLogSinceTime(s string) (time.Time, error) {
	if !rfc3339UTC.MatchString(s) {
		return time.Time{}, &ArgumentError{Method: "GetSandboxLogs", Field: "since time", Value: s, Rule: logSinceRule}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, &ArgumentError{Method: "GetSandboxLogs", Field: "since time", Value: s, Rule: logSinceRule}
	}
	return t, nil
}

// LogsRequest selects sandbox log lines.
type LogsRequest struct {
	Workspace string
	Sandbox   string
	// Lines is 1..2000.
	Lines int
	// Since is an RFC 3339 UTC time ("2026-01-02T03:04:05.123456789Z"); empty means no filter.
	Since string
	// Sources limits the sources ("gateway", "sandbox"); empty means all.
	Sources []string
	// MinLevel is for example INFO, WARN or ERROR; empty means all.
	MinLevel string
}

// GetSandboxLogs reads up to Lines log lines of a sandbox, oldest first. An absent sandbox
// (or a caller who is not a workspace member; the gateway does not distinguish) matches
// ErrNotFound. A response with more lines than asked for breaks the contract and is refused.
func (c *Client) GetSandboxLogs(ctx context.Context, r LogsRequest) (*Logs, error) {
	const method = "GetSandboxLogs"
	if r.Lines < 1 || r.Lines > MaxLogLines {
		return nil, &ArgumentError{Method: method, Field: "lines", Value: strconv.Itoa(r.Lines), Rule: logLinesRule}
	}
	var since *timestamppb.Timestamp
	if r.Since != "" {
		t, err := ParseLogSinceTime(r.Since)
		if err != nil {
			return nil, err
		}
		since = timestamppb.New(t)
	}
	if err := checkName(method, "workspace", r.Workspace); err != nil {
		return nil, err
	}
	if err := checkName(method, "sandbox", r.Sandbox); err != nil {
		return nil, err
	}
	req := &openshellv1.GetSandboxLogsRequest{
		Sandbox:        r.Sandbox,
		Lines:          uint32(r.Lines),
		Sources:        r.Sources,
		MinLevel:       r.MinLevel,
		WorkspaceScope: selector(r.Workspace),
		SinceTime:      since,
	}
	resp, _, err := invoke(ctx, c, method, req, callOptions{}, c.rpc.GetSandboxLogs)
	if err != nil {
		return nil, err
	}
	if len(resp.GetLogs()) > r.Lines {
		return nil, &ResponseError{Method: method, Problem: "OpenShell GetSandboxLogs returned too many lines (" +
			strconv.Itoa(len(resp.GetLogs())) + " for " + strconv.Itoa(r.Lines) + " requested)"}
	}
	out := &Logs{Lines: make([]LogLine, 0, len(resp.GetLogs())), BufferTotal: resp.GetBufferTotal()}
	for _, l := range resp.GetLogs() {
		out.Lines = append(out.Lines, logLineFromWire(l))
	}
	return out, nil
}
