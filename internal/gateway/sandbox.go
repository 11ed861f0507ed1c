package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/openclaw/occ/internal/gateway/openshellv1"
)

// DeleteSandboxTimeout is DeleteSandbox's own bound. At the pinned gateway the call returns
// only after the Kubernetes driver watched the Pod go (a 30 s termination grace plus API calls
// of up to 30 s each), so the per-call deadline would cut a normal delete short.
const DeleteSandboxTimeout = 120 * time.Second

// deletePollInterval is how often DeleteSandbox re-reads a sandbox whose delete was ACCEPTED.
const deletePollInterval = 500 * time.Millisecond

// CreateSandboxRequest describes the sandbox to create.
type CreateSandboxRequest struct {
	Workspace   string
	Name        string
	Labels      map[string]string
	Annotations map[string]string
	Spec        *openshellv1.SandboxSpec
	// ServiceExposures are registered at create time; the answer must carry a URL for each.
	ServiceExposures []ServiceExposure
	// RevisionUUID seeds the request_ids (CreateSandboxRequestIDs); CreateSandbox needs it,
	// CreateSandboxOnce ignores it.
	RevisionUUID string
	// KnownAbsent tells CreateSandbox that the caller has just read the sandbox as absent
	// (GetSandbox NOT_FOUND), so its own first GetSandbox is skipped; a sandbox created in
	// between is still found through ALREADY_EXISTS and the re-read. CreateSandboxOnce
	// ignores it.
	KnownAbsent bool
}

// CreateSandboxResult is the sandbox CreateSandbox ended with.
type CreateSandboxResult struct {
	Sandbox *Sandbox
	// Created is true when this call's CreateSandbox was admitted (first run or a replay of
	// the same request_id); false when the sandbox already existed, in which case the caller
	// must verify its ownership and content and ServiceURLs is empty.
	Created bool
	// ServiceURLs are the advertised URLs by service name ("" for the unnamed one), as sent.
	ServiceURLs map[string]string
	// RequestID is the request_id that was admitted (Created only).
	RequestID string
	// Replayed is true when the gateway answered with a replay of an earlier success.
	Replayed bool
}

// GetSandbox reads a sandbox. An absent sandbox (or workspace) matches ErrNotFound.
func (c *Client) GetSandbox(ctx context.Context, workspace, name string) (*Sandbox, error) {
	const method = "GetSandbox"
	if err := checkName(method, "workspace", workspace); err != nil {
		return nil, err
	}
	if err := checkName(method, "name", name); err != nil {
		return nil, err
	}
	req := &openshellv1.GetSandboxRequest{Name: name, WorkspaceScope: selector(workspace)}
	resp, _, err := invoke(ctx, c, method, req, callOptions{}, c.rpc.GetSandbox)
	if err != nil {
		return nil, err
	}
	return checkSandboxResponse(method, resp, workspace, name)
}

func checkSandboxResponse(method string, resp *openshellv1.SandboxResponse, workspace, name string) (*Sandbox, error) {
	if resp.GetSandbox() == nil {
		return nil, &ResponseError{Method: method, Problem: "no sandbox in the response"}
	}
	sb := sandboxFromWire(resp.GetSandbox())
	if sb.Name != name {
		return nil, &ResponseError{Method: method, Problem: fmt.Sprintf("sandbox name %q differs from the requested %q", sb.Name, name)}
	}
	if sb.Workspace != "" && sb.Workspace != workspace {
		return nil, &ResponseError{Method: method, Problem: fmt.Sprintf("sandbox workspace %q differs from the requested %q", sb.Workspace, workspace)}
	}
	return sb, nil
}

// CreateSandboxOnce sends one CreateSandbox admission with the given request_id (retried
// only for transient failures, with the same id). Most callers want CreateSandbox, which
// chooses the ids and adopts an existing sandbox.
func (c *Client) CreateSandboxOnce(ctx context.Context, req CreateSandboxRequest, requestID string) (*CreateSandboxResult, error) {
	const method = "CreateSandbox"
	if err := checkCreateSandbox(req); err != nil {
		return nil, err
	}
	if !ValidRequestID(requestID) {
		return nil, &ArgumentError{Method: method, Field: "request_id", Value: requestID,
			Rule: "must be a nonzero hyphenated UUID (36 characters)"}
	}
	wire := &openshellv1.CreateSandboxRequest{
		Spec:             req.Spec,
		Name:             req.Name,
		Labels:           req.Labels,
		Annotations:      req.Annotations,
		WorkspaceScope:   selector(req.Workspace),
		RequestId:        requestID,
		ServiceExposures: exposuresToWire(req.ServiceExposures),
	}
	resp, res, err := invoke(ctx, c, method, wire, callOptions{replay: true}, c.rpc.CreateSandbox)
	if err != nil {
		return nil, err
	}
	sb, err := checkSandboxResponse(method, resp, req.Workspace, req.Name)
	if err != nil {
		return nil, err
	}
	urls := copyMap(resp.GetServiceUrls())
	// A replay may come back without service_urls (unconfirmed: the upstream replay carries
	// only the sandbox), so only a first-run answer is held to the exposure list; the caller
	// then checks GetService.
	if !res.replayed {
		for _, e := range req.ServiceExposures {
			if _, ok := urls[e.Service]; !ok {
				return nil, &ResponseError{Method: method, Problem: fmt.Sprintf("no service URL for the requested exposure %q", e.Service)}
			}
		}
	}
	return &CreateSandboxResult{Sandbox: sb, Created: true, ServiceURLs: urls, RequestID: requestID, Replayed: res.replayed}, nil
}

