package emulator

import (
	"context"
	"fmt"
	"net"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
)

func (g *gateway) CreateSandbox(ctx context.Context, req *pb.CreateSandboxRequest) (*pb.SandboxResponse, error) {
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
	return admit(ctx, s, mutation[*pb.SandboxResponse]{
		method: "CreateSandbox", scope: wsName, requestID: rid, request: req, protected: true,
		run: func() (*pb.SandboxResponse, replayTarget, error) {
			return s.createSandbox(ctx, wsName, req)
		},
		replay: func(rec *admission) (*pb.SandboxResponse, error) {
			// A replay answers with the live sandbox, provided it is still the one created.
			sb := s.st.sandboxes[wsName][req.GetName()]
			if sb == nil || sb.meta.GetId() != rec.target.objectID {
				return nil, errReplayUnavailable()
			}
			sandbox, err := s.sandboxProto(ctx, wsName, sb)
			if status.Code(err) == codes.NotFound {
				// The sandbox finished deleting while this replay looked at it.
				return nil, errReplayUnavailable()
			}
			if err != nil {
				return nil, err
			}
			resp := &pb.SandboxResponse{Sandbox: sandbox}
			if s.opts.ReplayServiceURLs {
				resp.ServiceUrls = s.serviceURLs(wsName, sb)
			}
			return resp, nil
		},
	})
}

func (s *Server) createSandbox(ctx context.Context, wsName string, req *pb.CreateSandboxRequest) (*pb.SandboxResponse, replayTarget, error) {
	none := replayTarget{}
	spec := req.GetSpec()
	if spec == nil {
		return nil, none, invalidArgument("spec", "spec is required")
	}
	name := req.GetName()
	if name == "" {
		name = "sandbox-" + uuid.NewString()[:8]
	} else if err := validateShortName("name", "sandbox", name); err != nil {
		return nil, none, err
	}
	if _, err := s.st.activeWorkspace(wsName); err != nil {
		return nil, none, err
	}
	if err := validateSpec(spec); err != nil {
		return nil, none, err
	}
	cfg, err := parseDriverConfig(spec.GetTemplate().GetDriverConfig())
	if err != nil {
		return nil, none, err
	}
	services, err := validateExposures(req.GetServiceExposures())
	if err != nil {
		return nil, none, err
	}
	for _, p := range spec.GetProviders() {
		if s.st.providers[wsName][p] == nil {
			return nil, none, failedPrecondition("provider '%s' not found", p)
		}
	}
	if s.st.sandboxes[wsName][name] != nil {
		return nil, none, alreadyExists("sandbox '%s' already exists", name)
	}

	meta := newMeta(name, wsName, req.GetLabels(), s.now())
	meta.Annotations = cloneMap(req.GetAnnotations())
	sb := &sandboxRec{meta: meta, spec: clone(spec), services: map[string]*serviceRec{}}
	if s.opts.Kube != nil {
		pod, err := s.harnessPod(wsName, meta, spec, cfg)
		if err != nil {
			return nil, none, err
		}
		created, err := s.createHarnessPod(ctx, pod)
		if err != nil {
			return nil, none, err
		}
		sb.podUID = created.UID
	}
	for _, e := range services {
		sb.services[e.name] = &serviceRec{meta: newMeta(e.name, wsName, nil, s.now()), name: e.name, port: e.port, mode: e.mode}
	}
	if s.st.sandboxes[wsName] == nil {
		s.st.sandboxes[wsName] = map[string]*sandboxRec{}
	}
	s.st.sandboxes[wsName][name] = sb
	s.st.logs[meta.Id] = &logRing{}
	for _, p := range spec.GetProviders() {
		s.recordReceipt(wsName, sb, p, pb.ProviderMutationKind_PROVIDER_MUTATION_KIND_ATTACH, "")
	}
	// The gateway answers right after the backend object exists, before the Pod can be Ready.
	out := &pb.SandboxResponse{
		Sandbox:     s.sandboxSnapshot(sb, pb.SandboxPhase_SANDBOX_PHASE_PROVISIONING, condition("False", "SupervisorNotConnected", "the sandbox was just created"), nil),
		ServiceUrls: s.serviceURLs(wsName, sb),
	}
	return out, replayTarget{objectID: meta.Id}, nil
}

