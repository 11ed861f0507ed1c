package occdev

import (
	"context"

	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/occdev/step"
	"github.com/openclaw/occ/internal/progress"
)

// The platform steps hand the platform layer its own inputs: the recording connection from
// the cluster lane, the artifacts from the artifacts lane, and the plan's names.

func describeNamespace(p *Plan) Description {
	return step.Objects(platform.DescribeNamespace(p.Namespace)...)
}

func ensurePlatformNamespace(ctx context.Context, r *run, _ progress.Reporter) error {
	return platform.EnsureNamespace(ctx, r.conn, r.plan.Namespace)
}

func describeRuntimeClass(*Plan) Description { return step.Objects(platform.DescribeRuntimeClass()...) }

func ensureRuntimeClass(ctx context.Context, r *run, _ progress.Reporter) error {
	return platform.EnsureRuntimeClass(ctx, r.conn)
}

func describeAgentSandbox(p *Plan) Description {
	return p.agentSandbox().DescribeApply(p.agentSandboxObjects)
}

func applyAgentSandbox(ctx context.Context, r *run, _ progress.Reporter) error {
	return platform.ApplyAgentSandbox(ctx, r.conn, r.agentSandbox, r.plan.StartupTimeout)
}

func describeJWTSecret(p *Plan) Description {
	return step.Objects(platform.DescribeJWTSecret(p.Namespace)...)
}

func ensureJWTSecret(ctx context.Context, r *run, _ progress.Reporter) error {
	return platform.EnsureJWTSecret(ctx, r.conn, r.plan.Namespace)
}

// gatewayInstall is the Gateway install of the plan p: the pinned images by digest, with
// pullPolicy Never where occ imported and verified them (k3d), IfNotPresent on a cluster that
// pulls them by digest itself. The run adds the chart and the recorder (run.gatewayInstall).
func gatewayInstall(p *Plan) platform.GatewayInstall {
	return platform.GatewayInstall{Namespace: p.Namespace, Images: p.pins.OpenShell.Images, ServiceType: p.ServiceType,
		NodePort: p.NodePort, PullPolicy: p.PullPolicy, Timeout: p.StartupTimeout}
}

func (r *run) gatewayInstall() platform.GatewayInstall {
	g := gatewayInstall(r.plan)
	g.Chart, g.Recorder = r.charts.Gateway, r.state
	return g
}

func describeGateway(p *Plan) Description {
	return gatewayInstall(p).Describe(p.pins.OpenShell.Version)
}

func describeGatewayRender(p *Plan) Description { return p.GatewayRender.Describe() }

// checkGatewayRender refuses, before anything is installed, a Gateway chart whose render on
// the cluster it will run on fails, or would run anything but the pinned images.
func checkGatewayRender(_ context.Context, r *run, rep progress.Reporter) error {
	caps, err := r.renderCapabilities()
	if err == nil {
		r.gatewayStarts, err = platform.GatewayStarts(r.gatewayInstall(), caps, rep.Note)
	}
	return err
}

func installGateway(ctx context.Context, r *run, _ progress.Reporter) (err error) {
	r.gateway, err = platform.InstallGateway(ctx, r.conn, r.gatewayInstall())
	return err
}

func describePolicies(p *Plan) Description {
	return step.Objects(platform.DescribeDevelopmentPolicies(p.Namespace)...)
}

func applyDevelopmentPolicies(ctx context.Context, r *run, _ progress.Reporter) error {
	return platform.ApplyDevelopmentPolicies(ctx, r.conn, r.plan.Namespace)
}

func describeWait(p *Plan) Description {
	return platform.PlatformWait{AgentSandbox: p.agentSandbox(), AgentSandboxObjects: p.agentSandboxObjects, Namespace: p.Namespace,
		Routing: p.Routing, RoutingControllers: p.routingControllers, Timeout: p.StartupTimeout}.Describe()
}

func waitForPlatform(ctx context.Context, r *run, rep progress.Reporter) error {
	return platform.WaitForPlatform(ctx, r.conn, r.agentSandbox, r.gateway, r.plan.Namespace, r.routing, r.plan.StartupTimeout, rep.Note)
}

// healthCheck is the Gateway Health check of the plan p.
func healthCheck(p *Plan) platform.HealthCheck {
	return platform.HealthCheck{Endpoint: p.GatewayEndpoint, Namespace: p.Namespace, Timeout: p.StartupTimeout}
}

func describeHealth(p *Plan) Description { return healthCheck(p).Describe() }

func checkGatewayHealth(ctx context.Context, r *run, _ progress.Reporter) error {
	return platform.CheckGatewayHealth(ctx, r.conn, healthCheck(r.plan))
}

func describeInstallation(p *Plan) Description { return platform.DescribeInstallation(p.StateDir) }

// writeInstallation builds the Installation of the run (the profile adds its part), validates
// it with the driver's rules, writes it into the state directory and records where it is.
func writeInstallation(ctx context.Context, r *run, _ progress.Reporter) (err error) {
	node := ""
	if r.plan.gateway == ControlPlaneCompose {
		if node, err = r.provider.NodeAddress(ctx, r.conn.Access); err != nil {
			return err
		}
	}
	in := platform.InstallationInput{ClusterName: r.conn.Access.Name, Context: r.conn.Access.Context, ControlPlane: r.plan.gateway,
		Namespace: r.plan.Namespace, GatewayClusterIP: r.gateway.ClusterIP, WorkspaceResources: r.workspaceResources,
		GatewayEndpoint: platform.InstallationEndpoint(r.plan.gateway, r.plan.Namespace, node, r.plan.NodePort)}
	if in.Routing, err = r.plan.Routing.Installation(ctx, r.conn, r.plan.Namespace); err != nil {
		return err
	}
	if err := r.plan.profile.Installation(ctx, r, &in); err != nil {
		return err
	}
	if r.installationPath, err = platform.WriteInstallationInto(r.state, in); err != nil {
		return err
	}
	r.gatewayEndpoint = in.GatewayEndpoint
	return nil
}
