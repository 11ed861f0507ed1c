package occdev

import (
	"github.com/openclaw/occ/internal/occdev/charts"
	"github.com/openclaw/occ/internal/occdev/cluster/k3d"
	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/occdev/state"
)

// The reference's variables of the local selections; the CLI binds each to its flag.
const (
	EnvGatewayChart         = charts.EnvGatewayChart
	EnvWorkspaceChart       = charts.EnvWorkspaceChart
	EnvAgentSandboxManifest = platform.EnvAgentSandboxManifest
	EnvK3sImage             = k3d.EnvK3sImage
)

// optAgentSandboxManifest names the local Agent Sandbox manifest's setting in messages.
var optAgentSandboxManifest = platform.AgentSandboxSetting.String()

// resolveSelections checks the local charts, the local Agent Sandbox manifest and the render's
// Kubernetes version. The charts are loaded now, so a path that is not the right chart is a bad
// setting before anything runs.
func resolveSelections(p *Plan, o UpOptions) (err error) {
	sel := charts.Selection{Gateway: o.GatewayChart, Workspace: o.WorkspaceChart, Archive: o.ArchiveFile, ArchiveSetting: archiveSetting}
	if p.selectedCharts, err = charts.Select(sel, p.pins.OpenShell.Charts); err != nil {
		return err
	}
	if p.selectedCharts != nil {
		p.GatewayChart, p.WorkspaceChart = p.selectedCharts.GatewayPackage, p.selectedCharts.WorkspacePackage
	}
	if p.AgentSandboxManifest, err = platform.SelectAgentSandbox(o.AgentSandboxManifest); err != nil {
		return err
	}
	in := platform.GatewayRenderInput{K3s: p.pins.K3s.Image, Existing: p.ClusterProvider == ProviderExisting,
		PinFile: p.PinFile, PinFileSetting: pinFileSetting, Manifest: p.agentSandbox()}
	if p.NodeImage != nil {
		in.SelectedBy = EnvK3sImage
	}
	p.GatewayRender, err = platform.PlanGatewayRender(in)
	return err
}

// selections are what the state records of the plan's selections; nil when there are none.
func (p *Plan) selections() *state.Selections {
	s := state.Selections{GatewayChart: p.GatewayChart, WorkspaceChart: p.WorkspaceChart, AgentSandboxManifest: p.AgentSandboxManifest,
		Bundle: p.Bundle, Offline: p.Offline}
	if p.NodeDNS != nil {
		s.DNSResolver = p.NodeDNS.Address
	}
	if s == (state.Selections{}) {
		return nil
	}
	return &s
}

// renderCapabilities are the capabilities the Gateway chart's offline render sees, from the
// plan and the parsed Agent Sandbox manifest.
func (r *run) renderCapabilities() (platform.ClusterCapabilities, error) {
	return r.plan.agentSandbox().RenderCapabilities(r.plan.GatewayRender, r.agentSandbox)
}
