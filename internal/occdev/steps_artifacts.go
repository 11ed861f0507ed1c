package occdev

import (
	"context"

	"github.com/openclaw/occ/internal/occdev/artifacts"
	"github.com/openclaw/occ/internal/occdev/charts"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/progress"
)

// The artifacts lane's steps hand the artifacts, charts and platform layers the plan's
// selections and the run's earlier artifacts, and keep what each returns for the later steps.

// sourceArchive names the OpenShell source archive in messages and the bundle's files.
const sourceArchive = artifacts.SourceArchiveName

// How the layers name the archive's and the pin file's settings in their messages.
var (
	archiveSetting = option.Setting{Flag: "openshell-archive", Env: EnvArchive}
	pinFileSetting = option.Setting{Flag: "pin-file", Env: EnvPinFile}
)

func (r *run) fetcher(rep progress.Reporter) *artifacts.Fetcher {
	f := &artifacts.Fetcher{
		Client: r.opts.HTTPClient, CacheDir: r.plan.CacheDir, Offline: r.plan.Offline, PinFile: pinFileSetting,
		Progress: func(p artifacts.Progress) { rep.Transfer(p.Received, p.Total) },
	}
	if r.bundle != nil {
		f.Local = r.bundle
	}
	return f
}

func describeArchive(p *Plan) Description {
	return artifacts.DescribeArchive(p.pins.OpenShell.SourceArchive, p.ArchiveFile, p.CacheDir)
}

func fetchArchive(ctx context.Context, r *run, rep progress.Reporter) (err error) {
	r.archive, err = r.fetcher(rep).FetchArchive(ctx, r.plan.pins.OpenShell.SourceArchive, r.plan.ArchiveFile, archiveSetting)
	return err
}

func describeExtract(p *Plan) Description { return artifacts.DescribeExtract(p.StateDir) }

func extractCharts(_ context.Context, r *run, _ progress.Reporter) error {
	r.helmDir = r.state.File(artifacts.HelmDir)
	return artifacts.ExtractHelmAfresh(r.archive, r.plan.pins.OpenShell.SourceArchive, r.helmDir)
}

func describePackage(p *Plan) Description {
	return charts.DescribePackage(p.StateDir, p.pins.OpenShell.Version)
}

func packageCharts(_ context.Context, r *run, _ progress.Reporter) (err error) {
	r.charts, err = charts.PackageAfresh(charts.PackageOptions{Pins: r.plan.pins, SourceDir: r.helmDir, OutputDir: r.state.File(charts.PackagedDir)})
	return err
}

func describeRender(*Plan) Description { return charts.DescribeRender() }

func renderWorkspace(_ context.Context, r *run, _ progress.Reporter) (err error) {
	r.workspaceResources, err = charts.WorkspaceResources(r.charts.Workspace, r.plan.Namespace)
	return err
}

// agentSandbox is where the plan takes the Agent Sandbox manifest from.
func (p *Plan) agentSandbox() platform.AgentSandboxManifest {
	return platform.AgentSandboxManifest{Pin: p.pins.AgentSandbox, File: p.AgentSandboxManifest}
}

func describeAgentSandboxFetch(p *Plan) Description {
	return p.agentSandbox().DescribeFetch(p.CacheDir)
}

func fetchAgentSandbox(ctx context.Context, r *run, rep progress.Reporter) (err error) {
	r.agentSandbox, err = r.plan.agentSandbox().Fetch(ctx, r.fetcher(rep), r.state, rep.Note)
	return err
}

func describeSelectedCharts(p *Plan) Description {
	return charts.DescribeSelected(p.GatewayChart, p.WorkspaceChart)
}

func useSelectedCharts(_ context.Context, r *run, _ progress.Reporter) (err error) {
	r.charts, err = charts.UseSelected(r.plan.selectedCharts)
	return err
}
