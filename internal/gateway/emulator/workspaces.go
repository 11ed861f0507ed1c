package emulator

import (
	"context"
	"strings"

	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
)

// gateway implements the generated service; its methods hold Server.mu for their whole body.
type gateway struct {
	pb.UnimplementedOpenShellServer
	s *Server
}

func (g *gateway) Health(context.Context, *pb.HealthRequest) (*pb.HealthResponse, error) {
	return &pb.HealthResponse{Status: pb.ServiceStatus_SERVICE_STATUS_HEALTHY, Version: g.s.opts.Version}, nil
}

func (g *gateway) GetWorkspace(_ context.Context, req *pb.GetWorkspaceRequest) (*pb.GetWorkspaceResponse, error) {
	s := g.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if req.GetName() == "" {
		return nil, invalidArgument("name", "workspace name is required")
	}
	ws := s.st.workspaces[req.GetName()]
	if ws == nil {
		return nil, notFound("workspace '%s' not found", req.GetName())
	}
	return &pb.GetWorkspaceResponse{Workspace: ws.proto()}, nil
}

func (g *gateway) CreateWorkspace(ctx context.Context, req *pb.CreateWorkspaceRequest) (*pb.CreateWorkspaceResponse, error) {
	s := g.s
	s.mu.Lock()
	defer s.mu.Unlock()
	rid, err := normalizeRequestID("request_id", req.GetRequestId())
	if err != nil {
		return nil, err
	}
	return admit(ctx, s, mutation[*pb.CreateWorkspaceResponse]{
		method: "CreateWorkspace", requestID: rid, request: req,
		run: func() (*pb.CreateWorkspaceResponse, replayTarget, error) {
			if err := validateShortName("name", "workspace", req.GetName()); err != nil {
				return nil, replayTarget{}, err
			}
			if _, ok := s.st.workspaces[req.GetName()]; ok {
				return nil, replayTarget{}, alreadyExists("workspace already exists")
			}
			ws := &workspaceRec{meta: newMeta(req.GetName(), "", req.GetLabels(), s.now()), phase: pb.WorkspacePhase_WORKSPACE_PHASE_ACTIVE}
			s.st.workspaces[ws.meta.Name] = ws
			return &pb.CreateWorkspaceResponse{Workspace: ws.proto()}, replayTarget{objectID: ws.meta.Id}, nil
		},
		replay: func(rec *admission) (*pb.CreateWorkspaceResponse, error) {
			ws := s.st.workspaces[req.GetName()]
			if ws == nil || ws.meta.Id != rec.target.objectID {
				return nil, errReplayUnavailable()
			}
			return &pb.CreateWorkspaceResponse{Workspace: ws.proto()}, nil
		},
	})
}

func (g *gateway) DeleteWorkspace(ctx context.Context, req *pb.DeleteWorkspaceRequest) (*pb.DeleteWorkspaceResponse, error) {
	s := g.s
	s.mu.Lock()
	defer s.mu.Unlock()
	rid, err := normalizeRequestID("request_id", req.GetRequestId())
	if err != nil {
		return nil, err
	}
	return admit(ctx, s, mutation[*pb.DeleteWorkspaceResponse]{
		method: "DeleteWorkspace", requestID: rid, request: req,
		run: func() (*pb.DeleteWorkspaceResponse, replayTarget, error) {
			name := req.GetName()
			if name == "" {
				return nil, replayTarget{}, invalidArgument("name", "workspace name is required")
			}
			if name == DefaultWorkspace {
				return nil, replayTarget{}, failedPrecondition("the default workspace cannot be deleted")
			}
			ws := s.st.workspaces[name]
			if ws == nil {
				if req.GetAllowMissing() {
					return &pb.DeleteWorkspaceResponse{Outcome: pb.DeletionOutcome_DELETION_OUTCOME_ALREADY_ABSENT}, replayTarget{}, nil
				}
				return nil, replayTarget{}, notFound("workspace not found")
			}
			// The gateway marks the workspace TERMINATING before it checks for contents, and a
			// refused delete leaves it so: nothing new can be created in it until it is gone.
			if ws.phase != pb.WorkspacePhase_WORKSPACE_PHASE_TERMINATING {
				ws.phase = pb.WorkspacePhase_WORKSPACE_PHASE_TERMINATING
				ws.meta.DeletionTime = timestamppb.New(s.now())
				ws.meta.ResourceVersion++
			}
			if left := s.st.contents(name); len(left) > 0 {
				return nil, replayTarget{}, failedPrecondition("workspace '%s' still contains resources: %s", name, strings.Join(left, ", "))
			}
			delete(s.st.workspaces, name)
			delete(s.st.sandboxes, name)
			delete(s.st.providers, name)
			// Unconfirmed: the v0.1 outcome of a synchronous workspace delete is taken to be
			// COMPLETED, as the generic upstream deletion helper answers.
			return &pb.DeleteWorkspaceResponse{Outcome: pb.DeletionOutcome_DELETION_OUTCOME_COMPLETED}, replayTarget{objectID: ws.meta.Id}, nil
		},
		replay: storedResponse[*pb.DeleteWorkspaceResponse],
	})
}

// activeWorkspace resolves the workspace a create addresses: it must exist and be ACTIVE.
func (st *state) activeWorkspace(name string) (*workspaceRec, error) {
	ws := st.workspaces[name]
	if ws == nil {
		return nil, notFound("workspace '%s' not found", name)
	}
	if ws.phase == pb.WorkspacePhase_WORKSPACE_PHASE_TERMINATING {
		return nil, failedPrecondition("workspace '%s' is being deleted", name)
	}
	return ws, nil
}

// existingWorkspace resolves the workspace a read or delete addresses.
func (st *state) existingWorkspace(name string) (*workspaceRec, error) {
	ws := st.workspaces[name]
	if ws == nil {
		return nil, notFound("workspace '%s' not found", name)
	}
	return ws, nil
}
