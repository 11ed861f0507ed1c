package openshell

import (
	"context"
	"fmt"
	"time"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/gateway"
)

// ReadSandboxLogs implements driver.LogReader. It calls only GetSandboxLogs, through a view of
// the client that has no other method. NOT_FOUND (the Sandbox is absent, or the gateway identity
// is not a member of its Workspace; the gateway does not tell them apart) is
// RUNTIME_LOGS_SANDBOX_NOT_FOUND; a refused identity is RUNTIME_LOGS_FORBIDDEN_BY_CLUSTER.
func (d *Driver) ReadSandboxLogs(ctx context.Context, nctx driver.NamespaceContext, rev driver.Revision, opts driver.LogOptions) (*driver.SandboxLogs, error) {
	if !d.operator() {
		return nil, plain("OpenShell managed workspace mode is not implemented; cannot read Sandbox logs.", nil)
	}
	if rev.NamespaceID != nctx.Namespace.ID || rev.SandboxDriverID != d.id {
		return nil, plain("Refusing to read a Sandbox outside its selected AgentRevision and Namespace.",
			errorf("revision %s has Namespace %q and sandboxDriverId %q; expected %q and %q", rev.ID, rev.NamespaceID, rev.SandboxDriverID, nctx.Namespace.ID, d.id))
	}
	if opts.Lines < 1 || opts.Lines > gateway.MaxLogLines {
		return nil, plain("OpenShell log line count must be 1 to 2000.", errorf("got %d", opts.Lines))
	}
	ws, err := WorkspaceName(nctx.Namespace.Name)
	if err != nil {
		return nil, err
	}
	name, err := SandboxName(d.cfg.EffectiveSandboxNamePrefix(), rev.ID)
	if err != nil {
		return nil, err
	}
	if err := d.requireGateway("readSandboxLogs"); err != nil {
		return nil, err
	}
	var logs sandboxLogReader = d.gw
	req := gateway.LogsRequest{Workspace: ws, Sandbox: name, Lines: opts.Lines}
	if !opts.Since.IsZero() {
		req.Since = opts.Since.UTC().Format(time.RFC3339Nano)
	}
	res, err := logs.GetSandboxLogs(ctx, req)
	switch {
	case gateway.IsNotFound(err):
		return nil, &driver.Error{Code: driver.CodeRuntimeLogsSandboxNotFound,
			Message: fmt.Sprintf("OpenShell Sandbox %s of revision %s was not found, or the gateway identity is not a member of Workspace %s.", name, rev.ID, ws), Err: err}
	case gateway.IsPermissionDenied(err):
		return nil, &driver.Error{Code: driver.CodeRuntimeLogsForbiddenByCluster,
			Message: "OpenShell refused the gateway identity for Sandbox logs; it needs the sandbox:read scope and the Workspace role user.", Err: err}
	case err != nil:
		return nil, gatewayError("GetSandboxLogs", err)
	}
	out := &driver.SandboxLogs{Sandbox: name, ObservedAt: time.Now().UTC(), BufferTotal: int(res.BufferTotal), Lines: make([]driver.LogLine, 0, len(res.Lines))}
	for _, l := range res.Lines {
		line := driver.LogLine{SandboxID: l.SandboxID, Level: l.Level, Target: l.Target, Message: l.Message, Source: l.Source, Fields: l.Fields}
		if !l.Time.IsZero() {
			t := l.Time.UTC()
			line.Time = &t
		}
		out.Lines = append(out.Lines, line)
	}
	return out, nil
}
