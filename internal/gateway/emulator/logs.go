package emulator

import (
	"context"
	"fmt"
	"strings"

	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
)

// Log sources.
const (
	SourceGateway = "gateway"
	SourceSandbox = "sandbox"
)

// logRing is the per-sandbox in-memory buffer, holding the newest logRingSize lines.
type logRing struct {
	lines []*pb.SandboxLogLine
}

func (r *logRing) append(l *pb.SandboxLogLine) {
	if len(r.lines) == logRingSize {
		copy(r.lines, r.lines[1:])
		r.lines = r.lines[:logRingSize-1]
	}
	r.lines = append(r.lines, l)
}

// levelRank orders the levels min_level can name; other levels (such as OCSF network events)
// have no rank and pass every level filter.
var levelRank = map[string]int{"TRACE": 0, "DEBUG": 1, "INFO": 2, "WARN": 3, "WARNING": 3, "ERROR": 4}

// AppendLogs adds lines to a sandbox's log buffer as its supervisor or the gateway would. Lines
// get the sandbox id, the source "sandbox" when none is set, and the emulator's current time
// when they carry no event_time.
func (s *Server) AppendLogs(workspace, sandbox string, lines ...*pb.SandboxLogLine) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sb := s.st.sandboxes[workspace][sandbox]
	if sb == nil {
		return fmt.Errorf("gateway emulator: sandbox %s/%s does not exist", workspace, sandbox)
	}
	ring := s.st.logs[sb.meta.GetId()]
	for _, l := range lines {
		l = clone(l)
		l.SandboxId = sb.meta.GetId()
		if l.Source == "" {
			l.Source = SourceSandbox
		}
		if l.EventTime == nil {
			l.EventTime = timestamppb.New(s.now())
		}
		ring.append(l)
	}
	return nil
}

func (g *gateway) GetSandboxLogs(ctx context.Context, req *pb.GetSandboxLogsRequest) (*pb.GetSandboxLogsResponse, error) {
	s := g.s
	s.mu.Lock()
	defer s.mu.Unlock()
	_, sb, err := s.findSandbox(ctx, "sandbox", req.GetSandbox(), req.GetWorkspaceScope())
	if err != nil {
		return nil, err
	}
	limit := int(req.GetLines())
	if limit == 0 || limit > logRingSize {
		limit = logRingSize
	}
	sources := map[string]bool{}
	for _, src := range req.GetSources() {
		sources[strings.ToLower(src)] = true
	}
	minRank, filterLevel := levelRank[strings.ToUpper(req.GetMinLevel())]
	if req.GetMinLevel() != "" && !filterLevel {
		return nil, invalidArgument("min_level", "min_level %q is not one of TRACE, DEBUG, INFO, WARN, ERROR", req.GetMinLevel())
	}
	ring := s.st.logs[sb.meta.GetId()]
	var match []*pb.SandboxLogLine
	for _, l := range ring.lines {
		src := l.GetSource()
		if src == "" {
			src = SourceGateway
		}
		if len(sources) > 0 && !sources[src] {
			continue
		}
		if rank, ranked := levelRank[strings.ToUpper(l.GetLevel())]; filterLevel && ranked && rank < minRank {
			continue
		}
		if since := req.GetSinceTime(); since != nil {
			if l.GetEventTime() == nil || l.GetEventTime().AsTime().Before(since.AsTime()) {
				continue
			}
		}
		match = append(match, l)
	}
	if len(match) > limit {
		match = match[len(match)-limit:]
	}
	resp := &pb.GetSandboxLogsResponse{BufferTotal: uint32(len(ring.lines))}
	for _, l := range match {
		resp.Logs = append(resp.Logs, clone(l))
	}
	return resp, nil
}
