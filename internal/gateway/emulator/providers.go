package emulator

import (
	"context"
	"encoding/base64"
	"sort"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
)

// Redacted replaces every credential value in responses.
const Redacted = "REDACTED"

func redact(p *pb.Provider) *pb.Provider {
	out := clone(p)
	for k := range out.Credentials {
		out.Credentials[k] = Redacted
	}
	return out
}

func validateProvider(p *pb.Provider) error {
	if p == nil {
		return invalidArgument("provider", "provider is required")
	}
	if err := validateLongName("provider.metadata.name", "provider", p.GetMetadata().GetName()); err != nil {
		return err
	}
	if p.GetType() == "" {
		return invalidArgument("provider.type", "provider type is required")
	}
	if len(p.GetType()) > maxProviderType {
		return invalidArgument("provider.type", "provider type exceeds maximum length (%d > %d)", len(p.GetType()), maxProviderType)
	}
	if n := len(p.GetCredentials()); n > maxCredentials {
		return invalidArgument("provider.credentials", "provider has %d credentials; at most %d are allowed", n, maxCredentials)
	}
	if n := len(p.GetConfig()); n > maxConfigEntries {
		return invalidArgument("provider.config", "provider has %d config entries; at most %d are allowed", n, maxConfigEntries)
	}
	return nil
}

func (g *gateway) CreateProvider(ctx context.Context, req *pb.CreateProviderRequest) (*pb.ProviderResponse, error) {
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
	name := req.GetProvider().GetMetadata().GetName()
	return admit(ctx, s, mutation[*pb.ProviderResponse]{
		method: "CreateProvider", scope: wsName, requestID: rid, request: req, protected: true,
		run: func() (*pb.ProviderResponse, replayTarget, error) {
			if err := validateProvider(req.GetProvider()); err != nil {
				return nil, replayTarget{}, err
			}
			if _, err := s.st.activeWorkspace(wsName); err != nil {
				return nil, replayTarget{}, err
			}
			if s.st.providers[wsName][name] != nil {
				return nil, replayTarget{}, alreadyExists("provider '%s' already exists", name)
			}
			p := clone(req.GetProvider())
			p.Metadata = newMeta(name, wsName, p.GetMetadata().GetLabels(), s.now())
			if s.st.providers[wsName] == nil {
				s.st.providers[wsName] = map[string]*providerRec{}
			}
			s.st.providers[wsName][name] = &providerRec{p: p}
			return &pb.ProviderResponse{Provider: redact(p)}, replayTarget{objectID: p.Metadata.Id, resourceVersion: p.Metadata.ResourceVersion}, nil
		},
		replay: func(rec *admission) (*pb.ProviderResponse, error) {
			return s.replayProvider(wsName, name, rec)
		},
	})
}

// replayProvider answers a replayed provider mutation with the redacted provider, provided it
// is still the version the original request produced.
func (s *Server) replayProvider(wsName, name string, rec *admission) (*pb.ProviderResponse, error) {
	pr := s.st.providers[wsName][name]
	if pr == nil || pr.p.GetMetadata().GetId() != rec.target.objectID || pr.p.GetMetadata().GetResourceVersion() != rec.target.resourceVersion {
		return nil, errReplayUnavailable()
	}
	out := clone(rec.response.(*pb.ProviderResponse))
	out.Provider = redact(pr.p)
	return out, nil
}

func (g *gateway) GetProvider(_ context.Context, req *pb.GetProviderRequest) (*pb.ProviderResponse, error) {
	s := g.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.GetName() == "" {
		return nil, invalidArgument("name", "provider name is required")
	}
	wsName, err := scopeWorkspace("workspace_scope", req.GetWorkspaceScope())
	if err != nil {
		return nil, err
	}
	if _, err := s.st.existingWorkspace(wsName); err != nil {
		return nil, err
	}
	pr := s.st.providers[wsName][req.GetName()]
	if pr == nil {
		return nil, notFound("provider not found")
	}
	return &pb.ProviderResponse{Provider: redact(pr.p)}, nil
}