func validateSpec(spec *pb.SandboxSpec) error {
	if len(spec.GetLogLevel()) > maxLogLevel {
		return invalidArgument("spec.log_level", "log_level exceeds maximum length (%d > %d)", len(spec.GetLogLevel()), maxLogLevel)
	}
	if len(spec.GetEnvironment()) > maxEnvEntries {
		return invalidArgument("spec.environment", "environment has %d entries; at most %d are allowed", len(spec.GetEnvironment()), maxEnvEntries)
	}
	for k, v := range spec.GetEnvironment() {
		if k == "" || len(k) > maxEnvKey {
			return invalidArgument("spec.environment", "environment key %q must be 1..%d bytes", k, maxEnvKey)
		}
		if len(v) > maxEnvValue {
			return invalidArgument("spec.environment."+k, "environment value of %s exceeds %d bytes", k, maxEnvValue)
		}
	}
	if n := len(spec.GetProviders()); n > maxProvidersPerBox {
		return invalidArgument("spec.providers", "a sandbox may attach at most %d providers, got %d", maxProvidersPerBox, n)
	}
	seen := map[string]bool{}
	for _, p := range spec.GetProviders() {
		if err := validateLongName("spec.providers", "provider", p); err != nil {
			return err
		}
		if seen[p] {
			return invalidArgument("spec.providers", "provider %q is listed twice", p)
		}
		seen[p] = true
	}
	return nil
}

type exposure struct {
	name string
	port uint32
	mode pb.ServiceAuthorizationMode
}

func validateExposures(list []*pb.SandboxServiceExposure) ([]exposure, error) {
	var out []exposure
	seen := map[string]bool{}
	for i, e := range list {
		field := fmt.Sprintf("service_exposures[%d]", i)
		if e.GetService() != "" {
			if err := validateShortName(field+".service", "service", e.GetService()); err != nil {
				return nil, err
			}
		}
		if seen[e.GetService()] {
			return nil, invalidArgument(field+".service", "service %q is exposed twice", e.GetService())
		}
		seen[e.GetService()] = true
		if e.GetTargetPort() < 1 || e.GetTargetPort() > 65535 {
			return nil, invalidArgument(field+".target_port", "target_port %d must be in 1..65535", e.GetTargetPort())
		}
		out = append(out, exposure{name: e.GetService(), port: e.GetTargetPort(), mode: authorizationMode(e.GetAuthorizationMode())})
	}
	return out, nil
}

// authorizationMode resolves UNSPECIFIED. Unconfirmed: the gateway's default is not known; the
// emulator assumes STRIP, the choice that never forwards a caller's credentials.
func authorizationMode(m pb.ServiceAuthorizationMode) pb.ServiceAuthorizationMode {
	if m == pb.ServiceAuthorizationMode_SERVICE_AUTHORIZATION_MODE_UNSPECIFIED {
		return pb.ServiceAuthorizationMode_SERVICE_AUTHORIZATION_MODE_STRIP
	}
	return m
}

func (g *gateway) GetSandbox(ctx context.Context, req *pb.GetSandboxRequest) (*pb.SandboxResponse, error) {
	s := g.s
	s.mu.Lock()
	defer s.mu.Unlock()
	wsName, sb, err := s.findSandbox(ctx, "name", req.GetName(), req.GetWorkspaceScope())
	if err != nil {
		return nil, err
	}
	sandbox, err := s.sandboxProto(ctx, wsName, sb)
	if err != nil {
		return nil, err
	}
	// service_urls stay empty outside CreateSandbox.
	return &pb.SandboxResponse{Sandbox: sandbox}, nil
}

