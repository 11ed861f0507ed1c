package openshell

import (
	"context"
	"log/slog"
	"time"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/installation"
)

// DefaultID is the driver id when the Installation does not name one.
const DefaultID = "sandbox-openshell-local"

// Options configure a Driver.
type Options struct {
	// ID is drivers.sandbox.id; revisions pin it as sandboxDriverId.
	ID string
	// Config is drivers.sandbox.configuration, already decoded and validated by package
	// installation. The driver keeps its own copy.
	Config installation.SandboxConfiguration
	// Backend is the openshell Backend entry. When set, it must name this driver as its sandbox
	// member: the Backend is what pairs the Sandbox with its Credential Gateway.
	Backend *installation.OpenShellBackend
	// Gateway is the connected gateway client. It may be nil for the offline operations
	// (ConfigureAgent, ValidateWorkspaceSetup, RenderCreateSandbox); the others then fail.
	Gateway Gateway
	// Logger receives progress at debug level; nil discards it. Nothing logged ever contains a
	// Secret value or environment value.
	Logger *slog.Logger
	// Sleep waits for d or until ctx ends; tests replace it. nil uses a timer.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Driver is the bundled OpenShell SandboxDriver, paired with the OpenShell Credential Gateway
// through the openshell Backend. It implements driver.Driver, driver.CredentialGateway and
// driver.LogReader.
type Driver struct {
	id      string
	cfg     installation.SandboxConfiguration
	gw      Gateway
	log     *slog.Logger
	sleep   func(ctx context.Context, d time.Duration) error
	backend *installation.OpenShellBackend
}

var (
	_ driver.Driver            = (*Driver)(nil)
	_ driver.CredentialGateway = (*Driver)(nil)
	_ driver.SourceChecker     = (*Driver)(nil)
	_ driver.LogReader         = (*Driver)(nil)
)

// New checks the parts of the configuration the driver's own behaviour depends on and returns
// the driver. Full Installation validation (unknown keys, quantities, …) is package
// installation's job and must have passed before.
func New(opts Options) (*Driver, error) {
	id := opts.ID
	if id == "" {
		id = DefaultID
	}
	if opts.Backend != nil && opts.Backend.Drivers.Sandbox != id {
		return nil, plain("The OpenShell Backend does not declare this Sandbox Driver as a member.",
			errorf("backend %q names sandbox driver %q, not %q", opts.Backend.ID, opts.Backend.Drivers.Sandbox, id))
	}
	switch opts.Config.Gateway.WorkspaceMode {
	case installation.WorkspaceModeOperator, installation.WorkspaceModeManaged:
	default:
		return nil, plain("OpenShell gateway workspaceMode must be managed or operator.", errorf("gateway.workspaceMode is %q", opts.Config.Gateway.WorkspaceMode))
	}
	if _, err := SandboxName(opts.Config.EffectiveSandboxNamePrefix(), "rev_"); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sleep := opts.Sleep
	if sleep == nil {
		sleep = sleepContext
	}
	return &Driver{id: id, cfg: opts.Config, gw: opts.Gateway, log: log, sleep: sleep, backend: opts.Backend}, nil
}

func sleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ID implements driver.Driver.
func (d *Driver) ID() string { return d.id }

// Facets implements driver.Driver: OpenShell enforces all three containment facets, which is
// what native OpenClaw requires.
func (d *Driver) Facets() []driver.Facet {
	return []driver.Facet{driver.FacetNetworking, driver.FacetFilesystem, driver.FacetProcess}
}

// DataMountPath is the Sandbox data mount (kubernetes.sandboxDataMount.mountPath).
func (d *Driver) DataMountPath() string { return d.cfg.Kubernetes.SandboxDataMount.MountPath }

// ConfigureAgent implements driver.Driver; see the package function ConfigureAgent. It is the
// Agent save hook, so it also refuses a dedicated OpenClaw revision this configuration cannot
// contain, or whose roster makes an Agent other than main the default.
func (d *Driver) ConfigureAgent(configuration driver.Configuration, harness driver.Harness) (driver.Configuration, error) {
	out, err := ConfigureAgent(configuration, harness, d.DataMountPath())
	if err != nil {
		return nil, err
	}
	if err := d.checkNativeContainment(harness); err != nil {
		return nil, err
	}
	if err := checkNativeRoster(out, harness); err != nil {
		return nil, err
	}
	return out, nil
}

// ValidateWorkspaceSetup checks initial workspace files; see the package function. Like
// ConfigureAgent it refuses dedicated OpenClaw on a configuration that cannot contain it.
func (d *Driver) ValidateWorkspaceSetup(configuration driver.Configuration, harness driver.Harness, setup WorkspaceSetup) error {
	if err := checkNativeRoster(configuration, harness); err != nil {
		return err
	}
	if err := ValidateWorkspaceSetup(configuration, harness, d.DataMountPath(), setup); err != nil {
		return err
	}
	return d.checkNativeContainment(harness)
}

func (d *Driver) operator() bool {
	return d.cfg.Gateway.WorkspaceMode == installation.WorkspaceModeOperator
}

// requireGateway refuses an operation that needs the gateway on an offline driver.
func (d *Driver) requireGateway(op string) error {
	if d.gw == nil {
		return errorf("OpenShell %s needs a gateway connection: configure the openshell Backend endpoint", op)
	}
	return nil
}
