package occdev

import (
	"fmt"
	"path"
	"path/filepath"

	helmchart "helm.sh/helm/v3/pkg/chart"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/occdev/charts"
	"github.com/openclaw/occ/internal/occdev/cluster/k3d"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/occdev/state"
)

// The reference's variables of the local selections; the CLI binds each to its flag.
const (
	EnvGatewayChart         = "OCC_DEVELOPMENT_OPENSHELL_HELM_CHART"
	EnvWorkspaceChart       = "OCC_DEVELOPMENT_OPENSHELL_WORKSPACE_HELM_CHART"
	EnvAgentSandboxManifest = "OCC_DEVELOPMENT_OPENSHELL_AGENT_SANDBOX_MANIFEST"
	EnvDNSResolver          = k3d.EnvDNSResolver
	EnvK3sImage             = k3d.EnvK3sImage
)

// How the selections are named in errors: flag and variable.
const (
	optGatewayChart         = "--openshell-helm-chart (" + EnvGatewayChart + ")"
	optWorkspaceChart       = "--openshell-workspace-helm-chart (" + EnvWorkspaceChart + ")"
	optAgentSandboxManifest = "--agent-sandbox-manifest (" + EnvAgentSandboxManifest + ")"
)

// GatewayRenderPlan is what the offline render of the Gateway chart assumes of the cluster it
// will run on: the Kubernetes version, where it comes from, and where the served API versions
// beyond Helm's defaults come from.
type GatewayRenderPlan struct {
	KubernetesVersion string `json:"kubernetesVersion"`
	Source            string `json:"kubernetesVersionSource"`
	APIVersions       string `json:"apiVersions"`
}

// resolveSelections checks the local charts, the local Agent Sandbox manifest and the render's
// Kubernetes version. The charts are loaded now, so a path that is not the right chart is a bad
// setting before anything runs.
func resolveSelections(p *Plan, o UpOptions) error {
	if (o.GatewayChart == "") != (o.WorkspaceChart == "") {
		set, setOpt, unsetOpt := o.GatewayChart, optGatewayChart, optWorkspaceChart
		if set == "" {
			set, setOpt, unsetOpt = o.WorkspaceChart, optWorkspaceChart, optGatewayChart
		}
		return &OptionError{Option: setOpt, Value: set,
			Rule: "is set without " + unsetOpt + ": the Gateway and Workspace charts are selected together, both or neither",
			Fix:  "set both to the charts of one OpenShell checkout (deploy/helm/openshell and deploy/helm/openshell-workspace), or neither to use the pinned archive"}
	}
	if o.GatewayChart != "" {
		if o.ArchiveFile != "" {
			return &OptionError{Option: "--openshell-archive (" + EnvArchive + ")", Value: o.ArchiveFile,
				Rule: "is not used when both OpenShell charts are selected (" + EnvGatewayChart + ", " + EnvWorkspaceChart + "): the archive is only the charts' source",
				Fix:  "drop it, or drop the chart selections to install the archive's charts"}
		}
		sel := &charts.Charts{}
		for _, c := range []struct {
			opt, raw, pinned, other string
			dst                     **helmchart.Chart
			path                    *string
		}{
			{optGatewayChart, o.GatewayChart, p.pins.OpenShell.Charts.Gateway, p.pins.OpenShell.Charts.Workspace, &sel.Gateway, &p.GatewayChart},
			{optWorkspaceChart, o.WorkspaceChart, p.pins.OpenShell.Charts.Workspace, p.pins.OpenShell.Charts.Gateway, &sel.Workspace, &p.WorkspaceChart},
		} {
			abs, err := filepath.Abs(c.raw)
			if err != nil {
				return &OptionError{Option: c.opt, Value: c.raw, Rule: "is not a usable path (" + err.Error() + ")", Fix: "name the chart directory or packaged chart"}
			}
			ch, err := charts.LoadLocal(abs, path.Base(c.other))
			if err != nil {
				return &OptionError{Option: c.opt, Value: c.raw, Rule: err.Error(),
					Fix: "name the " + path.Base(c.pinned) + " chart: a directory holding its Chart.yaml (" + c.pinned + " of an OpenShell checkout) or its packaged .tgz"}
			}
			*c.dst, *c.path = ch, abs
		}
		sel.GatewayPackage, sel.WorkspacePackage = p.GatewayChart, p.WorkspaceChart
		p.selectedCharts = sel
	}
	if o.AgentSandboxManifest != "" {
		abs, err := filepath.Abs(o.AgentSandboxManifest)
		if err == nil {
			err = option.RegularFile(abs)
		}
		if err != nil {
			return &OptionError{Option: optAgentSandboxManifest, Value: o.AgentSandboxManifest, Rule: err.Error(),
				Fix: "name a local copy of the Agent Sandbox release manifest (sandbox.yaml), or leave it unset to download the pinned one"}
		}
		p.AgentSandboxManifest = abs
	}
	kv, err := platform.K3sKubernetesVersion(p.pins.K3s.Image)
	if err != nil {
		pinFile := p.PinFile
		if pinFile == "" {
			pinFile = "the pins built into occ"
		}
		return &OptionError{Option: "--pin-file (" + EnvPinFile + ")", Value: pinFile, Rule: err.Error(), Fix: "pin k3s.image with its release tag"}
	}
	source := "the pinned k3s image "
	if p.NodeImage != nil {
		source = "the k3s image " + EnvK3sImage + " selects, "
	}
	p.GatewayRender = GatewayRenderPlan{KubernetesVersion: kv, Source: source + p.pins.K3s.Image.Name() + ":" + p.pins.K3s.Image.Tag}
	if p.ClusterProvider == ProviderExisting {
		p.GatewayRender.Source += ", which occ's own clusters run: the existing cluster's version is not known before it is contacted (the install itself renders with the cluster's live version and API versions)"
	}
	p.GatewayRender.APIVersions = "Helm's defaults and those the CustomResourceDefinitions of the Agent Sandbox manifest " + p.agentSandboxSource() + " serve"
	return nil
}

// agentSandboxSource names the Agent Sandbox manifest `up` uses, for messages: the selected
// file, or the pinned URL shown by occ's one rule (contract.RedactURL).
func (p *Plan) agentSandboxSource() string {
	if p.AgentSandboxManifest != "" {
		return p.AgentSandboxManifest
	}
	return contract.RedactURL(p.pins.AgentSandbox.Manifest.URL)
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
	versions, err := platform.ManifestAPIVersions(r.agentSandbox)
	if err != nil {
		return platform.ClusterCapabilities{}, fmt.Errorf("Agent Sandbox manifest %s: %w", r.plan.agentSandboxSource(), err)
	}
	return platform.ClusterCapabilities{
		KubeVersion:         r.plan.GatewayRender.KubernetesVersion,
		KubeVersionSource:   r.plan.GatewayRender.Source,
		ManifestAPIVersions: versions,
		ManifestSource:      r.plan.agentSandboxSource(),
	}, nil
}
