package occdev

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/occdev/artifacts"
	"github.com/openclaw/occ/internal/occdev/charts"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/progress"
)

// Layout of the OpenShell working files inside the state directory. They are rebuilt by every
// run from the verified archive, so they are never trusted across runs.
const (
	extractedDir  = "openshell/source"
	packagedDir   = "openshell/charts"
	sourceArchive = "OpenShell source archive"
)

func (r *run) fetcher(rep progress.Reporter) *artifacts.Fetcher {
	f := &artifacts.Fetcher{
		Client: r.opts.HTTPClient, CacheDir: r.plan.CacheDir, Offline: r.plan.Offline,
		Progress: func(p artifacts.Progress) { rep.Transfer(p.Received, p.Total) },
	}
	if r.bundle != nil {
		f.Local = r.bundle
	}
	return f
}

func describeArchive(p *Plan) Description {
	if p.ArchiveFile != "" {
		return note("nothing downloaded; verifies " + p.ArchiveFile + " against the pinned sha256")
	}
	return creates("the pinned archive in " + p.CacheDir + ", unless a verified copy is cached there")
}

// fetchArchive produces the verified source archive: the local copy given with
// --openshell-archive, or the cached or downloaded pinned file. Either way its sha256 must be
// the pin's before a byte of it is used.
func fetchArchive(ctx context.Context, r *run, rep progress.Reporter) error {
	pin := r.plan.pins.OpenShell.SourceArchive
	var v *artifacts.Verified
	var err error
	if r.plan.ArchiveFile != "" {
		v, err = artifacts.OpenVerified(r.plan.ArchiveFile, pin.SHA256)
		if err != nil {
			return fmt.Errorf("--openshell-archive %s: %w", r.plan.ArchiveFile, err)
		}
	} else if v, err = r.fetcher(rep).Fetch(ctx, pin.Artifact); err != nil {
		return fmt.Errorf("%s: %w%s", sourceArchive, err, offlineFix(err, "--openshell-archive", EnvArchive))
	}
	r.archive = v
	return nil
}

// offlineFix is what a download that could not reach its server (artifacts.DownloadError) adds:
// the flag that takes a local copy instead, and --pin-file for another pin set; "" for any other
// failure.
func offlineFix(err error, flag, env string) string {
	var dl *artifacts.DownloadError
	if !errors.As(err, &dl) {
		return ""
	}
	return "; offline, " + flag + " FILE (" + env + ") takes a local copy, or --pin-file (" + EnvPinFile + ") another pin set"
}

func describeExtract(p *Plan) Description {
	return creates("directory " + filepath.Join(p.StateDir, extractedDir) + " (only the archive's Helm subtree)")
}

func extractCharts(_ context.Context, r *run, _ progress.Reporter) error {
	dest := r.state.File(extractedDir)
	// A previous attempt's tree is ours (inside the private directory) and is rebuilt from the
	// verified archive rather than trusted.
	if err := os.RemoveAll(dest); err != nil {
		return fmt.Errorf("clear %s: %w", dest, err)
	}
	if err := artifacts.ExtractHelm(r.archive, r.plan.pins.OpenShell.SourceArchive, dest); err != nil {
		return err
	}
	r.helmDir = dest
	return r.archive.Close()
}

func describePackage(p *Plan) Description {
	return creates("directory " + filepath.Join(p.StateDir, packagedDir) + " with the Gateway and Workspace charts packaged at the pinned version " + p.pins.OpenShell.Version)
}

// packageCharts packages the Gateway and Workspace charts from the extracted tree with the
// Helm SDK, stamped with the pinned version, into the state directory.
func packageCharts(_ context.Context, r *run, _ progress.Reporter) error {
	dest := r.state.File(packagedDir)
	// Packages of an earlier attempt are rebuilt, never trusted.
	if err := os.RemoveAll(dest); err != nil {
		return fmt.Errorf("clear %s: %w", dest, err)
	}
	ch, err := charts.Package(charts.PackageOptions{Pins: r.plan.pins, SourceDir: r.helmDir, OutputDir: dest})
	if err != nil {
		return err
	}
	r.charts = ch
	return nil
}

func describeRender(*Plan) Description {
	return note("nothing created; renders the Workspace chart once (ServiceAccount, Role, RoleBinding, NetworkPolicy only) for the Installation")
}

