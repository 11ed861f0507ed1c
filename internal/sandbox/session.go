// Package sandbox opens, from an Installation file, everything `occ sandbox` drives: the
// OpenShell Sandbox driver (which is also its paired Credential Gateway), the gateway client,
// Compute's Kubernetes clients and the Compute flow itself. It is the only place that knows
// both Kubernetes Compute and the OpenShell driver, so package compute stays driver-neutral
// and the CLI stays free of logic.
package sandbox

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	k8sclient "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/compute"
	"github.com/openclaw/occ/internal/driver/openshell"
	"github.com/openclaw/occ/internal/gateway"
	"github.com/openclaw/occ/internal/installation"
	"github.com/openclaw/occ/internal/kube"
)

// Options say where the Installation, the cluster and the gateway are.
type Options struct {
	// InstallationPath is the Installation YAML (--installation); "-" reads Stdin.
	InstallationPath string
	Stdin            io.Reader
	// Kubeconfig and KubeContext select the cluster the way kubectl does.
	Kubeconfig  string
	KubeContext string
	// Gateway, when set, replaces the openshell Backend's endpoint (host:port or an http(s)
	// origin): an emulator, or a port-forward to an in-cluster gateway. TLS and bearer token
	// settings still come from the Backend.
	Gateway string
	// Progress receives Compute's step events.
	Progress compute.Progress
	// Logger receives the driver's debug lines; nil discards them.
	Logger *slog.Logger
	// GatewayRetry tunes the gateway client's retries of transient failures; the zero value
	// takes the client's defaults.
	GatewayRetry gateway.RetryPolicy
	// PodTimeout and Gate tune Compute's waits; zero values take the defaults.
	PodTimeout time.Duration
	Gate       compute.AttachmentGate
}

// Offline is what the commands that touch neither cluster nor gateway need.
type Offline struct {
	Installation *installation.Installation
	Driver       *openshell.Driver
}

// LoadInstallation reads and validates the Installation ("-" reads stdin) and checks that it
// selects the OpenShell Sandbox driver `occ sandbox` drives.
func LoadInstallation(path string, stdin io.Reader) (*installation.Installation, error) {
	if path == "" {
		return nil, fmt.Errorf("--installation is required: pass the Installation YAML (for example the one `occ dev up` wrote)")
	}
	data, err := installation.ReadFile(path, stdin)
	if err != nil {
		return nil, err
	}
	in, err := installation.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("Installation %s: %w (check it with `occ sandbox validate %s`)", path, err, path)
	}
	if in.Drivers.Sandbox == nil {
		return nil, fmt.Errorf("Installation %s selects no drivers.sandbox: `occ sandbox` drives the OpenShell Sandbox driver; add drivers.sandbox", path)
	}
	return in, nil
}

// OpenOffline builds the driver without a gateway connection: configureAgent and render need
// nothing else.
func OpenOffline(path string, stdin io.Reader) (*Offline, error) {
	in, err := LoadInstallation(path, stdin)
	if err != nil {
		return nil, err
	}
	d, err := openshell.New(driverOptions(in, nil, nil))
	if err != nil {
		return nil, err
	}
	return &Offline{Installation: in, Driver: d}, nil
}

func driverOptions(in *installation.Installation, gw openshell.Gateway, log *slog.Logger) openshell.Options {
	return openshell.Options{
		ID:      in.Drivers.Sandbox.ID,
		Config:  in.Drivers.Sandbox.Configuration,
		Backend: in.OpenShellBackend(),
		Gateway: gw,
		Logger:  log,
	}
}

// Session is an open connection to one cluster and one gateway.
type Session struct {
	Installation *installation.Installation
	Driver       *openshell.Driver
	Gateway      *gateway.Client
	Kube         k8sclient.Interface
	Compute      *compute.Compute
}

// Open loads the Installation, connects to the cluster and prepares the gateway client (the
// first RPC contacts the gateway). Close releases the connection.
func Open(ctx context.Context, opts Options) (*Session, error) {
	in, err := LoadInstallation(opts.InstallationPath, opts.Stdin)
	if err != nil {
		return nil, err
	}
	if err := checkGateway(in, opts.InstallationPath, opts.Gateway); err != nil {
		return nil, err
	}
	restCfg, err := kube.RESTConfig(opts.Kubeconfig, opts.KubeContext)
	if err != nil {
		return nil, err
	}
	s, err := Connect(ctx, in, restCfg, opts)
	if err != nil {
		return nil, installationError(opts.InstallationPath, err)
	}
	return s, nil
}

