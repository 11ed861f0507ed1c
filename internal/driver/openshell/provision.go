package openshell

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/gateway"
	"github.com/openclaw/occ/internal/gateway/openshellv1"
)

// internalAnnotationPrefix marks annotations the gateway adds to Sandboxes itself; they are
// the only difference an adopted Sandbox may have from the request.
const internalAnnotationPrefix = "internal.openshell.ai/"

// ProvisionHarness implements driver.Driver. It validates and renders the whole request first
// (RenderCreateSandbox), so every offline refusal happens before the gateway is touched. It
// then reads, all at once, what already exists under the revision's names: for Codex the
// Workspace's runtime provider profile and the revision's runtime provider (which the Sandbox
// lists last among its providers), and the Sandbox. Every refusal those reads justify comes
// next, still before the first mutation. Only then does it write, in dependency order: the
// profile, the provider, and the Sandbox, created at most once per revision with the revision
// UUID as request_id (then derived IDs after replay refusals), re-read after a concurrent
// ALREADY_EXISTS.
//
// An existing Sandbox is adopted only when its name, Workspace, labels, annotations and spec
// are exactly what this revision would create and it still serves (not deleting or stopped).
// Codex must end with its one bearer-passthrough app-server exposure; native OpenClaw with none.
func (d *Driver) ProvisionHarness(ctx context.Context, hctx driver.HarnessContext) (driver.SandboxResourceRef, error) {
	p, err := d.plan(hctx)
	if err != nil {
		return driver.SandboxResourceRef{}, err
	}
	if err := d.requireGateway("provisionHarness"); err != nil {
		return driver.SandboxResourceRef{}, err
	}
	// The workspace-node setup Secret is read and checked here, still before any gateway call.
	if err := d.resolveNodeEnrollment(ctx, hctx, p); err != nil {
		return driver.SandboxResourceRef{}, err
	}
	st, err := d.readProvisionState(ctx, p)
	if err != nil {
		return driver.SandboxResourceRef{}, redactSetupToken(err, p.runtime)
	}
	if p.runtime != nil {
		if err := st.runtime.check(p.workspace, p.runtime, time.Now()); err != nil {
			return driver.SandboxResourceRef{}, redactSetupToken(err, p.runtime)
		}
	}
	if st.sandbox != nil {
		if err := d.verifySandbox(ctx, p, st.sandbox); err != nil {
			return driver.SandboxResourceRef{}, err
		}
	}

	// Writes. The Sandbox names its runtime provider, so the profile and the provider come first.
	if err := d.applyRuntime(ctx, p.workspace, p.runtime, &st.runtime); err != nil {
		return driver.SandboxResourceRef{}, redactSetupToken(err, p.runtime)
	}
	if st.sandbox != nil {
		d.log.LogAttrs(ctx, slog.LevelDebug, "adopted existing OpenShell Sandbox", slog.String("sandbox", p.name), slog.String("workspace", p.workspace))
		return p.ref, nil
	}
	req := p.gatewayRequest()
	req.KnownAbsent = true
	res, err := d.gw.CreateSandbox(ctx, req)
	if err != nil {
		return driver.SandboxResourceRef{}, gatewayError("CreateSandbox", err)
	}
	if res.Sandbox == nil || res.Sandbox.Name != p.name {
		return driver.SandboxResourceRef{}, plain("OpenShell returned a different Sandbox name than requested.", nil)
	}
	if !res.Created {
		// A concurrent provision created it after the read.
		if err := d.verifySandbox(ctx, p, res.Sandbox); err != nil {
			return driver.SandboxResourceRef{}, err
		}
		d.log.LogAttrs(ctx, slog.LevelDebug, "adopted existing OpenShell Sandbox", slog.String("sandbox", p.name), slog.String("workspace", p.workspace))
		return p.ref, nil
	}
	if err := d.verifyCreatedExposure(ctx, p, res); err != nil {
		return driver.SandboxResourceRef{}, err
	}
	d.log.LogAttrs(ctx, slog.LevelDebug, "created OpenShell Sandbox", slog.String("sandbox", p.name), slog.String("workspace", p.workspace),
		slog.String("request_id", res.RequestID), slog.Bool("replayed", res.Replayed))
	// The pinned OpenShell registers the route before the Harness listens; a configured delay
	// keeps Compute from probing a route that cannot answer yet. A replayed create already
	// waited the first time.
	if d.cfg.StartupDelayMs != nil && !res.Replayed {
		if err := d.sleep(ctx, time.Duration(*d.cfg.StartupDelayMs)*time.Millisecond); err != nil {
			return driver.SandboxResourceRef{}, fmt.Errorf("wait %dms for OpenShell Sandbox %s to start: %w", *d.cfg.StartupDelayMs, p.name, err)
		}
	}
	return p.ref, nil
}

// provisionState is what provisioning reads before it decides anything.
type provisionState struct {
	runtime runtimeState
	// sandbox is the existing Sandbox of the revision's name; nil when there is none.
	sandbox *gateway.Sandbox
}

// readProvisionState issues provisioning's reads together. The runtime profile, the runtime
// provider and the Sandbox are independent objects, so their reads wait on nothing but the
// gateway: the wall time is one round trip instead of three. At most three calls are in flight
// for one provision. When reads fail, the error of the first in the sequential order (profile,
// provider, Sandbox) is returned, so the report does not depend on which answer came first.
func (d *Driver) readProvisionState(ctx context.Context, p *provisionPlan) (*provisionState, error) {
	st := &provisionState{}
	var wg sync.WaitGroup
	var profileErr, providerErr, sandboxErr error
	if p.runtime != nil {
		wg.Add(2)
		go func() {
			defer wg.Done()
			st.runtime.profile, profileErr = d.readRuntimeProfile(ctx, p.workspace, p.runtime.profile.ID)
		}()
		go func() {
			defer wg.Done()
			st.runtime.provider, providerErr = d.readRuntimeProvider(ctx, p.workspace, p.runtime.spec.Name)
		}()
	}
	sb, err := d.gw.GetSandbox(ctx, p.workspace, p.name)
	switch {
	case gateway.IsNotFound(err):
	case err != nil:
		sandboxErr = gatewayError("GetSandbox", fmt.Errorf("Sandbox %s in Workspace %s: %w", p.name, p.workspace, err))
	default:
		st.sandbox = sb
	}
	wg.Wait()
	for _, err := range []error{profileErr, providerErr, sandboxErr} {
		if err != nil {
			return nil, err
		}
	}
	return st, nil
}