func checkCreateSandbox(req CreateSandboxRequest) error {
	const method = "CreateSandbox"
	if err := checkName(method, "workspace", req.Workspace); err != nil {
		return err
	}
	if err := checkName(method, "name", req.Name); err != nil {
		return err
	}
	if req.Spec == nil {
		return &ArgumentError{Method: method, Field: "spec", Value: "<nil>", Rule: "is required"}
	}
	for _, e := range req.ServiceExposures {
		if e.Service != "" {
			if err := checkName(method, "service exposure name", e.Service); err != nil {
				return err
			}
		}
		if e.TargetPort < 1 || e.TargetPort > 65535 {
			return &ArgumentError{Method: method, Field: "service exposure target port", Value: fmt.Sprint(e.TargetPort), Rule: "must be 1 to 65535"}
		}
		if e.AuthorizationMode == 0 {
			return &ArgumentError{Method: method, Field: "service exposure authorization mode", Value: e.AuthorizationMode.String(),
				Rule: "must be STRIP or BEARER_PASSTHROUGH: the gateway's default for UNSPECIFIED is unconfirmed"}
		}
	}
	return nil
}

// CreateSandbox makes sure the sandbox exists, creating it at most once per revision:
//
//  1. GetSandbox first (unless the caller just did, KnownAbsent): an existing sandbox is
//     returned with Created=false and never re-created (re-sending would hit the replay
//     checks with a possibly changed spec).
//  2. CreateSandbox with request_id = the revision UUID, then the derived ids of
//     CreateSandboxRequestIDs. A replay refusal means that id started no work, but its earlier
//     attempt may still create the sandbox, so the next id is tried only after GetSandbox
//     still finds nothing.
//  3. ALREADY_EXISTS (a concurrent creator won) re-reads the sandbox and returns it with
//     Created=false.
//
// Spending all ids is an error naming the last refusal and the fix.
func (c *Client) CreateSandbox(ctx context.Context, req CreateSandboxRequest) (*CreateSandboxResult, error) {
	const method = "CreateSandbox"
	if err := checkCreateSandbox(req); err != nil {
		return nil, err
	}
	ids, err := CreateSandboxRequestIDs(req.RevisionUUID)
	if err != nil {
		return nil, err
	}
	if !req.KnownAbsent {
		existing, err := c.getSandboxIfExists(ctx, req.Workspace, req.Name)
		if err != nil {
			return nil, err
		}
		if existing != nil {
			return &CreateSandboxResult{Sandbox: existing}, nil
		}
	}
	var refusal *Error
	for _, id := range ids {
		created, err := c.CreateSandboxOnce(ctx, req, id)
		var e *Error
		switch {
		case err == nil:
			return created, nil
		case IsAlreadyExists(err):
			sb, getErr := c.getSandboxIfExists(ctx, req.Workspace, req.Name)
			if getErr != nil {
				return nil, getErr
			}
			if sb == nil {
				return nil, fmt.Errorf("OpenShell Sandbox %s disappeared during creation: %w", req.Name, err)
			}
			return &CreateSandboxResult{Sandbox: sb}, nil
		case errors.As(err, &e) && e.ReplayRefused():
			refusal = e
			sb, getErr := c.getSandboxIfExists(ctx, req.Workspace, req.Name)
			if getErr != nil {
				return nil, getErr
			}
			if sb != nil {
				return &CreateSandboxResult{Sandbox: sb}, nil
			}
			c.log.LogAttrs(ctx, slog.LevelInfo, "OpenShell refused a create request_id; trying the next",
				slog.String("sandbox", req.Name), slog.String("reason", e.Reason), slog.String("request_id", id))
		default:
			return nil, err
		}
	}
	remedy := "deploy a new revision"
	if refusal.Reason == ReasonRequestReplayUnavailable {
		// The last refusal can also mean unreadable gateway key material, which a new
		// revision would not fix.
		remedy = "check that the gateway's JWT or TLS key material is readable, or deploy a new revision"
	}
	return nil, &CreateExhaustedError{Sandbox: req.Name, IDs: len(ids), Last: refusal, Remedy: remedy}
}

// CreateExhaustedError reports that the gateway refused every create request_id of a revision.
// It matches ErrReplayRefused.
type CreateExhaustedError struct {
	Sandbox string
	IDs     int
	Last    *Error
	Remedy  string
}

func (e *CreateExhaustedError) Error() string {
	return fmt.Sprintf("OpenShell refused all %d create request IDs for Sandbox %s (last: %s); %s.", e.IDs, e.Sandbox, e.Last.Message, e.Remedy)
}

