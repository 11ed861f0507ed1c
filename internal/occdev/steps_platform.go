package occdev

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/occdev/state"
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

func describeRuntimeClass(*Plan) Description {
	return step.Objects(platform.DescribeRuntimeClass()...)
}

func ensureRuntimeClass(ctx context.Context, r *run, _ progress.Reporter) error {
	return platform.EnsureRuntimeClass(ctx, r.conn)
}

func describeAgentSandbox(p *Plan) Description {
	if p.AgentSandboxManifest != "" {
		return creates("the objects of the selected Agent Sandbox manifest " + p.AgentSandboxManifest + " (not checked against the pinned sha256; CRDs, namespace, controller)")
	}
	return creates("the objects of the pinned Agent Sandbox " + p.pins.AgentSandbox.Version + " manifest (verified against its sha256; CRDs, namespace, controller)")
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

func describeGateway(p *Plan) Description {
	svc := "Service " + p.Namespace + "/" + GatewayServiceName + " of type ClusterIP"
	if p.ServiceType == corev1.ServiceTypeNodePort {
		svc = fmt.Sprintf("Service %s/%s of type NodePort on port %d", p.Namespace, GatewayServiceName, p.NodePort)
	}
	var refs []string
	for _, img := range p.pins.GatewayImages() {
		refs = append(refs, img.Image.DigestReference())
	}
	return creates(
		"Helm release "+p.Namespace+"/"+GatewayRelease+" (Helm SDK; OpenShell "+p.pins.OpenShell.Version+" images by digest, pullPolicy "+string(p.PullPolicy)+": "+
			strings.Join(refs, ", ")+")",
		svc,
	)
}

// gatewayInstall is the Gateway install of the plan: the pinned images by digest, with
// pullPolicy Never where occ imported and verified them (k3d), IfNotPresent on a cluster that
// pulls them by digest itself.
func (r *run) gatewayInstall() platform.GatewayInstall {
	return platform.GatewayInstall{
		Namespace:   r.plan.Namespace,
		Chart:       r.charts.Gateway,
		Images:      r.plan.pins.OpenShell.Images,
		ServiceType: r.plan.ServiceType,
		NodePort:    r.plan.NodePort,
		PullPolicy:  r.plan.PullPolicy,
		Recorder:    r.state,
		Timeout:     r.plan.StartupTimeout,
	}
}

func describeGatewayRender(p *Plan) Description {
	r := p.GatewayRender
	return note(fmt.Sprintf("nothing created; renders the Gateway chart with the install's values and the capabilities of the cluster it will run on (Kubernetes %s from %s; API versions of %s), and refuses it unless every image it can make the cluster run (containers, their environment and flags, and the images its ConfigMaps name, such as gateway.toml's supervisor_image and sandbox_runtime_image) is one of the pinned digests, and each pinned image is named; gateway.toml's %s is left to the chart (every Sandbox OCE creates names its image)",
		r.KubernetesVersion, r.Source, r.APIVersions, platform.DefaultImageKey))
}

// checkGatewayRender refuses, before anything is installed, a Gateway chart whose render on
// the cluster it will run on fails, or would run anything but the pinned images.
func checkGatewayRender(_ context.Context, r *run, rep progress.Reporter) error {
	caps, err := r.renderCapabilities()
	if err != nil {
		return err
	}
	found, err := platform.CheckGatewayRender(r.gatewayInstall(), caps)
	if err != nil {
		return err
	}
	for _, u := range found.Unused {
		rep.Note(fmt.Sprintf("not pinned, never started: %s (%s)", u.FoundImage, u.Reason))
	}
	r.gatewayStarts = found.Started
	return nil
}

// installGateway installs the pinned Gateway chart.
func installGateway(ctx context.Context, r *run, _ progress.Reporter) error {
	gw, err := platform.InstallGateway(ctx, r.conn, r.gatewayInstall())
	if err != nil {
		return err
	}
	r.gateway = gw
	return nil
}

func describePolicies(p *Plan) Description {
	return step.Objects(platform.DescribeDevelopmentPolicies(p.Namespace)...)
}

func applyDevelopmentPolicies(ctx context.Context, r *run, _ progress.Reporter) error {
	return platform.ApplyDevelopmentPolicies(ctx, r.conn, r.plan.Namespace)
}

func describeWait(p *Plan) Description {
	return note(fmt.Sprintf("nothing created; waits by watch up to %s per workload", p.StartupTimeout))
}

// waitForPlatform waits until the Agent Sandbox controller and the Gateway workloads report
// every replica ready.
func waitForPlatform(ctx context.Context, r *run, rep progress.Reporter) error {
	workloads, err := platform.PlatformWorkloads(r.agentSandbox, r.gateway, r.plan.Namespace)
	if err != nil {
		return err
	}
	workloads = append(workloads, r.routingWorkloads()...)
	if err := platform.WaitForWorkloads(ctx, r.conn.Kube, workloads, r.plan.StartupTimeout, rep.Note); err != nil {
		return err
	}
	if len(r.routing) > 0 {
		return platform.WaitGatewayClassAccepted(ctx, r.conn, r.plan.StartupTimeout)
	}
	return nil
}

func describeHealth(p *Plan) Description {
	if p.GatewayEndpoint != "" {
		return note("nothing created; calls Health at " + p.GatewayEndpoint)
	}
	return note("nothing created; calls Health through a port-forward to a Gateway Pod")
}

func checkGatewayHealth(ctx context.Context, r *run, _ progress.Reporter) error {
	return platform.CheckGatewayHealth(ctx, r.conn, platform.HealthCheck{
		Endpoint: r.plan.GatewayEndpoint, Namespace: r.plan.Namespace, Timeout: r.plan.StartupTimeout,
	})
}

func describeInstallation(p *Plan) Description {
	return step.Describe(step.FileAt(filepath.Join(p.StateDir, InstallationFileName), platform.InstallationFileMode, "validated by the Sandbox Driver's rules"))
}

// writeInstallation builds the Installation, validates it with the driver's rules, writes it
// into the state directory and records where it is.
func writeInstallation(ctx context.Context, r *run, _ progress.Reporter) error {
	node := ""
	if r.plan.gateway == ControlPlaneCompose {
		var err error
		if node, err = r.provider.NodeAddress(ctx, r.conn.Access); err != nil {
			return err
		}
	}
	endpoint := platform.InstallationEndpoint(r.plan.gateway, r.plan.Namespace, node, r.plan.NodePort)
	path := r.state.File(InstallationFileName)
	in := platform.InstallationInput{
		ClusterName:        r.conn.Access.Name,
		Context:            r.conn.Access.Context,
		ControlPlane:       r.plan.gateway,
		Namespace:          r.plan.Namespace,
		GatewayEndpoint:    endpoint,
		GatewayClusterIP:   r.gateway.ClusterIP,
		WorkspaceResources: r.workspaceResources,
	}
	routing, err := r.routingInstallation(ctx)
	if err != nil {
		return err
	}
	in.Routing = routing
	if err := r.plan.profile.Installation(ctx, r, &in); err != nil {
		return err
	}
	if err := platform.WriteInstallation(path, in); err != nil {
		return err
	}
	if err := r.state.Update(func(s *state.State) { s.InstallationPath = path; s.GatewayEndpoint = endpoint }); err != nil {
		return fmt.Errorf("record the Installation in the state: %w", err)
	}
	r.installationPath, r.gatewayEndpoint = path, endpoint
	return nil
}
