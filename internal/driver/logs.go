package driver

import (
	"context"
	"time"
)

// LogReader is the optional interface of a driver that can read its Harness's runtime logs.
type LogReader interface {
	ReadSandboxLogs(ctx context.Context, nctx NamespaceContext, rev Revision, opts LogOptions) (*SandboxLogs, error)
}

// LogOptions bounds a log read.
type LogOptions struct {
	// Lines is the maximum number of lines, 1 to 2000.
	Lines int
	// Since, when non-zero, returns only lines at or after this instant.
	Since time.Time
}

// SandboxLogs is one read of a Sandbox's log buffer.
type SandboxLogs struct {
	Sandbox     string    `json:"sandbox"`
	ObservedAt  time.Time `json:"observedAt"`
	Lines       []LogLine `json:"lines"`
	BufferTotal int       `json:"bufferTotal"`
}

// LogLine is one structured log line.
type LogLine struct {
	SandboxID string            `json:"sandboxId"`
	Time      *time.Time        `json:"time"`
	Level     string            `json:"level"`
	Target    string            `json:"target"`
	Message   string            `json:"message"`
	Source    string            `json:"source"`
	Fields    map[string]string `json:"fields,omitempty"`
}
