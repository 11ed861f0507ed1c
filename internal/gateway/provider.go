package gateway

import (
	"context"
	"fmt"

	"github.com/openclaw/occ/internal/gateway/openshellv1"
)

// listProvidersPageSize is the page size the reference client uses.
const listProvidersPageSize = 100

// maxListProvidersPages stops a gateway that keeps returning a next_page_token from looping
// the client forever (100 pages of 100 is far beyond any workspace's providers).
const maxListProvidersPages = 100

// CreateProvider creates a provider in a workspace with a fresh request_id (kept across the
// call's retries). A taken name matches ErrAlreadyExists; the caller reads the provider and
// verifies its ownership and content. Credential values are sent to the gateway (that is the
// provider's purpose) but never appear in this package's errors or logs.
func (c *Client) CreateProvider(ctx context.Context, workspace string, spec ProviderSpec) (*Provider, error) {
	const method = "CreateProvider"
	if err := checkName(method, "workspace", workspace); err != nil {
		return nil, err
	}
	if err := checkObjectName(method, "name", spec.Name); err != nil {
		return nil, err
	}
	if spec.Type == "" || len(spec.Type) > 64 {
		return nil, &ArgumentError{Method: method, Field: "type", Value: spec.Type, Rule: "must be a provider profile id of 1 to 64 characters"}
	}
	req := &openshellv1.CreateProviderRequest{
		Provider:       providerSpecToWire(spec),
		WorkspaceScope: selector(workspace),
		RequestId:      NewRequestID(),
	}
	resp, _, err := invoke(ctx, c, method, req, callOptions{secrets: spec.Credentials.values()}, c.rpc.CreateProvider)
	if err != nil {
		return nil, err
	}
	return checkProviderResponse(method, resp, spec.Name)
}

func checkProviderResponse(method string, resp *openshellv1.ProviderResponse, name string) (*Provider, error) {
	if resp.GetProvider() == nil {
		return nil, &ResponseError{Method: method, Problem: "no provider in the response"}
	}
	p := providerFromWire(resp.GetProvider(), resp.GetMutationId())
	if p.Name != name {
		return nil, &ResponseError{Method: method, Problem: fmt.Sprintf("provider name %q differs from the requested %q", p.Name, name)}
	}
	return p, nil
}

// GetProvider reads a provider; an absent one matches ErrNotFound.
func (c *Client) GetProvider(ctx context.Context, workspace, name string) (*Provider, error) {
	const method = "GetProvider"
	if err := checkName(method, "workspace", workspace); err != nil {
		return nil, err
	}
	if err := checkObjectName(method, "name", name); err != nil {
		return nil, err
	}
	req := &openshellv1.GetProviderRequest{Name: name, WorkspaceScope: selector(workspace)}
	resp, _, err := invoke(ctx, c, method, req, callOptions{}, c.rpc.GetProvider)
	if err != nil {
		return nil, err
	}
	return checkProviderResponse(method, resp, name)
}

// ListProviders returns every provider of a workspace, following next_page_token.
func (c *Client) ListProviders(ctx context.Context, workspace string) ([]*Provider, error) {
	const method = "ListProviders"
	if err := checkName(method, "workspace", workspace); err != nil {
		return nil, err
	}
	var out []*Provider
	token := ""
	for range maxListProvidersPages {
		req := &openshellv1.ListProvidersRequest{PageSize: listProvidersPageSize, PageToken: token, WorkspaceScope: selector(workspace)}
		resp, _, err := invoke(ctx, c, method, req, callOptions{}, c.rpc.ListProviders)
		if err != nil {
			return nil, err
		}
		for _, p := range resp.GetProviders() {
			out = append(out, providerFromWire(p, ""))
		}
		if resp.GetNextPageToken() == "" {
			return out, nil
		}
		if resp.GetNextPageToken() == token {
			return nil, &ResponseError{Method: method, Problem: "next_page_token repeats the page just read"}
		}
		token = resp.GetNextPageToken()
	}
	return nil, &ResponseError{Method: method, Problem: fmt.Sprintf("more than %d pages", maxListProvidersPages)}
}

// UpdateProvider merges credentials and config into a provider with a fresh request_id. A
// positive ExpectedResourceVersion fences the update; a stale fence matches
// ErrVersionConflict. Empty credential values are refused because the gateway would silently
// keep the old credential.
func (c *Client) UpdateProvider(ctx context.Context, workspace string, u ProviderUpdate) (*Provider, error) {
	const method = "UpdateProvider"
	if err := checkName(method, "workspace", workspace); err != nil {
		return nil, err
	}
	if err := checkObjectName(method, "name", u.Name); err != nil {
		return nil, err
	}
	for k, v := range u.Credentials {
		if v == "" {
			return nil, &ArgumentError{Method: method, Field: "credential", Value: k,
				Rule: "has an empty value, which the gateway ignores (it keeps the old credential); give the new value"}
		}
	}
	req := &openshellv1.UpdateProviderRequest{
		Provider: &openshellv1.Provider{
			Metadata:    &openshellv1.ObjectMeta{Name: u.Name, ResourceVersion: u.ExpectedResourceVersion},
			Credentials: u.Credentials,
			Config:      u.Config,
		},
		WorkspaceScope:                selector(workspace),
		RequestId:                     NewRequestID(),
		CredentialExpirationTimes:     timestamps(u.CredentialExpirationTimes),
		ClearCredentialExpirationKeys: u.ClearCredentialExpirationKeys,
	}
	resp, _, err := invoke(ctx, c, method, req, callOptions{secrets: u.Credentials.values()}, c.rpc.UpdateProvider)
	if err != nil {
		return nil, err
	}
	return checkProviderResponse(method, resp, u.Name)
}

