package emulator

import (
	"context"

	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
)

// DiagnosticError is the severity of a profile diagnostic that fails an import or update.
const DiagnosticError = "error"

// profileScope resolves the scope of a profile call: no workspace means the platform scope
// ("" here), where only a platform admin may write.
func (s *Server) profileScope(sel *pb.WorkspaceSelector) (string, error) {
	if sel == nil || sel.GetSelection() == nil {
		return "", nil
	}
	name, err := scopeWorkspace("workspace_scope", sel)
	if err != nil {
		return "", err
	}
	if _, err := s.st.existingWorkspace(name); err != nil {
		return "", err
	}
	return name, nil
}

func (g *gateway) GetProviderProfile(_ context.Context, req *pb.GetProviderProfileRequest) (*pb.ProviderProfileResponse, error) {
	s := g.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.GetId() == "" {
		return nil, invalidArgument("id", "provider profile id is required")
	}
	scope, err := s.profileScope(req.GetWorkspaceScope())
	if err != nil {
		return nil, err
	}
	p := s.st.profiles[profileKey{scope: scope, id: req.GetId()}]
	if p == nil {
		return nil, notFound("provider profile not found")
	}
	return &pb.ProviderProfileResponse{Profile: clone(p)}, nil
}

// profileDiagnostics checks one profile the way an import does; errors are reported as
// diagnostics with severity "error", not as a failed RPC.
func profileDiagnostics(source string, p *pb.ProviderProfile, field string) []*pb.ProviderProfileDiagnostic {
	diag := func(f, msg string) *pb.ProviderProfileDiagnostic {
		return &pb.ProviderProfileDiagnostic{Source: source, ProfileId: p.GetId(), Field: field + f, Message: msg, Severity: DiagnosticError}
	}
	var out []*pb.ProviderProfileDiagnostic
	if p == nil {
		return []*pb.ProviderProfileDiagnostic{{Source: source, Field: field, Message: "profile is required", Severity: DiagnosticError}}
	}
	if p.GetId() == "" {
		out = append(out, diag(".id", "profile id is required"))
	} else if len(p.GetId()) > maxProviderType {
		out = append(out, diag(".id", "profile id exceeds maximum length"))
	}
	seen := map[string]bool{}
	for _, c := range p.GetCredentials() {
		if c.GetName() == "" {
			out = append(out, diag(".credentials", "credential name is required"))
		} else if seen[c.GetName()] {
			out = append(out, diag(".credentials", "credential "+c.GetName()+" is declared twice"))
		}
		seen[c.GetName()] = true
	}
	return out
}

func (g *gateway) ImportProviderProfiles(ctx context.Context, req *pb.ImportProviderProfilesRequest) (*pb.ImportProviderProfilesResponse, error) {
	s := g.s
	s.mu.Lock()
	defer s.mu.Unlock()
	rid, err := normalizeRequestID("request_id", req.GetRequestId())
	if err != nil {
		return nil, err
	}
	scope, err := s.profileScope(req.GetWorkspaceScope())
	if err != nil {
		return nil, err
	}
	return admit(ctx, s, mutation[*pb.ImportProviderProfilesResponse]{
		method: "ImportProviderProfiles", scope: scope, requestID: rid, request: req, protected: true,
		run: func() (*pb.ImportProviderProfilesResponse, replayTarget, error) {
			if len(req.GetProfiles()) == 0 {
				return nil, replayTarget{}, invalidArgument("profiles", "at least one profile is required")
			}
			resp := &pb.ImportProviderProfilesResponse{}
			batch := map[string]bool{}
			for i, item := range req.GetProfiles() {
				field := "profiles[" + itoa(i) + "].profile"
				p := item.GetProfile()
				resp.Diagnostics = append(resp.Diagnostics, profileDiagnostics(item.GetSource(), p, field)...)
				if p.GetId() == "" {
					continue
				}
				if batch[p.GetId()] || s.st.profiles[profileKey{scope: scope, id: p.GetId()}] != nil {
					resp.Diagnostics = append(resp.Diagnostics, &pb.ProviderProfileDiagnostic{Source: item.GetSource(), ProfileId: p.GetId(), Field: field + ".id",
						Message: "profile '" + p.GetId() + "' already exists; update it with UpdateProviderProfiles", Severity: DiagnosticError})
				}
				batch[p.GetId()] = true
			}
			if hasErrorDiagnostic(resp.Diagnostics) {
				// An import is all or nothing: with any error, no profile is written.
				return resp, replayTarget{}, nil
			}
			for _, item := range req.GetProfiles() {
				p := clone(item.GetProfile())
				p.ResourceVersion = 1
				p.Source = item.GetSource()
				p.Scope = scope
				s.st.profiles[profileKey{scope: scope, id: p.GetId()}] = p
				resp.Profiles = append(resp.Profiles, clone(p))
			}
			resp.Imported = true
			return resp, replayTarget{}, nil
		},
		// Profiles replay their stored diagnostics.
		replay: storedResponse[*pb.ImportProviderProfilesResponse],
	})
}

