package gateway

import (
	"context"

	"github.com/openclaw/occ/internal/gateway/openshellv1"
)

// Health asks the gateway for its status. A reachable gateway that reports anything other than
// SERVICE_STATUS_HEALTHY is not an error here; the caller decides with Health.Healthy.
func (c *Client) Health(ctx context.Context) (*Health, error) {
	resp, _, err := invoke(ctx, c, "Health", &openshellv1.HealthRequest{}, callOptions{}, c.rpc.Health)
	if err != nil {
		return nil, err
	}
	return &Health{Status: resp.GetStatus(), Version: resp.GetVersion()}, nil
}

// GetWorkspace reads a workspace. An absent workspace is an error matching ErrNotFound.
func (c *Client) GetWorkspace(ctx context.Context, name string) (*Workspace, error) {
	const method = "GetWorkspace"
	if err := checkName(method, "name", name); err != nil {
		return nil, err
	}
	resp, _, err := invoke(ctx, c, method, &openshellv1.GetWorkspaceRequest{Name: name}, callOptions{}, c.rpc.GetWorkspace)
	if err != nil {
		return nil, err
	}
	if resp.GetWorkspace() == nil {
		return nil, &ResponseError{Method: method, Problem: "no workspace in the response"}
	}
	ws := workspaceFromWire(resp.GetWorkspace())
	if ws.Name != name {
		return nil, &ResponseError{Method: method, Problem: "workspace name " + ws.Name + " differs from the requested " + name}
	}
	return ws, nil
}

// CreateWorkspace creates a workspace with one fresh request_id, kept across the call's
// retries: if a response is lost after the gateway committed, the retry is answered by the
// replay of that success and no second workspace is attempted. A taken name is an error
// matching ErrAlreadyExists; the caller reads the workspace and verifies its ownership.
func (c *Client) CreateWorkspace(ctx context.Context, name string, labels map[string]string) (*Workspace, error) {
	const method = "CreateWorkspace"
	if err := checkName(method, "name", name); err != nil {
		return nil, err
	}
	req := &openshellv1.CreateWorkspaceRequest{Name: name, Labels: labels, RequestId: NewRequestID()}
	resp, _, err := invoke(ctx, c, method, req, callOptions{}, c.rpc.CreateWorkspace)
	if err != nil {
		return nil, err
	}
	if resp.GetWorkspace() == nil {
		return nil, &ResponseError{Method: method, Problem: "no workspace in the response"}
	}
	ws := workspaceFromWire(resp.GetWorkspace())
	if ws.Name != name {
		return nil, &ResponseError{Method: method, Problem: "workspace name " + ws.Name + " differs from the requested " + name}
	}
	return ws, nil
}

// DeleteWorkspace deletes a workspace with allow_missing and a fresh request_id. COMPLETED and
// ALREADY_ABSENT (and NOT_FOUND) are success; ACCEPTED or an unspecified outcome is an
// *OutcomeError, because the workspace is not confirmed gone. A workspace that still holds
// sandboxes or providers is refused with FAILED_PRECONDITION (ErrFailedPrecondition).
func (c *Client) DeleteWorkspace(ctx context.Context, name string) (DeletionOutcome, error) {
	const method = "DeleteWorkspace"
	if err := checkName(method, "name", name); err != nil {
		return 0, err
	}
	req := &openshellv1.DeleteWorkspaceRequest{Name: name, AllowMissing: true, RequestId: NewRequestID()}
	resp, _, err := invoke(ctx, c, method, req, callOptions{}, c.rpc.DeleteWorkspace)
	if IsNotFound(err) {
		return OutcomeAlreadyAbsent, nil
	}
	if err != nil {
		return 0, err
	}
	return confirmDeletion(method, name, resp.GetOutcome())
}

// confirmDeletion accepts only outcomes that say the object is gone.
func confirmDeletion(method, name string, outcome DeletionOutcome) (DeletionOutcome, error) {
	switch outcome {
	case OutcomeCompleted, OutcomeAlreadyAbsent:
		return outcome, nil
	}
	return outcome, &OutcomeError{Method: method, Name: name, Outcome: outcome}
}