func (e *CreateExhaustedError) Unwrap() error { return e.Last }

// getSandboxIfExists is GetSandbox with NOT_FOUND turned into (nil, nil).
func (c *Client) getSandboxIfExists(ctx context.Context, workspace, name string) (*Sandbox, error) {
	sb, err := c.GetSandbox(ctx, workspace, name)
	if IsNotFound(err) {
		return nil, nil
	}
	return sb, err
}

// DeleteSandboxResult is how a delete ended.
type DeleteSandboxResult struct {
	Outcome DeletionOutcome
	// SandboxID is the id of the sandbox the delete targeted (empty when it was absent).
	SandboxID string
}

// DeleteSandbox deletes a sandbox and returns once it is gone, within max(request timeout,
// DeleteSandboxTimeout). NOT_FOUND counts as success (ALREADY_ABSENT). When the outcome is
// ACCEPTED (or unspecified) the gateway record still exists while cleanup finishes, so the
// client polls GetSandbox every 500 ms until NOT_FOUND or until a different sandbox holds the
// name (a same-name replacement is not ours to wait for). Past the bound the error matches
// ErrUnavailable; the delete is idempotent and can simply be repeated.
//
// Only name and workspace are sent, like the reference client: allow_missing and request_id
// exist upstream but their field numbers are unconfirmed for v0.1.3, and NOT_FOUND already
// makes the delete safe to repeat.
func (c *Client) DeleteSandbox(ctx context.Context, workspace, name string) (*DeleteSandboxResult, error) {
	const method = "DeleteSandbox"
	if err := checkName(method, "workspace", workspace); err != nil {
		return nil, err
	}
	if err := checkName(method, "name", name); err != nil {
		return nil, err
	}
	bound := max(c.timeout, c.deleteBound)
	caller := ctx
	end := time.Now().Add(bound)
	ctx, cancel := context.WithTimeoutCause(ctx, bound, errDeleteBound)
	defer cancel()
	boundError := func(err error) error { return deleteBoundError(caller, ctx, end, name, bound, err) }
	req := &openshellv1.DeleteSandboxRequest{Name: name, WorkspaceScope: selector(workspace)}
	resp, _, err := invoke(ctx, c, method, req, callOptions{timeout: bound}, c.rpc.DeleteSandbox)
	if IsNotFound(err) {
		return &DeleteSandboxResult{Outcome: OutcomeAlreadyAbsent}, nil
	}
	if err != nil {
		return nil, boundError(err)
	}
	res := &DeleteSandboxResult{Outcome: resp.GetOutcome(), SandboxID: resp.GetSandboxId()}
	if res.Outcome == OutcomeCompleted || res.Outcome == OutcomeAlreadyAbsent {
		return res, nil
	}
	for {
		sb, err := c.GetSandbox(ctx, workspace, name)
		if IsNotFound(err) {
			return res, nil
		}
		if err != nil {
			return nil, boundError(err)
		}
		if res.SandboxID != "" && sb.ID != res.SandboxID {
			return res, nil
		}
		c.log.LogAttrs(ctx, slog.LevelDebug, "waiting for OpenShell sandbox deletion",
			slog.String("sandbox", name), slog.String("phase", sb.Phase.String()))
		if err := sleep(ctx, deletePollInterval); err != nil {
			return nil, boundError(err)
		}
	}
}

var errDeleteBound = errors.New("sandbox deletion bound reached")

// deleteBoundError reports an expired DeleteSandbox bound (ctx, ending at end) as the dependency
// being unavailable, and passes the caller's own cancellation and other errors through.
//
// The clock decides as well as ctx: a call can fail on the bound's deadline before the bound's
// timer has fired and set its cause (gRPC compares the deadline with the clock itself before it
// sends a request, and a busy machine runs the timer late). Past end, the error is the bound's
// unless the caller's own context ended, or its deadline came no later than end.
func deleteBoundError(caller, ctx context.Context, end time.Time, name string, bound time.Duration, err error) error {
	reached := errors.Is(context.Cause(ctx), errDeleteBound)
	if !reached && caller.Err() == nil && !time.Now().Before(end) {
		dl, ok := caller.Deadline()
		reached = !ok || dl.After(end)
	}
	if reached {
		return &DeleteTimeoutError{Sandbox: name, Bound: bound, Last: err}
	}
	return err
}

// DeleteTimeoutError reports a sandbox that was not gone within DeleteSandbox's bound. It
// matches ErrUnavailable: repeating the delete is safe.
type DeleteTimeoutError struct {
	Sandbox string
	Bound   time.Duration
	Last    error
}

func (e *DeleteTimeoutError) Error() string {
	return fmt.Sprintf("OpenShell DeleteSandbox %s: the sandbox was not gone within %s (last: %v); retry the delete", e.Sandbox, e.Bound, e.Last)
}

func (e *DeleteTimeoutError) Is(target error) bool { return target == ErrUnavailable }

func (e *DeleteTimeoutError) Unwrap() error { return e.Last }