// Connect builds a session from an Installation already loaded and validated and a cluster
// configuration; library callers and tests use it directly.
func Connect(ctx context.Context, in *installation.Installation, restCfg *rest.Config, opts Options) (*Session, error) {
	if in.Drivers.Sandbox == nil {
		return nil, fmt.Errorf("the Installation selects no drivers.sandbox: `occ sandbox` drives the OpenShell Sandbox driver; add drivers.sandbox")
	}
	baseline, err := compute.BaselineFromInstallation(in)
	if err != nil {
		return nil, err
	}
	gcfg, err := GatewayConfig(in.OpenShellBackend(), opts.Gateway)
	if err != nil {
		return nil, err
	}
	kc, err := k8sclient.NewForConfig(restCfg)
	if err != nil {
		return nil, fmt.Errorf("Kubernetes client: %w", err)
	}
	objects, err := kube.NewApplier(restCfg)
	if err != nil {
		return nil, err
	}
	d, gw, err := dialDriver(ctx, in, gcfg, opts)
	if err != nil {
		return nil, err
	}
	c := &compute.Compute{
		Kube:        kc,
		Objects:     objects,
		Driver:      d,
		Credentials: d,
		Baseline:    &baseline,
		Preflight:   Preflight(d),
		PodTimeout:  opts.PodTimeout,
		Gate:        opts.Gate,
		Progress:    opts.Progress,
	}
	return &Session{Installation: in, Driver: d, Gateway: gw, Kube: kc, Compute: c}, nil
}

// Close releases the gateway connection.
func (s *Session) Close() error {
	if s == nil || s.Gateway == nil {
		return nil
	}
	return s.Gateway.Close()
}

// dialDriver prepares the gateway client and the driver that uses it.
func dialDriver(ctx context.Context, in *installation.Installation, gcfg gateway.Config, opts Options) (*openshell.Driver, *gateway.Client, error) {
	gcfg.Retry = opts.GatewayRetry
	var dialOpts []gateway.DialOption
	if opts.Logger != nil {
		dialOpts = append(dialOpts, gateway.WithLogger(opts.Logger))
	}
	gw, err := gateway.Dial(ctx, gcfg, dialOpts...)
	if err != nil {
		return nil, nil, err
	}
	d, err := openshell.New(driverOptions(in, gw, opts.Logger))
	if err != nil {
		gw.Close()
		return nil, nil, err
	}
	return d, gw, nil
}

// GatewaySession is a connection to the gateway alone, for the operations that never touch the
// cluster: reading a revision's logs and revision shutdown. Both address the Sandbox by the name
// derived from the revision, so an engineer with only a port-forward to the gateway (and no
// kubeconfig) can still use them. It exposes nothing that would need Kubernetes.
type GatewaySession struct {
	Installation *installation.Installation
	Driver       *openshell.Driver
	Gateway      *gateway.Client
	compute      *compute.Compute
}

// OpenGateway loads the Installation and prepares the gateway client, reading no kubeconfig.
// Kubeconfig and KubeContext in opts are ignored. Close releases the connection.
func OpenGateway(ctx context.Context, opts Options) (*GatewaySession, error) {
	in, err := LoadInstallation(opts.InstallationPath, opts.Stdin)
	if err != nil {
		return nil, err
	}
	if err := checkGateway(in, opts.InstallationPath, opts.Gateway); err != nil {
		return nil, err
	}
	gcfg, err := GatewayConfig(in.OpenShellBackend(), opts.Gateway)
	if err != nil {
		return nil, installationError(opts.InstallationPath, err)
	}
	d, gw, err := dialDriver(ctx, in, gcfg, opts)
	if err != nil {
		return nil, installationError(opts.InstallationPath, err)
	}
	// Compute without a cluster client: only its gateway-only operations are reachable here.
	c := &compute.Compute{Driver: d, Credentials: d, Progress: opts.Progress}
	return &GatewaySession{Installation: in, Driver: d, Gateway: gw, compute: c}, nil
}