// renderWorkspace renders the Workspace chart once; its objects become the Installation's
// operatorWorkspaceResources, which the Sandbox Driver applies into every tenant namespace.
func renderWorkspace(_ context.Context, r *run, _ progress.Reporter) error {
	values, err := charts.NewWorkspaceValues(r.plan.Namespace)
	if err != nil {
		return err
	}
	objs, err := charts.RenderWorkspace(r.charts.Workspace, values)
	if err != nil {
		return err
	}
	r.workspaceResources = r.workspaceResources[:0]
	for _, o := range objs {
		r.workspaceResources = append(r.workspaceResources, *o)
	}
	return nil
}

func describeAgentSandboxFetch(p *Plan) Description {
	if p.AgentSandboxManifest != "" {
		return note("nothing downloaded; reads the selected " + p.AgentSandboxManifest + " (not checked against the pinned sha256: a selection for offline use, whose CustomResourceDefinitions the Gateway chart's render sees)")
	}
	return creates("the pinned Agent Sandbox " + p.pins.AgentSandbox.Version + " manifest in " + p.CacheDir + ", unless a verified copy is cached there")
}

// fetchAgentSandbox fetches (or takes from the cache) and verifies the pinned Agent Sandbox
// manifest, or reads the selected local one, and parses it.
func fetchAgentSandbox(ctx context.Context, r *run, rep progress.Reporter) error {
	if path := r.plan.AgentSandboxManifest; path != "" {
		return readAgentSandbox(r, rep, path)
	}
	pin := r.plan.pins.AgentSandbox.Manifest
	v, err := r.fetcher(rep).Fetch(ctx, pin)
	if err != nil {
		return fmt.Errorf("Agent Sandbox manifest: %w%s", err, offlineFix(err, "--agent-sandbox-manifest", EnvAgentSandboxManifest))
	}
	defer v.Close()
	objs, err := artifacts.ParseManifest(v)
	if err != nil {
		return fmt.Errorf("Agent Sandbox manifest %s: %w", contract.RedactURL(pin.URL), err)
	}
	if len(objs) == 0 {
		return fmt.Errorf("Agent Sandbox manifest %s holds no objects", contract.RedactURL(pin.URL))
	}
	r.agentSandbox = objs
	return nil
}

// readAgentSandbox reads the selected manifest, says whether it is the pinned one, and records
// its digest with the selections.
func readAgentSandbox(r *run, rep progress.Reporter, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%s %s: %w", optAgentSandboxManifest, path, err)
	}
	objs, err := artifacts.ParseYAML(data, path)
	if err != nil {
		return fmt.Errorf("%s %s: %w", optAgentSandboxManifest, path, err)
	}
	if len(objs) == 0 {
		return fmt.Errorf("%s %s holds no objects", optAgentSandboxManifest, path)
	}
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	if digest == r.plan.pins.AgentSandbox.Manifest.SHA256 {
		rep.Note("the pinned Agent Sandbox " + r.plan.pins.AgentSandbox.Version + " manifest (its sha256 matches the pin)")
	} else {
		rep.Note("not the pinned Agent Sandbox manifest: sha256 " + digest + ", the pin says " + r.plan.pins.AgentSandbox.Manifest.SHA256)
	}
	if err := r.state.Update(func(s *state.State) {
		if s.Selections != nil {
			s.Selections.AgentSandboxManifestSHA256 = digest
		}
	}); err != nil {
		return fmt.Errorf("record the selected Agent Sandbox manifest in the state: %w", err)
	}
	r.agentSandbox = objs
	return nil
}

func describeSelectedCharts(p *Plan) Description {
	return note("nothing downloaded or packaged; uses the selected Gateway chart " + p.GatewayChart + " and Workspace chart " + p.WorkspaceChart + " as they are (their own versions; the Gateway chart's render is still checked against the pinned images)")
}

// useSelectedCharts hands the run the local charts the plan loaded.
func useSelectedCharts(_ context.Context, r *run, _ progress.Reporter) error {
	if r.plan.selectedCharts == nil {
		return fmt.Errorf("no selected charts were loaded (a bug in occ)")
	}
	r.charts = r.plan.selectedCharts
	return nil
}
