package emulator

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
)

// recordReceipt records an immutable provider mutation receipt for one sandbox. Every kind but
// OBSERVE changes the attachment's desired state, which supersedes older receipts.
func (s *Server) recordReceipt(wsName string, sb *sandboxRec, provider string, kind pb.ProviderMutationKind, mutationID string) *pb.ProviderMutationReceipt {
	key := attachmentKey{workspace: wsName, sandboxID: sb.meta.GetId(), provider: provider}
	if kind != pb.ProviderMutationKind_PROVIDER_MUTATION_KIND_OBSERVE {
		s.st.desired[key]++
	}
	if mutationID == "" {
		mutationID = uuid.NewString()
	}
	r := &pb.ProviderMutationReceipt{
		ReceiptId:  uuid.NewString(),
		MutationId: mutationID,
		Provider:   provider,
		Workspace:  wsName,
		Kind:       kind,
	}
	s.st.receipts[r.ReceiptId] = &receiptRec{receipt: r, sandboxID: sb.meta.GetId(), gen: s.st.desired[key], attached: hasProvider(sb, provider)}
	return clone(r)
}

// readinessFor maps a reason to its state the way the gateway's rule 3 does.
func readinessFor(reason pb.ProviderReadinessReason) pb.ProviderReadinessState {
	switch reason {
	case pb.ProviderReadinessReason_PROVIDER_READINESS_REASON_WAITING_FOR_SUPERVISOR:
		return pb.ProviderReadinessState_PROVIDER_READINESS_STATE_PERSISTED
	case pb.ProviderReadinessReason_PROVIDER_READINESS_REASON_CREDENTIALS_WITHHELD,
		pb.ProviderReadinessReason_PROVIDER_READINESS_REASON_CREDENTIAL_EXPIRED:
		return pb.ProviderReadinessState_PROVIDER_READINESS_STATE_WITHHELD
	case pb.ProviderReadinessReason_PROVIDER_READINESS_REASON_CREDENTIAL_INSTALL_FAILED,
		pb.ProviderReadinessReason_PROVIDER_READINESS_REASON_POLICY_ACTIVATION_FAILED,
		pb.ProviderReadinessReason_PROVIDER_READINESS_REASON_PROCESS_INSTALL_FAILED,
		pb.ProviderReadinessReason_PROVIDER_READINESS_REASON_UNSUPPORTED_SUPERVISOR,
		pb.ProviderReadinessReason_PROVIDER_READINESS_REASON_LOCAL_POLICY:
		return pb.ProviderReadinessState_PROVIDER_READINESS_STATE_FAILED
	}
	return pb.ProviderReadinessState_PROVIDER_READINESS_STATE_PENDING
}

// evaluate runs the readiness state machine for a receipt. The first matching rule wins:
// a changed desired state supersedes the receipt; a reason set by the test (standing for the
// supervisor's configuration or observation report) maps per rule 3; a sandbox that is not
// READY has no supervisor; otherwise everything is installed and the receipt is READY
// (provider attached) or REVOKED (provider detached).
func (s *Server) evaluate(ctx context.Context, wsName string, sb *sandboxRec, rec *receiptRec) (*pb.ProviderReadinessStatus, error) {
	r := rec.receipt
	out := &pb.ProviderReadinessStatus{Receipt: clone(r), NetworkInstanceId: sb.meta.GetId()}
	key := attachmentKey{workspace: wsName, sandboxID: sb.meta.GetId(), provider: r.GetProvider()}
	if rec.gen != s.st.desired[key] {
		out.State = pb.ProviderReadinessState_PROVIDER_READINESS_STATE_SUPERSEDED
		out.Reason = pb.ProviderReadinessReason_PROVIDER_READINESS_REASON_DESIRED_STATE_CHANGED
		return out, nil
	}
	if reason, ok := s.st.readiness[key]; ok && reason != pb.ProviderReadinessReason_PROVIDER_READINESS_REASON_UNSPECIFIED {
		out.State, out.Reason = readinessFor(reason), reason
		return out, nil
	}
	sandbox, err := s.sandboxProto(ctx, wsName, sb)
	if err != nil {
		return nil, err
	}
	if sandbox.GetStatus().GetPhase() != pb.SandboxPhase_SANDBOX_PHASE_READY {
		out.State = pb.ProviderReadinessState_PROVIDER_READINESS_STATE_PENDING
		out.Reason = pb.ProviderReadinessReason_PROVIDER_READINESS_REASON_SUPERVISOR_DISCONNECTED
		return out, nil
	}
	attached := rec.attached
	switch r.GetKind() {
	case pb.ProviderMutationKind_PROVIDER_MUTATION_KIND_ATTACH, pb.ProviderMutationKind_PROVIDER_MUTATION_KIND_UPDATE:
		attached = true
	case pb.ProviderMutationKind_PROVIDER_MUTATION_KIND_DETACH:
		attached = false
	}
	if attached {
		out.State = pb.ProviderReadinessState_PROVIDER_READINESS_STATE_READY
	} else {
		out.State = pb.ProviderReadinessState_PROVIDER_READINESS_STATE_REVOKED
	}
	return out, nil
}

