package occdev

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openclaw/occ/internal/occdev/artifacts"
	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/occdev/profile/oce"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/occdev/step"
	"github.com/openclaw/occ/internal/progress"
)

// PlannedStep is one step of a dry run (step.Planned), and PlannedLane one lane of a group step.
type (
	PlannedStep = step.Planned
	PlannedLane = step.PlannedLane
)

// DryRun is what `up --dry-run` reports.
type DryRun struct {
	Plan  *Plan         `json:"plan"`
	Steps []PlannedStep `json:"steps"`
	// Problems are what `up` would stop at before creating anything (a missing kubeconfig or
	// context); a dry run with problems fails after printing them. Never null.
	Problems []string `json:"problems"`
	// ControlPlane says what of the profile's control plane `up` does not start yet.
	ControlPlane string `json:"controlPlane,omitempty"`
}

// Count is the number of steps that do work (group steps count as their lanes' steps).
func (d *DryRun) Count() int { return step.Count(d.Steps) }

// PlanUp resolves and validates opts and lists the steps without creating anything. Bad settings
// (flags, paths, the pin file), and a checkout the plan refuses (its Compose model, its
// Dockerfiles, its OCE chart rendered with the install's values), are errors; what `up` would
// refuse before creating anything (a missing kubeconfig or context, a stopped engine, an engine
// whose builder cannot read the checkout's Dockerfiles, a state directory in use) is listed in
// Problems. The only call it makes is a running engine's GET /version, for the builder check;
// ctx is what its engine lookup runs under (Ctrl-C stops it).
func PlanUp(ctx context.Context, opts UpOptions) (*DryRun, error) {
	opts.DryRun, opts.lookup = true, ctx
	p, err := resolvePlan(opts)
	if err != nil {
		return nil, err
	}
	manifestProblem := ""
	p.agentSandboxObjects, manifestProblem = localManifest(p)
	p.routingControllers = p.Routing.Local(p.pins.Routing, p.CacheDir)
	dr := &DryRun{Plan: p, Steps: step.PlanOf(p, upSteps(p)), Problems: []string{}, ControlPlane: p.profile.Pending()}
	if err := p.profile.Refusal(); err != nil {
		dr.Problems = append(dr.Problems, err.Error())
	}
	if err := withProvider(p, func(pr cluster.Provider) error { return pr.Check(clusterRequest(p, nil, nil, progress.Reporter{})) }); err != nil {
		dr.Problems = append(dr.Problems, err.Error())
	}
	// An engine that is not running is told now, with what to start; only its socket is
	// looked at (the engine itself is asked by `up`'s preflight).
	if p.engineNotFound != nil {
		dr.Problems = append(dr.Problems, p.engineNotFound.Error())
	} else if ep := p.Engine; !ep.IsZero() {
		if err := docker.CheckSocketAs(ep, p.EngineSource, engineKind(p)); err != nil {
			dr.Problems = append(dr.Problems, err.Error())
		} else if err := oce.CheckPlannedBuilder(p.OCE, ep, p.EngineSource, engineKind(p)); err != nil {
			dr.Problems = append(dr.Problems, err.Error())
		}
	}
	// The local files `up` would read first are read now, offline: an archive that is not the
	// pinned one, a selected manifest that is not one.
	dr.Problems = append(dr.Problems, localArtifactProblems(p, manifestProblem)...)
	// `up` claims the directory by state.Create's rules (absent, or empty and private to you)
	// and refuses one that already records an environment; say so now, by the same rules.
	if err := state.CheckClaimFor(p.StateDir, DownCommand(opts.OCCCommand, p.StateDir)); err != nil {
		dr.Problems = append(dr.Problems, err.Error())
	}
	return dr, nil
}

// localManifest reads, offline, the Agent Sandbox manifest `up` would apply (artifacts.LocalManifest):
// the selected one (with what is wrong with it, "" when nothing is), or the pinned one when a
// verified copy is in the cache; nil when neither can be read.
func localManifest(p *Plan) ([]*unstructured.Unstructured, string) {
	manifest, err := artifacts.LocalManifest(p.AgentSandboxManifest, p.CacheDir, p.pins.AgentSandbox.Manifest.SHA256)
	if err != nil {
		return nil, fmt.Sprintf("%s %v", optAgentSandboxManifest, err)
	}
	return manifest, ""
}

// localArtifactProblems checks, offline, the local artifacts the plan selected as `up` would
// before using them: --openshell-archive against the pinned sha256 (unless both charts are
// selected, when the archive is not used), and --agent-sandbox-manifest as a manifest of
// objects (manifestProblem, localManifest's).
func localArtifactProblems(p *Plan, manifestProblem string) []string {
	var out []string
	if p.ArchiveFile != "" && p.selectedCharts == nil {
		if err := artifacts.CheckLocal(p.ArchiveFile, p.pins.OpenShell.SourceArchive.SHA256); err != nil {
			out = append(out, fmt.Sprintf("--openshell-archive (%s) %s: %v", EnvArchive, p.ArchiveFile, err))
		}
	}
	if manifestProblem != "" {
		out = append(out, manifestProblem)
	}
	manifest := p.agentSandboxObjects
	// Selected charts are rendered now as up renders them, when the manifest whose API versions
	// the render sees is local (selected, or the pinned one already in the cache): a chart that
	// would run unpinned images is refused here, not only by up.
	if p.selectedCharts != nil && len(manifest) > 0 {
		r := &run{plan: p, charts: p.selectedCharts, agentSandbox: manifest}
		caps, err := r.renderCapabilities()
		if err == nil {
			_, err = platform.CheckGatewayRender(r.gatewayInstall(), caps)
		}
		if err != nil {
			out = append(out, fmt.Sprintf("the selected Gateway chart %s: %v", p.GatewayChart, err))
		}
		if err := renderWorkspace(context.Background(), r, progress.Reporter{}); err != nil {
			out = append(out, fmt.Sprintf("the selected Workspace chart %s: %v", p.WorkspaceChart, err))
		}
	}
	return out
}