// findSandbox resolves a sandbox by name, first letting a finished Pod deletion remove it.
func (s *Server) findSandbox(ctx context.Context, field, name string, sel *pb.WorkspaceSelector) (string, *sandboxRec, error) {
	if name == "" {
		return "", nil, invalidArgument(field, "name is required")
	}
	wsName, err := scopeWorkspace("workspace_scope", sel)
	if err != nil {
		return "", nil, err
	}
	if _, err := s.st.existingWorkspace(wsName); err != nil {
		return "", nil, err
	}
	sb := s.st.sandboxes[wsName][name]
	if sb == nil {
		return "", nil, notFound("sandbox not found")
	}
	if sb.deleting {
		if _, err := s.sandboxProto(ctx, wsName, sb); err != nil {
			return "", nil, err
		}
		if s.st.sandboxes[wsName][name] != sb {
			return "", nil, notFound("sandbox not found")
		}
	}
	return wsName, sb, nil
}

// sandboxProto observes the sandbox and renders it. A deleting sandbox whose Pod is gone is
// removed from the state here, as the gateway's watcher would.
func (s *Server) sandboxProto(ctx context.Context, wsName string, sb *sandboxRec) (*pb.Sandbox, error) {
	obs := podObservation{phase: pb.SandboxPhase_SANDBOX_PHASE_READY, cond: condition("True", "Ready", "")}
	switch {
	case s.opts.Kube == nil && sb.deleting:
		obs = podObservation{gone: true}
	case s.opts.Kube != nil:
		var err error
		if obs, err = s.observePod(ctx, wsName, sb); err != nil {
			return nil, err
		}
	}
	if obs.gone {
		s.removeSandbox(wsName, sb)
		return nil, notFound("sandbox not found")
	}
	if sb.pinned != pb.SandboxPhase_SANDBOX_PHASE_UNSPECIFIED && !sb.deleting {
		obs = podObservation{phase: sb.pinned, exitCode: sb.exitCode, cond: condition("False", "Pinned", "phase set by the test")}
		if sb.pinned == pb.SandboxPhase_SANDBOX_PHASE_READY {
			obs.cond = condition("True", "Ready", "")
		}
	}
	return s.sandboxSnapshot(sb, obs.phase, obs.cond, obs.exitCode), nil
}

func (s *Server) sandboxSnapshot(sb *sandboxRec, phase pb.SandboxPhase, cond *pb.SandboxCondition, exitCode *int32) *pb.Sandbox {
	st := &pb.SandboxStatus{Phase: phase, AgentPod: sb.meta.GetName(), ExitCode: exitCode}
	if cond != nil {
		st.Conditions = []*pb.SandboxCondition{cond}
	}
	return &pb.Sandbox{Metadata: clone(sb.meta), Spec: clone(sb.spec), Status: st}
}

func (s *Server) removeSandbox(wsName string, sb *sandboxRec) {
	if s.st.sandboxes[wsName][sb.meta.GetName()] == sb {
		delete(s.st.sandboxes[wsName], sb.meta.GetName())
	}
	delete(s.st.logs, sb.meta.GetId())
	for k := range s.st.readiness {
		if k.sandboxID == sb.meta.GetId() {
			delete(s.st.readiness, k)
		}
	}
}

