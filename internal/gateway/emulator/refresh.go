package emulator

import (
	"context"
	"sort"

	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
)

// Refresh status strings the gateway reports.
const (
	RefreshConfigured = "configured"
	RefreshRefreshed  = "refreshed"
)

// refreshProvider resolves the provider a refresh call addresses.
func (s *Server) refreshProvider(wsName, provider string) (*providerRec, error) {
	if err := validateLongName("provider", "provider", provider); err != nil {
		return nil, err
	}
	if _, err := s.st.existingWorkspace(wsName); err != nil {
		return nil, err
	}
	pr := s.st.providers[wsName][provider]
	if pr == nil {
		return nil, notFound("provider not found")
	}
	return pr, nil
}

func (g *gateway) GetProviderRefreshStatus(_ context.Context, req *pb.GetProviderRefreshStatusRequest) (*pb.GetProviderRefreshStatusResponse, error) {
	s := g.s
	s.mu.Lock()
	defer s.mu.Unlock()
	wsName, err := scopeWorkspace("workspace_scope", req.GetWorkspaceScope())
	if err != nil {
		return nil, err
	}
	if _, err := s.refreshProvider(wsName, req.GetProvider()); err != nil {
		return nil, err
	}
	resp := &pb.GetProviderRefreshStatusResponse{}
	for k, st := range s.st.refresh {
		if k.workspace == wsName && k.provider == req.GetProvider() && (req.GetCredentialKey() == "" || k.credential == req.GetCredentialKey()) {
			resp.Credentials = append(resp.Credentials, clone(st))
		}
	}
	if len(resp.Credentials) == 0 {
		return nil, notFound("provider refresh state not found")
	}
	sort.Slice(resp.Credentials, func(i, j int) bool {
		return resp.Credentials[i].GetCredentialKey() < resp.Credentials[j].GetCredentialKey()
	})
	return resp, nil
}

func (g *gateway) ConfigureProviderRefresh(ctx context.Context, req *pb.ConfigureProviderRefreshRequest) (*pb.ConfigureProviderRefreshResponse, error) {
	s := g.s
	s.mu.Lock()
	defer s.mu.Unlock()
	rid, err := normalizeRequestID("request_id", req.GetRequestId())
	if err != nil {
		return nil, err
	}
	wsName, err := scopeWorkspace("workspace_scope", req.GetWorkspaceScope())
	if err != nil {
		return nil, err
	}
	return admit(ctx, s, mutation[*pb.ConfigureProviderRefreshResponse]{
		method: "ConfigureProviderRefresh", scope: wsName, requestID: rid, request: req, protected: true,
		run: func() (*pb.ConfigureProviderRefreshResponse, replayTarget, error) {
			pr, err := s.refreshProvider(wsName, req.GetProvider())
			if err != nil {
				return nil, replayTarget{}, err
			}
			if req.GetCredentialKey() == "" {
				return nil, replayTarget{}, invalidArgument("credential_key", "credential_key is required")
			}
			if req.GetStrategy() == pb.ProviderCredentialRefreshStrategy_PROVIDER_CREDENTIAL_REFRESH_STRATEGY_UNSPECIFIED {
				return nil, replayTarget{}, invalidArgument("strategy", "strategy is required")
			}
			// The refresh material is write-only: it is accepted and never answered back.
			st := &pb.ProviderCredentialRefreshStatus{
				Provider:       req.GetProvider(),
				ProviderId:     pr.p.GetMetadata().GetId(),
				CredentialKey:  req.GetCredentialKey(),
				Strategy:       req.GetStrategy(),
				Status:         RefreshConfigured,
				ExpirationTime: req.GetExpirationTime(),
			}
			s.st.refresh[refreshKey{workspace: wsName, provider: req.GetProvider(), credential: req.GetCredentialKey()}] = st
			return &pb.ConfigureProviderRefreshResponse{Status: clone(st)}, replayTarget{}, nil
		},
		replay: storedResponse[*pb.ConfigureProviderRefreshResponse],
	})
}

func (g *gateway) RotateProviderCredential(ctx context.Context, req *pb.RotateProviderCredentialRequest) (*pb.RotateProviderCredentialResponse, error) {
	s := g.s
	s.mu.Lock()
	defer s.mu.Unlock()
	rid, err := normalizeRequestID("request_id", req.GetRequestId())
	if err != nil {
		return nil, err
	}
	wsName, err := scopeWorkspace("workspace_scope", req.GetWorkspaceScope())
	if err != nil {
		return nil, err
	}
	return admit(ctx, s, mutation[*pb.RotateProviderCredentialResponse]{
		method: "RotateProviderCredential", scope: wsName, requestID: rid, request: req, protected: true,
		run: func() (*pb.RotateProviderCredentialResponse, replayTarget, error) {
			if _, err := s.refreshProvider(wsName, req.GetProvider()); err != nil {
				return nil, replayTarget{}, err
			}
			st := s.st.refresh[refreshKey{workspace: wsName, provider: req.GetProvider(), credential: req.GetCredentialKey()}]
			if st == nil {
				return nil, replayTarget{}, notFound("provider refresh state not found")
			}
			st.Status = RefreshRefreshed
			st.LastRefreshTime = timestamppb.New(s.now())
			return &pb.RotateProviderCredentialResponse{Status: clone(st)}, replayTarget{}, nil
		},
		replay: storedResponse[*pb.RotateProviderCredentialResponse],
	})
}

func (g *gateway) DeleteProviderRefresh(ctx context.Context, req *pb.DeleteProviderRefreshRequest) (*pb.DeleteProviderRefreshResponse, error) {
	s := g.s
	s.mu.Lock()
	defer s.mu.Unlock()
	rid, err := normalizeRequestID("request_id", req.GetRequestId())
	if err != nil {
		return nil, err
	}
	wsName, err := scopeWorkspace("workspace_scope", req.GetWorkspaceScope())
	if err != nil {
		return nil, err
	}
	return admit(ctx, s, mutation[*pb.DeleteProviderRefreshResponse]{
		method: "DeleteProviderRefresh", scope: wsName, requestID: rid, request: req, protected: true,
		run: func() (*pb.DeleteProviderRefreshResponse, replayTarget, error) {
			if _, err := s.st.existingWorkspace(wsName); err != nil {
				return nil, replayTarget{}, err
			}
			key := refreshKey{workspace: wsName, provider: req.GetProvider(), credential: req.GetCredentialKey()}
			if s.st.refresh[key] == nil {
				if req.GetAllowMissing() {
					return &pb.DeleteProviderRefreshResponse{Outcome: pb.DeletionOutcome_DELETION_OUTCOME_ALREADY_ABSENT}, replayTarget{}, nil
				}
				return nil, replayTarget{}, notFound("provider refresh state not found")
			}
			delete(s.st.refresh, key)
			return &pb.DeleteProviderRefreshResponse{Outcome: pb.DeletionOutcome_DELETION_OUTCOME_COMPLETED}, replayTarget{}, nil
		},
		replay: storedResponse[*pb.DeleteProviderRefreshResponse],
	})
}
