package occdev

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openclaw/occ/internal/occdev/artifacts"
	"github.com/openclaw/occ/internal/occdev/pins"
)

// Layout of the OpenShell working files inside the state directory. They are rebuilt by every
// run from the verified archive, so they are never trusted across runs.
const (
	openshellDir  = "openshell"
	extractedDir  = "openshell/source"
	packagedDir   = "openshell/charts"
	sourceArchive = "OpenShell source archive"
)

func (sc *StepContext) fetcher() *artifacts.Fetcher {
	return &artifacts.Fetcher{Client: sc.opts.HTTPClient, CacheDir: sc.Plan.CacheDir, Progress: sc.opts.DownloadProgress}
}

func describePins(p *Plan) []string {
	if p.PinFile != "" {
		return []string{"nothing created; reads pins from " + p.PinFile}
	}
	return []string{"nothing created; uses the pins built into occ (" + pins.EmbeddedSource + ")"}
}

func resolvePins(_ context.Context, sc *StepContext) error {
	set, err := pins.Resolve(sc.Plan.PinFile)
	if err != nil {
		return err
	}
	sc.pins = set
	return nil
}

func describeArchive(p *Plan) []string {
	if p.ArchiveFile != "" {
		return []string{"nothing downloaded; verifies " + p.ArchiveFile + " against the pinned sha256"}
	}
	return []string{"downloads the pinned archive into " + p.CacheDir + " unless a verified copy is cached there"}
}

// fetchArchive produces the verified source archive: the local copy given with
// --openshell-archive, or the cached or downloaded pinned file. Either way its sha256 must be
// the pin's before a byte of it is used.
func fetchArchive(ctx context.Context, sc *StepContext) error {
	pin := sc.pins.OpenShell.SourceArchive
	var v *artifacts.Verified
	var err error
	if sc.Plan.ArchiveFile != "" {
		v, err = artifacts.OpenVerified(sc.Plan.ArchiveFile, pin.SHA256)
		if err != nil {
			return fmt.Errorf("--openshell-archive %s: %w", sc.Plan.ArchiveFile, err)
		}
	} else if v, err = sc.fetcher().Fetch(ctx, pin.Artifact); err != nil {
		return fmt.Errorf("%s: %w", sourceArchive, err)
	}
	sc.archive = v
	return nil
}

func describeExtract(p *Plan) []string {
	return []string{"directory " + filepath.Join(p.StateDir, extractedDir) + " (only the archive's Helm subtree)"}
}

func extractCharts(_ context.Context, sc *StepContext) error {
	dest := sc.state.File(extractedDir)
	// A previous attempt's tree is ours (inside the private directory) and is rebuilt from the
	// verified archive rather than trusted.
	if err := os.RemoveAll(dest); err != nil {
		return fmt.Errorf("clear %s: %w", dest, err)
	}
	if err := artifacts.ExtractHelm(sc.archive, sc.pins.OpenShell.SourceArchive, dest); err != nil {
		return err
	}
	sc.artifacts.helmDir = dest
	return sc.archive.Close()
}

func describeAgentSandbox(p *Plan) []string {
	return []string{"the objects of the pinned Agent Sandbox manifest (verified against its sha256; CRDs, namespace, controller)"}
}

// agentSandboxObjects fetches (or takes from the cache) and verifies the pinned Agent Sandbox
// manifest and parses it, once per run.
func (sc *StepContext) agentSandboxObjects(ctx context.Context) ([]*unstructured.Unstructured, error) {
	if sc.agentSandbox != nil {
		return sc.agentSandbox, nil
	}
	pin := sc.pins.AgentSandbox.Manifest
	v, err := sc.fetcher().Fetch(ctx, pin)
	if err != nil {
		return nil, fmt.Errorf("Agent Sandbox manifest: %w", err)
	}
	defer v.Close()
	objs, err := artifacts.ParseManifest(v)
	if err != nil {
		return nil, fmt.Errorf("Agent Sandbox manifest %s: %w", pin.URL, err)
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("Agent Sandbox manifest %s holds no objects", pin.URL)
	}
	sc.agentSandbox = objs
	return objs, nil
}