func (g *gateway) GetSandboxProviderStatus(ctx context.Context, req *pb.GetSandboxProviderStatusRequest) (*pb.GetSandboxProviderStatusResponse, error) {
	s := g.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.GetProvider() == "" && req.GetReceiptId() == "" {
		return nil, invalidArgument("provider", "provider or receipt_id is required")
	}
	if len(req.GetProvider()) > maxLongName {
		return nil, invalidArgument("provider", "provider name exceeds maximum length (%d > %d)", len(req.GetProvider()), maxLongName)
	}
	wsName, sb, err := s.findSandbox(ctx, "sandbox", req.GetSandbox(), req.GetWorkspaceScope())
	if err != nil {
		return nil, err
	}
	var rec *receiptRec
	if id := req.GetReceiptId(); id != "" {
		norm, err := normalizeRequestID("receipt_id", id)
		if err != nil {
			return nil, invalidArgument("receipt_id", "receipt_id must be a canonical UUID")
		}
		rec = s.st.receipts[norm]
		if rec == nil || rec.sandboxID != sb.meta.GetId() || rec.receipt.GetWorkspace() != wsName ||
			(req.GetProvider() != "" && rec.receipt.GetProvider() != req.GetProvider()) {
			return nil, notFound("provider receipt not found")
		}
	} else {
		if s.st.providers[wsName][req.GetProvider()] == nil {
			return nil, notFound("provider not found")
		}
		// Reading by provider records a new OBSERVE receipt: this read writes state.
		r := s.recordReceipt(wsName, sb, req.GetProvider(), pb.ProviderMutationKind_PROVIDER_MUTATION_KIND_OBSERVE, "")
		rec = s.st.receipts[r.ReceiptId]
	}
	st, err := s.evaluate(ctx, wsName, sb, rec)
	if err != nil {
		return nil, err
	}
	return &pb.GetSandboxProviderStatusResponse{Status: st}, nil
}

func (g *gateway) DetachSandboxProvider(ctx context.Context, req *pb.DetachSandboxProviderRequest) (*pb.DetachSandboxProviderResponse, error) {
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
	return admit(ctx, s, mutation[*pb.DetachSandboxProviderResponse]{
		method: "DetachSandboxProvider", scope: wsName, requestID: rid, request: req, protected: true,
		run: func() (*pb.DetachSandboxProviderResponse, replayTarget, error) {
			sb, err := s.attachmentTarget(ctx, req.GetSandbox(), req.GetProvider(), req.GetExpectedResourceVersion(), req.GetWorkspaceScope(), "detach provider")
			if err != nil {
				return nil, replayTarget{}, err
			}
			detached := hasProvider(sb, req.GetProvider())
			if detached {
				var keep []string
				for _, p := range sb.spec.GetProviders() {
					if p != req.GetProvider() {
						keep = append(keep, p)
					}
				}
				sb.spec.Providers = keep
				sb.meta.ResourceVersion++
			}
			receipt := s.recordReceipt(wsName, sb, req.GetProvider(), pb.ProviderMutationKind_PROVIDER_MUTATION_KIND_DETACH, "")
			sandbox, err := s.sandboxProto(ctx, wsName, sb)
			if err != nil {
				return nil, replayTarget{}, err
			}
			return &pb.DetachSandboxProviderResponse{Sandbox: sandbox, Detached: detached, Receipt: receipt}, replayTarget{objectID: sb.meta.GetId()}, nil
		},
		replay: storedResponse[*pb.DetachSandboxProviderResponse],
	})
}