func (g *gateway) DeleteSandbox(ctx context.Context, req *pb.DeleteSandboxRequest) (*pb.DeleteSandboxResponse, error) {
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
	return admit(ctx, s, mutation[*pb.DeleteSandboxResponse]{
		method: "DeleteSandbox", scope: wsName, requestID: rid, request: req, protected: true,
		run: func() (*pb.DeleteSandboxResponse, replayTarget, error) {
			if req.GetName() == "" {
				return nil, replayTarget{}, invalidArgument("name", "name is required")
			}
			if _, err := s.st.existingWorkspace(wsName); err != nil {
				return nil, replayTarget{}, err
			}
			sb := s.st.sandboxes[wsName][req.GetName()]
			if sb == nil {
				if req.GetAllowMissing() {
					return &pb.DeleteSandboxResponse{Outcome: pb.DeletionOutcome_DELETION_OUTCOME_ALREADY_ABSENT}, replayTarget{}, nil
				}
				return nil, replayTarget{}, notFound("sandbox not found")
			}
			gone := true
			if s.opts.Kube != nil {
				if gone, err = s.deleteHarnessPod(ctx, wsName, sb); err != nil {
					return nil, replayTarget{}, err
				}
			}
			resp := &pb.DeleteSandboxResponse{SandboxId: sb.meta.GetId(), Outcome: pb.DeletionOutcome_DELETION_OUTCOME_COMPLETED}
			if gone {
				s.removeSandbox(wsName, sb)
			} else {
				// The record stays, DELETING, until the Pod is gone; clients poll GetSandbox.
				if !sb.deleting {
					sb.deleting = true
					sb.meta.ResourceVersion++
				}
				resp.Outcome = pb.DeletionOutcome_DELETION_OUTCOME_ACCEPTED
			}
			return resp, replayTarget{objectID: sb.meta.GetId()}, nil
		},
		// A replay returns the stored outcome and never touches a same-name replacement.
		replay: storedResponse[*pb.DeleteSandboxResponse],
	})
}

// ---- services ----

func (s *Server) serviceURLs(wsName string, sb *sandboxRec) map[string]string {
	if len(sb.services) == 0 {
		return nil
	}
	out := map[string]string{}
	for name := range sb.services {
		out[name] = s.serviceURL(wsName, sb.meta.GetName(), name)
	}
	return out
}

// serviceURL builds <scheme>://<workspace>--<sandbox>[--<service>].<domain>[:port]/ with the
// gateway's own listener port, left out only where it is the scheme's default.
func (s *Server) serviceURL(wsName, sandbox, service string) string {
	scheme := "http"
	if s.opts.TLS != nil {
		scheme = "https"
	}
	host := wsName + "--" + sandbox
	if service != "" {
		host += "--" + service
	}
	host += "." + s.opts.ServiceDomain
	_, port, _ := net.SplitHostPort(s.Addr())
	if !(scheme == "https" && port == "443") && !(scheme == "http" && port == "80") {
		host = net.JoinHostPort(host, port)
	}
	return scheme + "://" + host + "/"
}

func (s *Server) endpointProto(wsName string, sb *sandboxRec, svc *serviceRec) *pb.ServiceEndpointResponse {
	return &pb.ServiceEndpointResponse{
		Endpoint: &pb.ServiceEndpoint{
			Metadata:          clone(svc.meta),
			SandboxId:         sb.meta.GetId(),
			Sandbox:           sb.meta.GetName(),
			Name:              svc.name,
			TargetPort:        svc.port,
			Domain:            true,
			AuthorizationMode: svc.mode,
		},
		Url: s.serviceURL(wsName, sb.meta.GetName(), svc.name),
	}
}

func (g *gateway) GetService(ctx context.Context, req *pb.GetServiceRequest) (*pb.ServiceEndpointResponse, error) {
	s := g.s
	s.mu.Lock()
	defer s.mu.Unlock()
	wsName, sb, err := s.findSandbox(ctx, "sandbox", req.GetSandbox(), req.GetWorkspaceScope())
	if err != nil {
		return nil, err
	}
	svc := sb.services[req.GetName()]
	if svc == nil {
		return nil, notFound("service endpoint not found")
	}
	return s.endpointProto(wsName, sb, svc), nil
}