// DeleteProvider deletes a provider with allow_missing and a fresh request_id. COMPLETED,
// ALREADY_ABSENT and NOT_FOUND are success; any other outcome is an *OutcomeError.
func (c *Client) DeleteProvider(ctx context.Context, workspace, name string) (DeletionOutcome, error) {
	const method = "DeleteProvider"
	if err := checkName(method, "workspace", workspace); err != nil {
		return 0, err
	}
	if err := checkObjectName(method, "name", name); err != nil {
		return 0, err
	}
	req := &openshellv1.DeleteProviderRequest{Name: name, WorkspaceScope: selector(workspace), AllowMissing: true, RequestId: NewRequestID()}
	resp, _, err := invoke(ctx, c, method, req, callOptions{}, c.rpc.DeleteProvider)
	if IsNotFound(err) {
		return OutcomeAlreadyAbsent, nil
	}
	if err != nil {
		return 0, err
	}
	return confirmDeletion(method, name, resp.GetOutcome())
}

// ProviderStatusRequest selects a provider's readiness on a sandbox, by provider name (the
// gateway then records a new OBSERVE receipt) or by an earlier receipt id.
type ProviderStatusRequest struct {
	Workspace string
	Sandbox   string
	Provider  string
	ReceiptID string
}

// GetSandboxProviderStatus reads a provider's readiness on a sandbox. A response without a
// state is an error: the driver must never read "no answer" as ready or as revoked.
func (c *Client) GetSandboxProviderStatus(ctx context.Context, r ProviderStatusRequest) (*ProviderStatus, error) {
	const method = "GetSandboxProviderStatus"
	if err := checkName(method, "workspace", r.Workspace); err != nil {
		return nil, err
	}
	if err := checkName(method, "sandbox", r.Sandbox); err != nil {
		return nil, err
	}
	if r.Provider == "" && r.ReceiptID == "" {
		return nil, &ArgumentError{Method: method, Field: "provider", Value: "", Rule: "or a receipt id is required"}
	}
	if r.ReceiptID != "" && !ValidRequestID(r.ReceiptID) {
		return nil, &ArgumentError{Method: method, Field: "receipt id", Value: r.ReceiptID, Rule: "must be a canonical UUID from a provider mutation receipt"}
	}
	req := &openshellv1.GetSandboxProviderStatusRequest{
		Sandbox: r.Sandbox, Provider: r.Provider, ReceiptId: r.ReceiptID, WorkspaceScope: selector(r.Workspace),
	}
	resp, _, err := invoke(ctx, c, method, req, callOptions{}, c.rpc.GetSandboxProviderStatus)
	if err != nil {
		return nil, err
	}
	st := resp.GetStatus()
	if st == nil || st.GetState() == 0 {
		return nil, &ResponseError{Method: method, Problem: "no readiness state"}
	}
	return &ProviderStatus{
		Receipt:           receiptFromWire(st.GetReceipt()),
		State:             st.GetState(),
		Reason:            st.GetReason(),
		NetworkInstanceID: st.GetNetworkInstanceId(),
	}, nil
}

// DetachRequest names the provider to detach from a sandbox.
type DetachRequest struct {
	Workspace string
	Sandbox   string
	Provider  string
}

// DetachResult is a detach's answer. Detached is false when the provider was not attached.
// The detach is complete only when the receipt's status reaches REVOKED.
type DetachResult struct {
	Detached bool
	Receipt  *ProviderReceipt
}

// DetachSandboxProvider detaches a provider from a sandbox with a fresh request_id. NOT_FOUND
// (the sandbox is gone, so there is nothing to revoke) is returned as an error matching
// ErrNotFound for the caller to read as "absent".
func (c *Client) DetachSandboxProvider(ctx context.Context, r DetachRequest) (*DetachResult, error) {
	const method = "DetachSandboxProvider"
	if err := checkName(method, "workspace", r.Workspace); err != nil {
		return nil, err
	}
	if err := checkName(method, "sandbox", r.Sandbox); err != nil {
		return nil, err
	}
	if err := checkObjectName(method, "provider", r.Provider); err != nil {
		return nil, err
	}
	req := &openshellv1.DetachSandboxProviderRequest{
		Sandbox: r.Sandbox, Provider: r.Provider, WorkspaceScope: selector(r.Workspace), RequestId: NewRequestID(),
	}
	resp, _, err := invoke(ctx, c, method, req, callOptions{}, c.rpc.DetachSandboxProvider)
	if err != nil {
		return nil, err
	}
	res := &DetachResult{Detached: resp.GetDetached(), Receipt: receiptFromWire(resp.GetReceipt())}
	if res.Detached && (res.Receipt == nil || res.Receipt.ReceiptID == "") {
		return nil, &ResponseError{Method: method, Problem: "a detach without a receipt"}
	}
	return res, nil
}
