package openshell

import (
	"context"
	"errors"
	"fmt"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/gateway"
	"github.com/openclaw/occ/internal/gateway/openshellv1"
)

// Gateway is the part of the OpenShell gateway client the driver uses. *gateway.Client
// implements it; tests may wrap it to count or fail calls.
type Gateway interface {
	Health(ctx context.Context) (*gateway.Health, error)
	GetWorkspace(ctx context.Context, name string) (*gateway.Workspace, error)
	CreateWorkspace(ctx context.Context, name string, labels map[string]string) (*gateway.Workspace, error)
	DeleteWorkspace(ctx context.Context, name string) (gateway.DeletionOutcome, error)
	GetSandbox(ctx context.Context, workspace, name string) (*gateway.Sandbox, error)
	CreateSandbox(ctx context.Context, req gateway.CreateSandboxRequest) (*gateway.CreateSandboxResult, error)
	DeleteSandbox(ctx context.Context, workspace, name string) (*gateway.DeleteSandboxResult, error)
	GetService(ctx context.Context, workspace, sandbox, name string) (*gateway.ServiceEndpoint, error)
	ServiceURL(advertised string) (string, error)
	GetProvider(ctx context.Context, workspace, name string) (*gateway.Provider, error)
	ListProviders(ctx context.Context, workspace string) ([]*gateway.Provider, error)
	CreateProvider(ctx context.Context, workspace string, spec gateway.ProviderSpec) (*gateway.Provider, error)
	UpdateProvider(ctx context.Context, workspace string, u gateway.ProviderUpdate) (*gateway.Provider, error)
	DeleteProvider(ctx context.Context, workspace, name string) (gateway.DeletionOutcome, error)
	GetProviderProfile(ctx context.Context, workspace, id string) (*openshellv1.ProviderProfile, error)
	ImportProviderProfiles(ctx context.Context, workspace, source string, profiles ...*openshellv1.ProviderProfile) (*gateway.ProfileResult, error)
	UpdateProviderProfile(ctx context.Context, u gateway.ProfileUpdate) (*gateway.ProfileResult, error)
	DeleteProviderProfile(ctx context.Context, workspace, id string) (gateway.DeletionOutcome, error)
	GetSandboxProviderStatus(ctx context.Context, r gateway.ProviderStatusRequest) (*gateway.ProviderStatus, error)
	sandboxLogReader
}

// sandboxLogReader is the only call log reading may make. ReadSandboxLogs goes through this
// narrowed view, so it cannot create, delete or exec even by mistake.
type sandboxLogReader interface {
	GetSandboxLogs(ctx context.Context, r gateway.LogsRequest) (*gateway.Logs, error)
}

var _ Gateway = (*gateway.Client)(nil)

// admissionLimitMessage is the seed's SANDBOX_ADMISSION_LIMIT_REACHED sentence.
func admissionLimitMessage(method string) string {
	return fmt.Sprintf("OpenShell refused %s: the caller reached its limit of 1000 durable request admissions. "+
		"Completed records expire after 24 hours; unsuccessful ones have no reset API: inspect the Gateway database before redeploying.", method)
}

// gatewayError wraps a gateway failure with the operation it interrupted. The admission limit
// becomes the coded, retryable SANDBOX_ADMISSION_LIMIT_REACHED; other RESOURCE_EXHAUSTED
// answers were already retried by the client and pass through unchanged.
func gatewayError(method string, err error) error {
	if err == nil {
		return nil
	}
	if gateway.IsAdmissionLimit(err) {
		return &driver.Error{Code: driver.CodeAdmissionLimitReached, Message: admissionLimitMessage(method), Retryable: true, Err: err}
	}
	// Driver errors and the client's own errors already name the operation and the gateway.
	var de *driver.Error
	var ge *gateway.Error
	if errors.As(err, &de) || errors.As(err, &ge) {
		return err
	}
	return fmt.Errorf("OpenShell %s: %w", method, err)
}
