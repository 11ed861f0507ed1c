package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/openclaw/occ/internal/gateway"
	pb "github.com/openclaw/occ/internal/gateway/openshellv1"
	"github.com/openclaw/occ/internal/syncbuf"
)

// A gateway that breaks its contract: it echoes credentials back unredacted, quotes them in
// error messages and details, and answers outside the contract. The emulator follows the
// contract, so these cases need a server of their own; it still speaks real gRPC over a real
// loopback listener.
type hostileGateway struct {
	pb.UnimplementedOpenShellServer
	canary     string
	logLines   int
	deleteGets atomic.Int32
}

func (h *hostileGateway) GetProvider(_ context.Context, req *pb.GetProviderRequest) (*pb.ProviderResponse, error) {
	return &pb.ProviderResponse{Provider: &pb.Provider{
		Metadata:    &pb.ObjectMeta{Name: req.GetName(), Labels: map[string]string{"a": "b"}},
		Type:        "openai",
		Credentials: map[string]string{"OPENAI_API_KEY": h.canary},
		Config:      map[string]string{"base_url": "https://api.openai.com"},
	}}, nil
}

func (h *hostileGateway) ListProviders(context.Context, *pb.ListProvidersRequest) (*pb.ListProvidersResponse, error) {
	return &pb.ListProvidersResponse{Providers: []*pb.Provider{{
		Metadata: &pb.ObjectMeta{Name: "p"}, Credentials: map[string]string{"k": h.canary},
	}}}, nil
}

func (h *hostileGateway) CreateProvider(_ context.Context, req *pb.CreateProviderRequest) (*pb.ProviderResponse, error) {
	var echoed string
	for _, v := range req.GetProvider().GetCredentials() {
		echoed = v
	}
	st, _ := status.New(codes.InvalidArgument, "credential "+echoed+" is not accepted").WithDetails(
		&errdetails.ErrorInfo{Reason: "INVALID_ARGUMENT", Domain: gateway.ErrorDomain, Metadata: map[string]string{"credential": echoed}})
	return nil, st.Err()
}

func (h *hostileGateway) GetSandboxLogs(_ context.Context, req *pb.GetSandboxLogsRequest) (*pb.GetSandboxLogsResponse, error) {
	resp := &pb.GetSandboxLogsResponse{}
	for i := range h.logLines {
		resp.Logs = append(resp.Logs, &pb.SandboxLogLine{Message: fmt.Sprint("line ", i)})
	}
	return resp, nil
}

func (h *hostileGateway) GetSandbox(_ context.Context, req *pb.GetSandboxRequest) (*pb.SandboxResponse, error) {
	if req.GetName() == "deleting" {
		// The record lingers for two reads after an ACCEPTED delete, then is gone.
		if h.deleteGets.Add(1) > 2 {
			return nil, status.Error(codes.NotFound, "sandbox not found")
		}
		return &pb.SandboxResponse{Sandbox: &pb.Sandbox{Metadata: &pb.ObjectMeta{Id: "id-1", Name: "deleting"},
			Status: &pb.SandboxStatus{Phase: pb.SandboxPhase_SANDBOX_PHASE_DELETING}}}, nil
	}
	return &pb.SandboxResponse{Sandbox: &pb.Sandbox{Metadata: &pb.ObjectMeta{Name: "someone-else"}}}, nil
}

func (h *hostileGateway) DeleteSandbox(context.Context, *pb.DeleteSandboxRequest) (*pb.DeleteSandboxResponse, error) {
	return &pb.DeleteSandboxResponse{Outcome: pb.DeletionOutcome_DELETION_OUTCOME_ACCEPTED, SandboxId: "id-1"}, nil
}

func (h *hostileGateway) DeleteWorkspace(context.Context, *pb.DeleteWorkspaceRequest) (*pb.DeleteWorkspaceResponse, error) {
	return &pb.DeleteWorkspaceResponse{Outcome: pb.DeletionOutcome_DELETION_OUTCOME_ACCEPTED}, nil
}

func (h *hostileGateway) GetSandboxProviderStatus(context.Context, *pb.GetSandboxProviderStatusRequest) (*pb.GetSandboxProviderStatusResponse, error) {
	return &pb.GetSandboxProviderStatusResponse{}, nil
}

func startHostile(t *testing.T, h *hostileGateway) (*gateway.Client, *syncbuf.Buffer) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	pb.RegisterOpenShellServer(srv, h)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	tg := &target{cfg: gateway.Config{Endpoint: lis.Addr().String(), InsecureTransport: gateway.InsecureTransportNetworkPolicy}, logs: &syncbuf.Buffer{}}
	return tg.client(t, fastRetry), tg.logs
}

