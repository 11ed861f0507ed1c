package platform

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/occdev/artifacts"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/occdev/step"
)

// EnvAgentSandboxManifest is the reference's variable of the local Agent Sandbox manifest; the
// CLI binds it to --agent-sandbox-manifest.
const EnvAgentSandboxManifest = "OCC_DEVELOPMENT_OPENSHELL_AGENT_SANDBOX_MANIFEST"

// AgentSandboxSetting names the local Agent Sandbox manifest's setting in messages.
var AgentSandboxSetting = option.Setting{Flag: "agent-sandbox-manifest", Env: EnvAgentSandboxManifest}

// AgentSandboxManifest is where `up` takes the Agent Sandbox manifest from: the pinned release
// manifest, or a local copy the user selected for offline use.
type AgentSandboxManifest struct {
	Pin pins.AgentSandbox
	// File is the selected local manifest (an absolute path); "" for the pinned download.
	File string
}

// SelectAgentSandbox checks the local manifest raw as given (a local input file's rule,
// option.RegularFile) and returns its absolute path; "" when none is selected.
func SelectAgentSandbox(raw string) (string, error) {
	if raw == "" {
		return "", nil
	}
	abs, err := filepath.Abs(raw)
	if err == nil {
		err = option.RegularFile(abs)
	}
	if err != nil {
		return "", &option.Error{Option: AgentSandboxSetting.String(), Value: raw, Rule: err.Error(),
			Fix: "name a local copy of the Agent Sandbox release manifest (sandbox.yaml), or leave it unset to download the pinned one"}
	}
	return abs, nil
}

// Source names the manifest for messages: the selected file, or the pinned URL shown by occ's
// one rule (contract.RedactURL).
func (m AgentSandboxManifest) Source() string {
	if m.File != "" {
		return m.File
	}
	return contract.RedactURL(m.Pin.Manifest.URL)
}

// DescribeFetch is the dry run's account of Fetch, with the artifact cache cacheDir.
func (m AgentSandboxManifest) DescribeFetch(cacheDir string) step.Description {
	if m.File != "" {
		return step.Note("nothing downloaded; reads the selected " + m.File + " (not checked against the pinned sha256: a selection for offline use, whose CustomResourceDefinitions the Gateway chart's render sees)")
	}
	return artifacts.DescribeFetch(m.Pin.Manifest, cacheDir, "the pinned Agent Sandbox "+m.Pin.Version+" manifest")
}

// Fetch fetches (or takes from the cache) and verifies the pinned manifest through f, or reads
// the selected one, and parses it. The selected one's digest is recorded with the selections
// in the state d, and note says whether it is the pinned one.
func (m AgentSandboxManifest) Fetch(ctx context.Context, f *artifacts.Fetcher, d *state.Dir, note func(string)) ([]*unstructured.Unstructured, error) {
	if m.File != "" {
		return m.read(d, note)
	}
	v, err := f.Fetch(ctx, m.Pin.Manifest)
	if err != nil {
		return nil, fmt.Errorf("Agent Sandbox manifest: %w%s", err, f.OfflineFix(err, AgentSandboxSetting))
	}
	defer v.Close()
	objs, err := artifacts.ParseManifest(v)
	if err != nil {
		return nil, fmt.Errorf("Agent Sandbox manifest %s: %w", m.Source(), err)
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("Agent Sandbox manifest %s holds no objects", m.Source())
	}
	return objs, nil
}

// read reads the selected manifest, says whether it is the pinned one, and records its digest
// with the selections.
func (m AgentSandboxManifest) read(d *state.Dir, note func(string)) ([]*unstructured.Unstructured, error) {
	opt := AgentSandboxSetting.String()
	data, err := os.ReadFile(m.File)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", opt, m.File, err)
	}
	objs, err := artifacts.ParseYAML(data, m.File)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", opt, m.File, err)
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("%s %s holds no objects", opt, m.File)
	}
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	if digest == m.Pin.Manifest.SHA256 {
		note("the pinned Agent Sandbox " + m.Pin.Version + " manifest (its sha256 matches the pin)")
	} else {
		note("not the pinned Agent Sandbox manifest: sha256 " + digest + ", the pin says " + m.Pin.Manifest.SHA256)
	}
	if err := d.Update(func(s *state.State) {
		if s.Selections != nil {
			s.Selections.AgentSandboxManifestSHA256 = digest
		}
	}); err != nil {
		return nil, fmt.Errorf("record the selected Agent Sandbox manifest in the state: %w", err)
	}
	return objs, nil
}

// DescribeApply is the dry run's account of ApplyAgentSandbox of objs, the manifest's objects
// when the plan could read them without a download (selected, or the pinned one already
// cached): each object as the run records it. Without them it says what the manifest holds.
func (m AgentSandboxManifest) DescribeApply(objs []*unstructured.Unstructured) step.Description {
	source := "the pinned Agent Sandbox " + m.Pin.Version + " manifest (verified against its sha256"
	if m.File != "" {
		source = "the selected Agent Sandbox manifest " + m.File + " (not checked against the pinned sha256"
	}
	if len(objs) == 0 {
		return step.Creates("the objects of " + source + "; CRDs, namespace, controller)")
	}
	d := step.Objects(kubeobj.DescribeManifest(objs)...)
	d.Note = "the objects of " + source + ")"
	return d
}

// RenderCapabilities are the capabilities the Gateway chart's offline render sees: what render
// plans of the cluster, and the API versions the parsed manifest objs serves.
func (m AgentSandboxManifest) RenderCapabilities(render GatewayRenderPlan, objs []*unstructured.Unstructured) (ClusterCapabilities, error) {
	versions, err := ManifestAPIVersions(objs)
	if err != nil {
		return ClusterCapabilities{}, fmt.Errorf("Agent Sandbox manifest %s: %w", m.Source(), err)
	}
	return ClusterCapabilities{
		KubeVersion:         render.KubernetesVersion,
		KubeVersionSource:   render.Source,
		ManifestAPIVersions: versions,
		ManifestSource:      m.Source(),
	}, nil
}