func (g *gateway) ExposeService(ctx context.Context, req *pb.ExposeServiceRequest) (*pb.ServiceEndpointResponse, error) {
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
	return admit(ctx, s, mutation[*pb.ServiceEndpointResponse]{
		method: "ExposeService", scope: wsName, requestID: rid, request: req, protected: true,
		run: func() (*pb.ServiceEndpointResponse, replayTarget, error) {
			_, sb, err := s.findSandbox(ctx, "sandbox", req.GetSandbox(), req.GetWorkspaceScope())
			if err != nil {
				return nil, replayTarget{}, err
			}
			list, err := validateExposures([]*pb.SandboxServiceExposure{{Service: req.GetName(), TargetPort: req.GetTargetPort()}})
			if err != nil {
				return nil, replayTarget{}, err
			}
			e := list[0]
			// ExposeService is an upsert; the endpoint keeps its identity across updates.
			svc := sb.services[e.name]
			if svc == nil {
				svc = &serviceRec{meta: newMeta(e.name, wsName, nil, s.now()), name: e.name, mode: e.mode}
				sb.services[e.name] = svc
			} else {
				svc.meta.ResourceVersion++
			}
			svc.port = e.port
			return s.endpointProto(wsName, sb, svc), replayTarget{objectID: svc.meta.GetId(), resourceVersion: svc.meta.GetResourceVersion()}, nil
		},
		replay: func(rec *admission) (*pb.ServiceEndpointResponse, error) {
			sb := s.st.sandboxes[wsName][req.GetSandbox()]
			if sb == nil {
				return nil, errReplayUnavailable()
			}
			svc := sb.services[req.GetName()]
			if svc == nil || svc.meta.GetId() != rec.target.objectID || svc.meta.GetResourceVersion() != rec.target.resourceVersion {
				return nil, errReplayUnavailable()
			}
			return s.endpointProto(wsName, sb, svc), nil
		},
	})
}

func (g *gateway) DeleteService(ctx context.Context, req *pb.DeleteServiceRequest) (*pb.DeleteServiceResponse, error) {
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
	return admit(ctx, s, mutation[*pb.DeleteServiceResponse]{
		method: "DeleteService", scope: wsName, requestID: rid, request: req, protected: true,
		run: func() (*pb.DeleteServiceResponse, replayTarget, error) {
			_, sb, err := s.findSandbox(ctx, "sandbox", req.GetSandbox(), req.GetWorkspaceScope())
			if err != nil {
				return nil, replayTarget{}, err
			}
			if sb.services[req.GetName()] == nil {
				if req.GetAllowMissing() {
					return &pb.DeleteServiceResponse{Outcome: pb.DeletionOutcome_DELETION_OUTCOME_ALREADY_ABSENT}, replayTarget{}, nil
				}
				return nil, replayTarget{}, notFound("service endpoint not found")
			}
			delete(sb.services, req.GetName())
			return &pb.DeleteServiceResponse{Outcome: pb.DeletionOutcome_DELETION_OUTCOME_COMPLETED}, replayTarget{}, nil
		},
		replay: storedResponse[*pb.DeleteServiceResponse],
	})
}

// ---- test controls ----

// SetSandboxPhase pins a sandbox's reported phase (and exit code, for COMPLETED or ERROR),
// overriding what the Pod says; SANDBOX_PHASE_UNSPECIFIED unpins it.
func (s *Server) SetSandboxPhase(workspace, name string, phase pb.SandboxPhase, exitCode *int32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.st.sandboxes[workspace][name]
	if sb == nil {
		return fmt.Errorf("gateway emulator: sandbox %s/%s does not exist", workspace, name)
	}
	sb.pinned = phase
	sb.exitCode = exitCode
	sb.meta.ResourceVersion++
	return nil
}

// SandboxID returns the id of a sandbox, for tests that check Pod labels or logs.
func (s *Server) SandboxID(workspace, name string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.st.sandboxes[workspace][name]
	if sb == nil {
		return "", false
	}
	return sb.meta.GetId(), true
}