// ReadLogs reads the revision's Harness logs (GetSandboxLogs only).
func (s *GatewaySession) ReadLogs(ctx context.Context, rf *compute.RevisionFile, opts driver.LogOptions) (*driver.SandboxLogs, error) {
	return s.compute.ReadLogs(ctx, rf, opts)
}

// ShutdownRevision is revision shutdown: the driver deletes the revision's Sandbox and runtime
// provider by their derived names. It is safe to repeat.
func (s *GatewaySession) ShutdownRevision(ctx context.Context, rf *compute.RevisionFile) error {
	return s.compute.ShutdownRevision(ctx, rf)
}

// Close releases the gateway connection.
func (s *GatewaySession) Close() error {
	if s == nil || s.Gateway == nil {
		return nil
	}
	return s.Gateway.Close()
}

// GatewayConfig builds the gateway client configuration from the openshell Backend, with the
// endpoint optionally overridden. A refused override is a GatewayOverrideError.
func GatewayConfig(b *installation.OpenShellBackend, override string) (gateway.Config, error) {
	if err := checkGatewayOverride(override); err != nil {
		return gateway.Config{}, err
	}
	if b == nil {
		return gateway.Config{}, fmt.Errorf("the Installation has no backend entry of type openshell: add one with the gateway endpoint (it pairs drivers.sandbox with drivers.credential_gateway)")
	}
	c := b.Configuration
	cfg := gateway.Config{}
	switch {
	case override != "":
		cfg.Endpoint = override
	case c.Endpoint != nil && *c.Endpoint != "":
		cfg.Endpoint = *c.Endpoint
	case c.ServiceName != nil:
		return gateway.Config{}, fmt.Errorf("openshell Backend %s names the gateway Service %q, which resolves only inside the cluster: pass --gateway host:port (for example a port-forward to it)", b.ID, *c.ServiceName)
	default:
		return gateway.Config{}, fmt.Errorf("openshell Backend %s has no endpoint: set configuration.endpoint or pass --gateway host:port", b.ID)
	}
	if c.RootCertificatePath != nil {
		cfg.RootCertificatePath = *c.RootCertificatePath
	}
	if c.InsecureTransport != nil {
		cfg.InsecureTransport = *c.InsecureTransport
	}
	if c.RequestTimeoutMs != nil {
		cfg.RequestTimeout = time.Duration(*c.RequestTimeoutMs) * time.Millisecond
	}
	if c.Auth != nil && c.Auth.Mode == installation.AuthModeBearerTokenFile && c.Auth.Path != nil {
		cfg.BearerTokenFile = *c.Auth.Path
	}
	if err := cfg.Validate(); err != nil {
		if oe := overrideError(override, err); oe != err {
			return gateway.Config{}, oe
		}
		return gateway.Config{}, fmt.Errorf("openshell Backend %s: %w", b.ID, err)
	}
	return cfg, nil
}

// Preflight returns Compute's pre-mutation check for the OpenShell driver: it renders the exact
// CreateSandbox request (with the attachments the Credential Gateway will issue), which runs
// every refusal provisioning would make, and sends nothing.
func Preflight(d *openshell.Driver) func(driver.HarnessContext, []driver.CredentialSource) error {
	return func(hctx driver.HarnessContext, sources []driver.CredentialSource) error {
		hctx.Requirements.CredentialAttachments = PredictedAttachments(sources)
		_, err := d.RenderCreateSandbox(hctx)
		return err
	}
}

// PredictedAttachments are the attachments the paired Credential Gateway issues for the
// sources: one provider per source, named from the source ID.
func PredictedAttachments(sources []driver.CredentialSource) []driver.CredentialAttachment {
	var out []driver.CredentialAttachment
	for _, s := range sources {
		out = append(out, driver.CredentialAttachment{SourceID: s.ID, Ref: openshell.CredentialProviderName(s.ID)})
	}
	return out
}