// defaultPageSize is what a ListProviders call without page_size gets.
const defaultPageSize = 100

func (g *gateway) ListProviders(_ context.Context, req *pb.ListProvidersRequest) (*pb.ListProvidersResponse, error) {
	s := g.s
	s.mu.Lock()
	defer s.mu.Unlock()
	wsName, err := scopeWorkspace("workspace_scope", req.GetWorkspaceScope())
	if err != nil {
		return nil, err
	}
	if _, err := s.st.existingWorkspace(wsName); err != nil {
		return nil, err
	}
	size := int(req.GetPageSize())
	if size < 0 {
		return nil, invalidArgument("page_size", "page_size %d must not be negative", size)
	}
	if size == 0 {
		size = defaultPageSize
	}
	after := ""
	if tok := req.GetPageToken(); tok != "" {
		b, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil {
			return nil, invalidArgument("page_token", "page_token %q is not a token this gateway issued", tok)
		}
		after = string(b)
	}
	names := make([]string, 0, len(s.st.providers[wsName]))
	for n := range s.st.providers[wsName] {
		if n > after {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	resp := &pb.ListProvidersResponse{}
	for i, n := range names {
		if i == size {
			resp.NextPageToken = base64.RawURLEncoding.EncodeToString([]byte(names[i-1]))
			break
		}
		resp.Providers = append(resp.Providers, redact(s.st.providers[wsName][n].p))
	}
	return resp, nil
}

func (g *gateway) UpdateProvider(ctx context.Context, req *pb.UpdateProviderRequest) (*pb.ProviderResponse, error) {
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
	name := req.GetProvider().GetMetadata().GetName()
	return admit(ctx, s, mutation[*pb.ProviderResponse]{
		method: "UpdateProvider", scope: wsName, requestID: rid, request: req, protected: true,
		run: func() (*pb.ProviderResponse, replayTarget, error) {
			return s.updateProvider(wsName, name, req)
		},
		// A replay does not recheck the request's (now stale) fence version.
		replay: func(rec *admission) (*pb.ProviderResponse, error) {
			return s.replayProvider(wsName, name, rec)
		},
	})
}

func (s *Server) updateProvider(wsName, name string, req *pb.UpdateProviderRequest) (*pb.ProviderResponse, replayTarget, error) {
	none := replayTarget{}
	in := req.GetProvider()
	if in == nil {
		return nil, none, invalidArgument("provider", "provider is required")
	}
	if name == "" {
		return nil, none, invalidArgument("provider.metadata.name", "provider name is required")
	}
	if _, err := s.st.existingWorkspace(wsName); err != nil {
		return nil, none, err
	}
	pr := s.st.providers[wsName][name]
	if pr == nil {
		return nil, none, notFound("provider not found")
	}
	cur := pr.p
	// Unconfirmed: the status of a stale fence is inferred from the generic persistence
	// mapping (ABORTED, RESOURCE_VERSION_CONFLICT).
	if want := in.GetMetadata().GetResourceVersion(); want != 0 && want != cur.GetMetadata().GetResourceVersion() {
		return nil, none, versionConflict("update provider", cur.GetMetadata().GetResourceVersion())
	}
	if in.GetType() != "" && in.GetType() != cur.GetType() {
		return nil, none, invalidArgument("provider.type", "provider type %q cannot change to %q; delete and recreate the provider", cur.GetType(), in.GetType())
	}
	if in.GetProfileWorkspace() != "" && in.GetProfileWorkspace() != cur.GetProfileWorkspace() {
		return nil, none, invalidArgument("provider.profile_workspace", "provider profile_workspace %q cannot change to %q", cur.GetProfileWorkspace(), in.GetProfileWorkspace())
	}
	next := clone(cur)
	// Non-empty credential values merge in; an empty one leaves the stored credential alone.
	for k, v := range in.GetCredentials() {
		if v == "" {
			continue
		}
		if next.Credentials == nil {
			next.Credentials = map[string]string{}
		}
		next.Credentials[k] = v
	}
	// Non-empty config values merge in; an empty one deletes the key.
	for k, v := range in.GetConfig() {
		if v == "" {
			delete(next.Config, k)
			continue
		}
		if next.Config == nil {
			next.Config = map[string]string{}
		}
		next.Config[k] = v
	}
	for _, times := range []map[string]*timestamppb.Timestamp{in.GetCredentialExpirationTimes(), req.GetCredentialExpirationTimes()} {
		for k, t := range times {
			if next.CredentialExpirationTimes == nil {
				next.CredentialExpirationTimes = map[string]*timestamppb.Timestamp{}
			}
			next.CredentialExpirationTimes[k] = clone(t)
		}
	}
	for _, k := range req.GetClearCredentialExpirationKeys() {
		delete(next.CredentialExpirationTimes, k)
	}
	if len(next.GetCredentials()) > maxCredentials || len(next.GetConfig()) > maxConfigEntries {
		return nil, none, invalidArgument("provider", "provider would hold %d credentials and %d config entries; at most %d and %d are allowed", len(next.GetCredentials()), len(next.GetConfig()), maxCredentials, maxConfigEntries)
	}
	next.Metadata.ResourceVersion++
	pr.p = next
	mutationID := uuid.NewString()
	for _, sb := range s.st.sandboxes[wsName] {
		if hasProvider(sb, name) {
			s.recordReceipt(wsName, sb, name, pb.ProviderMutationKind_PROVIDER_MUTATION_KIND_UPDATE, mutationID)
		}
	}
	return &pb.ProviderResponse{Provider: redact(next), MutationId: mutationID},
		replayTarget{objectID: next.Metadata.Id, resourceVersion: next.Metadata.ResourceVersion}, nil
}

func (g *gateway) DeleteProvider(ctx context.Context, req *pb.DeleteProviderRequest) (*pb.DeleteProviderResponse, error) {
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
	return admit(ctx, s, mutation[*pb.DeleteProviderResponse]{
		method: "DeleteProvider", scope: wsName, requestID: rid, request: req, protected: true,
		run: func() (*pb.DeleteProviderResponse, replayTarget, error) {
			if req.GetName() == "" {
				return nil, replayTarget{}, invalidArgument("name", "provider name is required")
			}
			if _, err := s.st.existingWorkspace(wsName); err != nil {
				return nil, replayTarget{}, err
			}
			if s.st.providers[wsName][req.GetName()] == nil {
				if req.GetAllowMissing() {
					return &pb.DeleteProviderResponse{Outcome: pb.DeletionOutcome_DELETION_OUTCOME_ALREADY_ABSENT}, replayTarget{}, nil
				}
				return nil, replayTarget{}, notFound("provider not found")
			}
			delete(s.st.providers[wsName], req.GetName())
			for k := range s.st.refresh {
				if k.workspace == wsName && k.provider == req.GetName() {
					delete(s.st.refresh, k)
				}
			}
			return &pb.DeleteProviderResponse{Outcome: pb.DeletionOutcome_DELETION_OUTCOME_COMPLETED}, replayTarget{}, nil
		},
		replay: storedResponse[*pb.DeleteProviderResponse],
	})
}

// ProviderCredentials returns the credential values the emulator holds for a provider (never
// sent back over the wire), so tests can prove what a client delivered.
func (s *Server) ProviderCredentials(workspace, name string) (map[string]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pr := s.st.providers[workspace][name]
	if pr == nil {
		return nil, false
	}
	out := map[string]string{}
	for k, v := range pr.p.GetCredentials() {
		out[k] = v
	}
	return out, true
}

func hasProvider(sb *sandboxRec, provider string) bool {
	for _, p := range sb.spec.GetProviders() {
		if p == provider {
			return true
		}
	}
	return false
}