func hasErrorDiagnostic(list []*pb.ProviderProfileDiagnostic) bool {
	for _, d := range list {
		if d.GetSeverity() == DiagnosticError {
			return true
		}
	}
	return false
}

func (g *gateway) UpdateProviderProfiles(ctx context.Context, req *pb.UpdateProviderProfilesRequest) (*pb.UpdateProviderProfilesResponse, error) {
	s := g.s
	s.mu.Lock()
	defer s.mu.Unlock()
	rid, err := normalizeRequestID("request_id", req.GetRequestId())
	if err != nil {
		return nil, err
	}
	scope, err := s.profileScope(req.GetWorkspaceScope())
	if err != nil {
		return nil, err
	}
	return admit(ctx, s, mutation[*pb.UpdateProviderProfilesResponse]{
		method: "UpdateProviderProfiles", scope: scope, requestID: rid, request: req, protected: true,
		run: func() (*pb.UpdateProviderProfilesResponse, replayTarget, error) {
			id := req.GetId()
			if id == "" {
				return nil, replayTarget{}, invalidArgument("id", "provider profile id is required")
			}
			key := profileKey{scope: scope, id: id}
			cur := s.st.profiles[key]
			if cur == nil {
				return nil, replayTarget{}, notFound("provider profile not found")
			}
			if want := req.GetExpectedResourceVersion(); want != 0 && want != cur.GetResourceVersion() {
				return nil, replayTarget{}, versionConflict("update provider profile", cur.GetResourceVersion())
			}
			item := req.GetProfile()
			resp := &pb.UpdateProviderProfilesResponse{Diagnostics: profileDiagnostics(item.GetSource(), item.GetProfile(), "profile.profile")}
			if p := item.GetProfile(); p.GetId() != "" && p.GetId() != id {
				resp.Diagnostics = append(resp.Diagnostics, &pb.ProviderProfileDiagnostic{Source: item.GetSource(), ProfileId: p.GetId(), Field: "profile.profile.id",
					Message: "profile id '" + p.GetId() + "' does not match the id being updated ('" + id + "')", Severity: DiagnosticError})
			}
			if hasErrorDiagnostic(resp.Diagnostics) {
				return resp, replayTarget{}, nil
			}
			next := clone(item.GetProfile())
			next.ResourceVersion = cur.GetResourceVersion() + 1
			next.Source = item.GetSource()
			next.Scope = scope
			s.st.profiles[key] = next
			resp.Profile = clone(next)
			resp.Updated = true
			return resp, replayTarget{}, nil
		},
		replay: storedResponse[*pb.UpdateProviderProfilesResponse],
	})
}

func (g *gateway) DeleteProviderProfile(ctx context.Context, req *pb.DeleteProviderProfileRequest) (*pb.DeleteProviderProfileResponse, error) {
	s := g.s
	s.mu.Lock()
	defer s.mu.Unlock()
	rid, err := normalizeRequestID("request_id", req.GetRequestId())
	if err != nil {
		return nil, err
	}
	scope, err := s.profileScope(req.GetWorkspaceScope())
	if err != nil {
		return nil, err
	}
	return admit(ctx, s, mutation[*pb.DeleteProviderProfileResponse]{
		method: "DeleteProviderProfile", scope: scope, requestID: rid, request: req, protected: true,
		run: func() (*pb.DeleteProviderProfileResponse, replayTarget, error) {
			if req.GetId() == "" {
				return nil, replayTarget{}, invalidArgument("id", "provider profile id is required")
			}
			key := profileKey{scope: scope, id: req.GetId()}
			if s.st.profiles[key] == nil {
				if req.GetAllowMissing() {
					return &pb.DeleteProviderProfileResponse{Outcome: pb.DeletionOutcome_DELETION_OUTCOME_ALREADY_ABSENT}, replayTarget{}, nil
				}
				return nil, replayTarget{}, notFound("provider profile not found")
			}
			delete(s.st.profiles, key)
			return &pb.DeleteProviderProfileResponse{Outcome: pb.DeletionOutcome_DELETION_OUTCOME_COMPLETED}, replayTarget{}, nil
		},
		replay: storedResponse[*pb.DeleteProviderProfileResponse],
	})
}