// SandboxObserver reads the revision's Sandbox with GetSandbox.
func (s *Session) SandboxObserver() compute.SandboxObserver {
	return func(ctx context.Context, ns driver.Namespace, rev driver.Revision) (*compute.SandboxObservation, error) {
		name, err := openshell.SandboxName(s.Installation.Drivers.Sandbox.Configuration.EffectiveSandboxNamePrefix(), rev.ID)
		if err != nil {
			return nil, err
		}
		ws, err := openshell.WorkspaceName(ns.Name)
		if err != nil {
			return nil, err
		}
		obs := &compute.SandboxObservation{Name: name, State: compute.Absent}
		sb, err := s.Gateway.GetSandbox(ctx, ws, name)
		if gateway.IsNotFound(err) {
			return obs, nil
		}
		if err != nil {
			return obs, err
		}
		obs.State = compute.Present
		obs.Phase = sb.Phase.String()
		for _, c := range sb.Conditions {
			cond := c.Type + "=" + c.Status
			if c.Reason != "" {
				cond += " (" + c.Reason + ")"
			}
			obs.Conditions = append(obs.Conditions, cond)
		}
		return obs, nil
	}
}

// Render returns the exact CreateSandbox request provisioning would send first for the
// revision, as stable JSON, without a cluster or a gateway. It runs Compute's own offline
// checks first (driver pin, frozen configuration), then every check of the driver. The request
// carries only literal values: Secret references are refused, never resolved.
func (o *Offline) Render(rf *compute.RevisionFile) ([]byte, error) {
	c := &compute.Compute{Driver: o.Driver}
	plan, err := c.PlanRevision(rf)
	if err != nil {
		return nil, err
	}
	hctx := driver.HarnessContext{
		NamespaceContext: driver.NamespaceContext{Namespace: plan.Namespace},
		Revision:         plan.Revision,
		Requirements:     plan.Requirements,
	}
	hctx.Requirements.CredentialAttachments = PredictedAttachments(plan.Sources)
	req, err := o.Driver.RenderCreateSandbox(hctx)
	if err != nil {
		return nil, err
	}
	return openshell.MarshalRequestJSON(req)
}

// RenderNotes explains what Render's output for rf does not show: a workspace-node setup Secret
// that render does not read, and for native OpenClaw the retained session workers Kubernetes
// Compute keeps in the Harness (runtime.nativeOpenClawSessionCapacity), which the
// CreateSandbox request does not carry. Empty when there is nothing to add.
func (o *Offline) RenderNotes(rf *compute.RevisionFile) ([]string, error) {
	c := &compute.Compute{Driver: o.Driver}
	plan, err := c.PlanRevision(rf)
	if err != nil {
		return nil, err
	}
	notes := openshell.RenderNotes(driver.HarnessContext{
		NamespaceContext: driver.NamespaceContext{Namespace: plan.Namespace},
		Revision:         plan.Revision,
		Requirements:     plan.Requirements,
	})
	if h := plan.Revision.Harness; h.ID == driver.HarnessOpenClaw && h.Mode == driver.HarnessModeDedicated {
		notes = append(notes, fmt.Sprintf("native OpenClaw: Kubernetes Compute keeps up to %d retained native session workers in this Harness (drivers.compute.configuration.runtime.nativeOpenClawSessionCapacity, %d through %d, default %d); the CreateSandbox request does not carry it",
			o.Installation.NativeOpenClawSessionCapacity(), installation.MinNativeOpenClawSessionCapacity, installation.MaxNativeOpenClawSessionCapacity, installation.DefaultNativeOpenClawSessionCapacity))
	}
	return notes, nil
}

// ConfigureRevision returns a copy of the revision file whose configuration has been through
// the driver's configureAgent, ready to be frozen. A Harness environment holding a secret the
// driver would refuse to send (the raw app-server token) is refused here too, so a frozen
// revision never prints it.
func (o *Offline) ConfigureRevision(rf *compute.RevisionFile) (*compute.RevisionFile, error) {
	cfg, err := o.Driver.ConfigureAgent(rf.Configuration.Clone(), rf.Harness)
	if err != nil {
		return nil, err
	}
	req, err := rf.Requirements()
	if err != nil {
		return nil, fmt.Errorf("revision %s: %w", rf.RevisionID, err)
	}
	if err := o.Driver.CheckFrozenEnvironment(rf.Harness, req); err != nil {
		return nil, fmt.Errorf("revision %s: %w", rf.RevisionID, err)
	}
	out := *rf
	out.Configuration = cfg
	return &out, nil
}