// Credential Gateway: a provider read never copies a credential value out of the response,
// and a credential the gateway echoes into an error never reaches the error text or the logs.
func TestCredentialCanaryNeverLeavesTheClient(t *testing.T) {
	const canary = "sk-canary-response-4c1d"
	const requestCanary = "sk-canary-request-77aa"
	c, logs := startHostile(t, &hostileGateway{canary: canary})
	ctx := testContext(t)

	p, err := c.GetProvider(ctx, "w", "p")
	if err != nil {
		t.Fatalf("GetProvider: %v", err)
	}
	if len(p.CredentialKeys) != 1 || p.CredentialKeys[0] != "OPENAI_API_KEY" || p.Config["base_url"] == "" {
		t.Fatalf("provider = %+v, want the credential key and the config", p)
	}
	list, err := c.ListProviders(ctx, "w")
	if err != nil {
		t.Fatalf("ListProviders: %v", err)
	}
	_, createErr := c.CreateProvider(ctx, "w", gateway.ProviderSpec{Name: "p", Type: "openai", Credentials: gateway.Secrets{"OPENAI_API_KEY": requestCanary}})
	var gerr *gateway.Error
	if !errors.As(createErr, &gerr) || gerr.Code != codes.InvalidArgument {
		t.Fatalf("CreateProvider = %v, want the gateway's INVALID_ARGUMENT", createErr)
	}
	texts := map[string]string{
		"provider (%+v)":       fmt.Sprintf("%+v", p),
		"provider (%#v)":       fmt.Sprintf("%#v", p),
		"list (%+v)":           fmt.Sprintf("%+v", list),
		"create error":         createErr.Error(),
		"create error details": fmt.Sprint(gerr.Metadata),
		"client logs":          logs.String(),
	}
	assertNoCanary(t, canary, texts)
	assertNoCanary(t, requestCanary, texts)
}

// Answers outside the contract are refused, not passed on as if they were valid.
func TestContractViolationsAreRefused(t *testing.T) {
	h := &hostileGateway{logLines: 11}
	c, _ := startHostile(t, h)
	ctx := testContext(t)

	if _, err := c.GetSandboxLogs(ctx, gateway.LogsRequest{Workspace: "w", Sandbox: "sb", Lines: 10}); !errors.Is(err, gateway.ErrInvalidResponse) ||
		!strings.Contains(err.Error(), "OpenShell GetSandboxLogs returned too many lines") {
		t.Fatalf("11 lines for 10 requested = %v, want the too-many-lines refusal", err)
	}
	if _, err := c.GetSandbox(ctx, "w", "sb"); !errors.Is(err, gateway.ErrInvalidResponse) {
		t.Fatalf("GetSandbox answered with another sandbox = %v, want ErrInvalidResponse", err)
	}
	if _, err := c.GetSandboxProviderStatus(ctx, gateway.ProviderStatusRequest{Workspace: "w", Sandbox: "sb", Provider: "p"}); !errors.Is(err, gateway.ErrInvalidResponse) ||
		!strings.Contains(err.Error(), "no readiness state") {
		t.Fatalf("status without a state = %v, want a refusal", err)
	}
	// An ACCEPTED workspace delete is not a confirmed deletion.
	outcome, err := c.DeleteWorkspace(ctx, "w")
	var oe *gateway.OutcomeError
	if !errors.As(err, &oe) || outcome != gateway.OutcomeAccepted || !errors.Is(err, gateway.ErrDeletionNotConfirmed) {
		t.Fatalf("DeleteWorkspace ACCEPTED = %v, %v; want an OutcomeError", outcome, err)
	}
}

// An ACCEPTED sandbox delete is followed by GetSandbox polls until the record is gone.
func TestDeleteSandboxPollsUntilGoneAfterAccepted(t *testing.T) {
	h := &hostileGateway{}
	c, _ := startHostile(t, h)
	res, err := c.DeleteSandbox(testContext(t), "w", "deleting")
	if err != nil {
		t.Fatalf("DeleteSandbox: %v", err)
	}
	if res.Outcome != gateway.OutcomeAccepted || res.SandboxID != "id-1" {
		t.Fatalf("result = %+v", res)
	}
	if n := h.deleteGets.Load(); n != 3 {
		t.Fatalf("GetSandbox polled %d times, want 3 (two lingering reads, then NOT_FOUND)", n)
	}
}
