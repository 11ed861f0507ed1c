package gateway

import (
	"context"
	"fmt"

	"github.com/openclaw/occ/internal/gateway/openshellv1"
)

// Provider profiles live in a workspace, or at platform scope when workspace is "". The
// profile content is the generated message because the driver builds it field by field.

// GetProviderProfile reads a provider profile; an absent one matches ErrNotFound. Its
// ResourceVersion is the fence for UpdateProviderProfile.
func (c *Client) GetProviderProfile(ctx context.Context, workspace, id string) (*openshellv1.ProviderProfile, error) {
	const method = "GetProviderProfile"
	if err := checkProfileScope(method, workspace, id); err != nil {
		return nil, err
	}
	req := &openshellv1.GetProviderProfileRequest{Id: id, WorkspaceScope: optionalSelector(workspace)}
	resp, _, err := invoke(ctx, c, method, req, callOptions{}, c.rpc.GetProviderProfile)
	if err != nil {
		return nil, err
	}
	p := resp.GetProfile()
	if p == nil {
		return nil, &ResponseError{Method: method, Problem: "no profile in the response"}
	}
	if p.GetId() != id {
		return nil, &ResponseError{Method: method, Problem: fmt.Sprintf("profile id %q differs from the requested %q", p.GetId(), id)}
	}
	return p, nil
}

func checkProfileScope(method, workspace, id string) error {
	if workspace != "" {
		if err := checkName(method, "workspace", workspace); err != nil {
			return err
		}
	}
	return checkObjectName(method, "profile id", id)
}

// ImportProviderProfiles imports profiles with a fresh request_id. source labels them (the
// reference client sends "openclaw-enterprise"). The import must report imported=true and no
// diagnostic of severity "error", else the error is a *ProfileDiagnosticsError.
func (c *Client) ImportProviderProfiles(ctx context.Context, workspace, source string, profiles ...*openshellv1.ProviderProfile) (*ProfileResult, error) {
	const method = "ImportProviderProfiles"
	if len(profiles) == 0 {
		return nil, &ArgumentError{Method: method, Field: "profiles", Value: "", Rule: "needs at least one profile"}
	}
	items := make([]*openshellv1.ProviderProfileImportItem, 0, len(profiles))
	for _, p := range profiles {
		if err := checkProfileScope(method, workspace, p.GetId()); err != nil {
			return nil, err
		}
		items = append(items, &openshellv1.ProviderProfileImportItem{Profile: p, Source: source})
	}
	req := &openshellv1.ImportProviderProfilesRequest{Profiles: items, WorkspaceScope: optionalSelector(workspace), RequestId: NewRequestID()}
	resp, _, err := invoke(ctx, c, method, req, callOptions{}, c.rpc.ImportProviderProfiles)
	if err != nil {
		return nil, err
	}
	res := &ProfileResult{Profiles: resp.GetProfiles(), Diagnostics: diagnosticsFromWire(resp.GetDiagnostics())}
	if !resp.GetImported() || hasErrorDiagnostic(res.Diagnostics) {
		return nil, &ProfileDiagnosticsError{Method: method, Applied: resp.GetImported(), Diagnostics: res.Diagnostics}
	}
	return res, nil
}

// ProfileUpdate replaces one profile, fenced by its resource version.
type ProfileUpdate struct {
	Workspace string
	ID        string
	Source    string
	Profile   *openshellv1.ProviderProfile
	// ExpectedResourceVersion is the version read with GetProviderProfile.
	ExpectedResourceVersion uint64
}

// UpdateProviderProfile replaces a profile with a fresh request_id. It must report
// updated=true and no error diagnostic; a stale fence matches ErrVersionConflict.
func (c *Client) UpdateProviderProfile(ctx context.Context, u ProfileUpdate) (*ProfileResult, error) {
	const method = "UpdateProviderProfiles"
	if err := checkProfileScope(method, u.Workspace, u.ID); err != nil {
		return nil, err
	}
	if u.Profile == nil || u.Profile.GetId() != u.ID {
		return nil, &ArgumentError{Method: method, Field: "profile id", Value: u.Profile.GetId(), Rule: "must equal the id being updated, " + u.ID}
	}
	if u.ExpectedResourceVersion == 0 {
		return nil, &ArgumentError{Method: method, Field: "expected resource version", Value: "0",
			Rule: "must be the positive resource_version read with GetProviderProfile; an unfenced replace could undo a concurrent change"}
	}
	req := &openshellv1.UpdateProviderProfilesRequest{
		Profile:                 &openshellv1.ProviderProfileImportItem{Profile: u.Profile, Source: u.Source},
		ExpectedResourceVersion: u.ExpectedResourceVersion,
		Id:                      u.ID,
		WorkspaceScope:          optionalSelector(u.Workspace),
		RequestId:               NewRequestID(),
	}
	resp, _, err := invoke(ctx, c, method, req, callOptions{}, c.rpc.UpdateProviderProfiles)
	if err != nil {
		return nil, err
	}
	res := &ProfileResult{Diagnostics: diagnosticsFromWire(resp.GetDiagnostics())}
	if resp.GetProfile() != nil {
		res.Profiles = []*openshellv1.ProviderProfile{resp.GetProfile()}
	}
	if !resp.GetUpdated() || hasErrorDiagnostic(res.Diagnostics) {
		return nil, &ProfileDiagnosticsError{Method: method, Applied: resp.GetUpdated(), Diagnostics: res.Diagnostics}
	}
	return res, nil
}

// DeleteProviderProfile deletes a profile with allow_missing and a fresh request_id.
// COMPLETED, ALREADY_ABSENT and NOT_FOUND are success; any other outcome is an *OutcomeError.
func (c *Client) DeleteProviderProfile(ctx context.Context, workspace, id string) (DeletionOutcome, error) {
	const method = "DeleteProviderProfile"
	if err := checkProfileScope(method, workspace, id); err != nil {
		return 0, err
	}
	req := &openshellv1.DeleteProviderProfileRequest{Id: id, WorkspaceScope: optionalSelector(workspace), AllowMissing: true, RequestId: NewRequestID()}
	resp, _, err := invoke(ctx, c, method, req, callOptions{}, c.rpc.DeleteProviderProfile)
	if IsNotFound(err) {
		return OutcomeAlreadyAbsent, nil
	}
	if err != nil {
		return 0, err
	}
	return confirmDeletion(method, id, resp.GetOutcome())
}

func hasErrorDiagnostic(ds []ProfileDiagnostic) bool {
	for _, d := range ds {
		if d.Severity == "error" {
			return true
		}
	}
	return false
}
