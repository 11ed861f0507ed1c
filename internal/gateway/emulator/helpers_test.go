package emulator

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
	"github.com/openclaw/occ/internal/testbed"
)

func TestMain(m *testing.M) { os.Exit(testbed.Run(m)) }

// dial opens a raw generated client on the emulator.
func dial(t *testing.T, s *Server, opts ...grpc.DialOption) pb.OpenShellClient {
	t.Helper()
	return dialAddr(t, s.Addr(), opts...)
}

func dialAddr(t *testing.T, addr string, opts ...grpc.DialOption) pb.OpenShellClient {
	t.Helper()
	if len(opts) == 0 {
		opts = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	}
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		t.Fatalf("dial emulator: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return pb.NewOpenShellClient(conn)
}

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func scope(ws string) *pb.WorkspaceSelector {
	return &pb.WorkspaceSelector{Selection: &pb.WorkspaceSelector_Workspace{Workspace: ws}}
}

func rid() string { return uuid.NewString() }

func minimalSpec() *pb.SandboxSpec {
	return &pb.SandboxSpec{
		LogLevel: "info",
		Template: &pb.SandboxTemplate{Image: "example.com/harness:1", RuntimeClassName: "gvisor"},
		Command:  []string{"/usr/bin/harness", "serve"},
	}
}

func createWorkspace(ctx context.Context, t *testing.T, c pb.OpenShellClient, name string) *pb.Workspace {
	t.Helper()
	resp, err := c.CreateWorkspace(ctx, &pb.CreateWorkspaceRequest{Name: name, RequestId: rid()})
	if err != nil {
		t.Fatalf("CreateWorkspace %s: %v", name, err)
	}
	return resp.GetWorkspace()
}

func createSandbox(ctx context.Context, t *testing.T, c pb.OpenShellClient, ws, name string) *pb.SandboxResponse {
	t.Helper()
	resp, err := c.CreateSandbox(ctx, &pb.CreateSandboxRequest{Name: name, WorkspaceScope: scope(ws), Spec: minimalSpec(), RequestId: rid()})
	if err != nil {
		t.Fatalf("CreateSandbox %s/%s: %v", ws, name, err)
	}
	return resp
}

// wantCode fails unless err is a gRPC status with code.
func wantCode(t *testing.T, err error, code codes.Code) *status.Status {
	t.Helper()
	st, ok := status.FromError(err)
	if !ok || st.Code() != code {
		t.Fatalf("want %v, got %v", code, err)
	}
	return st
}

// wantReason fails unless err carries code and an ErrorInfo in the gateway domain with reason.
func wantReason(t *testing.T, err error, code codes.Code, reason string) *status.Status {
	t.Helper()
	st := wantCode(t, err, code)
	if got := reasonOf(st); got != reason {
		t.Fatalf("want ErrorInfo reason %q, got %q (%v)", reason, got, err)
	}
	return st
}

func reasonOf(st *status.Status) string {
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == ErrorDomain {
			return info.GetReason()
		}
	}
	return ""
}

func mustNot(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func statusOf(err error) (*status.Status, bool) { return status.FromError(err) }

func metadataCtx(ctx context.Context, token string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}