// verifySandbox checks that an existing Sandbox of the revision's name can be adopted: the
// gateway answered with the name asked for, and verifyAdopted accepts it.
func (d *Driver) verifySandbox(ctx context.Context, p *provisionPlan, sb *gateway.Sandbox) error {
	if sb.Name != p.name {
		return plain("OpenShell returned a different Sandbox name than requested.", nil)
	}
	return d.verifyAdopted(ctx, p, sb)
}

// verifyCreatedExposure checks what a fresh (or replayed) create returned. A first-run answer
// carries the service URLs; a replay may not, in which case the live service is read instead.
func (d *Driver) verifyCreatedExposure(ctx context.Context, p *provisionPlan, res *gateway.CreateSandboxResult) error {
	if !p.codex {
		if len(res.ServiceURLs) > 0 {
			return plain("OpenShell exposed an unexpected service for the native OpenClaw Harness.", errorf("service names %q", slices.Sorted(maps.Keys(res.ServiceURLs))))
		}
		return nil
	}
	url, ok := res.ServiceURLs[""]
	if !ok && res.Replayed {
		return d.verifyCodexService(ctx, p)
	}
	if _, err := d.gw.ServiceURL(url); err != nil || len(res.ServiceURLs) != 1 {
		return plain(msgHarnessServiceURL, err)
	}
	return nil
}

// verifyCodexService requires the existing Sandbox's unnamed service to be exactly the
// bearer-passthrough app-server exposure this revision asks for.
func (d *Driver) verifyCodexService(ctx context.Context, p *provisionPlan) error {
	want := p.exposures[0]
	ep, err := d.gw.GetService(ctx, p.workspace, p.name, "")
	if err != nil && !gateway.IsNotFound(err) {
		return gatewayError("GetService", err)
	}
	if err != nil || ep.TargetPort != want.TargetPort || ep.AuthorizationMode != want.AuthorizationMode {
		return plain(fmt.Sprintf("OpenShell Sandbox %s exists without its exact bearer-passthrough Harness service; remove the stale Sandbox before retrying.", p.name), nil)
	}
	return nil
}

// verifyAdopted decides whether an existing Sandbox of this name is this revision's. Adopting
// anything else could hand the revision's traffic to a Harness with other code, policy or
// credentials, so any difference is a refusal, and the error says which part differs.
func (d *Driver) verifyAdopted(ctx context.Context, p *provisionPlan, sb *gateway.Sandbox) error {
	refuse := func(what string) error {
		return plain(fmt.Sprintf("Refusing OpenShell Sandbox %s without exact AgentRevision ownership and content.", p.name), errorf("its %s differs from revision %s", what, p.ref.RevisionID))
	}
	switch {
	case sb.Workspace != "" && sb.Workspace != p.workspace:
		return refuse("workspace")
	case !maps.Equal(sb.Labels, p.labels):
		return refuse("labels")
	case !ownAnnotationsEqual(sb.Annotations, p.annotations):
		return refuse("annotations")
	case !specEqual(sb.Spec, p.spec):
		return refuse("spec")
	}
	switch sb.Phase {
	case gateway.SandboxPhaseDeleting:
		return plain(fmt.Sprintf("OpenShell Sandbox %s is being deleted; it can be created again once deletion finishes.", p.name), nil)
	case gateway.SandboxPhaseStopping, gateway.SandboxPhaseStopped, gateway.SandboxPhaseCompleted:
		return plain(fmt.Sprintf("OpenShell Sandbox %s has stopped; remove the stale Sandbox before retrying.", p.name), nil)
	}
	if p.codex {
		return d.verifyCodexService(ctx, p)
	}
	return nil
}

// ownAnnotationsEqual compares annotations, ignoring the gateway's own internal keys.
func ownAnnotationsEqual(got, want map[string]string) bool {
	own := make(map[string]string, len(got))
	for k, v := range got {
		if !strings.HasPrefix(k, internalAnnotationPrefix) {
			own[k] = v
		}
	}
	return maps.Equal(own, want)
}

// specEqual compares a stored spec with the requested one field by field. Fields this client
// does not declare (a newer gateway's additions, such as the attachment epoch it sets itself)
// are not part of what the revision asked for, so they are ignored.
func specEqual(stored, want *openshellv1.SandboxSpec) bool {
	if stored == nil {
		return false
	}
	a, b := proto.Clone(stored), proto.Clone(want)
	discardUnknown(a.ProtoReflect())
	discardUnknown(b.ProtoReflect())
	return proto.Equal(a, b)
}

func discardUnknown(m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsList() && fd.Message() != nil:
			l := v.List()
			for i := 0; i < l.Len(); i++ {
				discardUnknown(l.Get(i).Message())
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, mv protoreflect.Value) bool {
				discardUnknown(mv.Message())
				return true
			})
		case fd.Message() != nil && !fd.IsList() && !fd.IsMap():
			discardUnknown(v.Message())
		}
		return true
	})
	if m.GetUnknown() != nil {
		m.SetUnknown(nil)
	}
}