func (g *gateway) AttachSandboxProvider(ctx context.Context, req *pb.AttachSandboxProviderRequest) (*pb.AttachSandboxProviderResponse, error) {
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
	return admit(ctx, s, mutation[*pb.AttachSandboxProviderResponse]{
		method: "AttachSandboxProvider", scope: wsName, requestID: rid, request: req, protected: true,
		run: func() (*pb.AttachSandboxProviderResponse, replayTarget, error) {
			sb, err := s.attachmentTarget(ctx, req.GetSandbox(), req.GetProvider(), req.GetExpectedResourceVersion(), req.GetWorkspaceScope(), "attach provider")
			if err != nil {
				return nil, replayTarget{}, err
			}
			if s.st.providers[wsName][req.GetProvider()] == nil {
				return nil, replayTarget{}, failedPrecondition("provider '%s' not found", req.GetProvider())
			}
			attached := !hasProvider(sb, req.GetProvider())
			if attached {
				if len(sb.spec.GetProviders()) >= maxProvidersPerBox {
					return nil, replayTarget{}, invalidArgument("provider", "a sandbox may attach at most %d providers", maxProvidersPerBox)
				}
				sb.spec.Providers = append(sb.spec.Providers, req.GetProvider())
				sb.meta.ResourceVersion++
			}
			receipt := s.recordReceipt(wsName, sb, req.GetProvider(), pb.ProviderMutationKind_PROVIDER_MUTATION_KIND_ATTACH, "")
			sandbox, err := s.sandboxProto(ctx, wsName, sb)
			if err != nil {
				return nil, replayTarget{}, err
			}
			return &pb.AttachSandboxProviderResponse{Sandbox: sandbox, Attached: attached, Receipt: receipt}, replayTarget{objectID: sb.meta.GetId()}, nil
		},
		replay: storedResponse[*pb.AttachSandboxProviderResponse],
	})
}

// attachmentTarget resolves the sandbox of an attach or detach and applies the optional fence
// on the sandbox's resource version (0 skips it).
func (s *Server) attachmentTarget(ctx context.Context, sandbox, provider string, expected uint64, sel *pb.WorkspaceSelector, op string) (*sandboxRec, error) {
	if err := validateLongName("provider", "provider", provider); err != nil {
		return nil, err
	}
	_, sb, err := s.findSandbox(ctx, "sandbox", sandbox, sel)
	if err != nil {
		return nil, err
	}
	if expected != 0 && expected != sb.meta.GetResourceVersion() {
		return nil, versionConflict(op, sb.meta.GetResourceVersion())
	}
	return sb, nil
}

// SetProviderStatus makes the supervisor of a sandbox report reason for a provider, which the
// readiness state machine maps to a state: WAITING_FOR_SUPERVISOR → PERSISTED,
// CREDENTIALS_WITHHELD or CREDENTIAL_EXPIRED → WITHHELD, the install/policy/supervisor failures
// → FAILED, any other reason → PENDING. UNSPECIFIED clears the report: the provider is then
// READY while attached (REVOKED once detached) as soon as the sandbox is READY.
func (s *Server) SetProviderStatus(workspace, sandbox, provider string, reason pb.ProviderReadinessReason) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.st.sandboxes[workspace][sandbox]
	if sb == nil {
		return fmt.Errorf("gateway emulator: sandbox %s/%s does not exist", workspace, sandbox)
	}
	key := attachmentKey{workspace: workspace, sandboxID: sb.meta.GetId(), provider: provider}
	if reason == pb.ProviderReadinessReason_PROVIDER_READINESS_REASON_UNSPECIFIED {
		delete(s.st.readiness, key)
	} else {
		s.st.readiness[key] = reason
	}
	return nil
}
