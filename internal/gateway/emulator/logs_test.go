package emulator

import (
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
)

// `occ sandbox logs` reads the tail of the ring buffer with source, level and time filters.
func TestSandboxLogs(t *testing.T) {
	clock := NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := StartT(t, Options{Clock: clock.Now})
	c := dial(t, s)
	ctx := ctxT(t)
	created := createSandbox(ctx, t, c, DefaultWorkspace, "box")
	t0 := clock.Now()
	mustNot(t, s.AppendLogs(DefaultWorkspace, "box",
		&pb.SandboxLogLine{Level: "INFO", Message: "starting", Source: SourceGateway},
		&pb.SandboxLogLine{Level: "DEBUG", Message: "noise"},
		&pb.SandboxLogLine{Level: "OCSF", Target: "ocsf", Message: "egress allowed", Fields: map[string]string{"dst_host": "api.example.com", "action": "allow"}},
		&pb.SandboxLogLine{Level: "ERROR", Message: "late", EventTime: timestamppb.New(t0.Add(time.Minute))},
	))
	read := func(req *pb.GetSandboxLogsRequest) []string {
		t.Helper()
		req.Sandbox = "box"
		resp, err := c.GetSandboxLogs(ctx, req)
		mustNot(t, err)
		if resp.GetBufferTotal() != 4 {
			t.Fatalf("buffer_total = %d", resp.GetBufferTotal())
		}
		var out []string
		for _, l := range resp.GetLogs() {
			if l.GetSandboxId() != created.GetSandbox().GetMetadata().GetId() {
				t.Fatalf("line carries sandbox_id %q", l.GetSandboxId())
			}
			out = append(out, l.GetMessage())
		}
		return out
	}
	if got := fmt.Sprint(read(&pb.GetSandboxLogsRequest{})); got != "[starting noise egress allowed late]" {
		t.Fatalf("all lines = %s", got)
	}
	if got := fmt.Sprint(read(&pb.GetSandboxLogsRequest{Lines: 2})); got != "[egress allowed late]" {
		t.Fatalf("tail 2 = %s", got)
	}
	if got := fmt.Sprint(read(&pb.GetSandboxLogsRequest{Sources: []string{SourceGateway}})); got != "[starting]" {
		t.Fatalf("gateway lines = %s", got)
	}
	if got := fmt.Sprint(read(&pb.GetSandboxLogsRequest{MinLevel: "INFO"})); got != "[starting egress allowed late]" {
		t.Fatalf("INFO and up = %s", got)
	}
	if got := fmt.Sprint(read(&pb.GetSandboxLogsRequest{SinceTime: timestamppb.New(t0.Add(time.Second))})); got != "[late]" {
		t.Fatalf("since = %s", got)
	}
}

// The buffer keeps the newest 2000 lines per sandbox.
func TestSandboxLogsRingBound(t *testing.T) {
	s := StartT(t, Options{})
	c := dial(t, s)
	ctx := ctxT(t)
	createSandbox(ctx, t, c, DefaultWorkspace, "box")
	lines := make([]*pb.SandboxLogLine, 2100)
	for i := range lines {
		lines[i] = &pb.SandboxLogLine{Level: "INFO", Message: fmt.Sprint(i)}
	}
	mustNot(t, s.AppendLogs(DefaultWorkspace, "box", lines...))
	resp, err := c.GetSandboxLogs(ctx, &pb.GetSandboxLogsRequest{Sandbox: "box"})
	mustNot(t, err)
	if resp.GetBufferTotal() != 2000 || len(resp.GetLogs()) != 2000 || resp.GetLogs()[0].GetMessage() != "100" {
		t.Fatalf("buffer_total %d, %d lines, first %q", resp.GetBufferTotal(), len(resp.GetLogs()), resp.GetLogs()[0].GetMessage())
	}
}
