package occdev

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/openclaw/occ/internal/fsutil"
	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/state"
)

// buildsFile records, in the state directory, every image build `up` made from the checkout, so
// `occ dev reload` repeats exactly those builds. It is a file of its own (0600, like the Compose
// snapshot) rather than part of state.json: build arguments come from the developer's Compose
// files and settings, and state.json never holds a value that could be a secret.
const buildsFile = "builds.json"

// recordedBuild is one build `up` made: the request it handed the engine's BuildKit (the bases
// already resolved to the digests `up` pulled), the control-plane image role it fills, and
// where the result runs.
type recordedBuild struct {
	// Role is the control-plane image's role in the state ("development", "controller",
	// "runtime").
	Role string `json:"role"`
	// Services are the Compose services that run the image (Compose profile only).
	Services []string `json:"services,omitempty"`
	// Imported says the image runs in the cluster (imported into the node by its config digest).
	Imported bool `json:"imported,omitempty"`

	ContextDir string            `json:"context"`
	Dockerfile string            `json:"dockerfile"`
	Target     string            `json:"target,omitempty"`
	Args       map[string]string `json:"args,omitempty"`
	Tag        string            `json:"tag"`
	Network    string            `json:"network,omitempty"`
}

// request is the build request of b.
func (b recordedBuild) request(progress func(string)) controlplane.BuildRequest {
	return controlplane.BuildRequest{
		ContextDir: b.ContextDir, Dockerfile: b.Dockerfile, Target: b.Target, Args: b.Args,
		Tag: b.Tag, NetworkMode: b.Network, Progress: progress,
	}
}

// recordBuild is the record of a build of an image imported into the cluster.
func recordBuild(role string, req controlplane.BuildRequest) recordedBuild {
	return recordedBuild{Role: role, Imported: true, ContextDir: req.ContextDir, Dockerfile: req.Dockerfile, Target: req.Target, Args: req.Args, Tag: req.Tag, Network: req.NetworkMode}
}

// writeBuilds records the builds in the state directory, replacing an earlier record.
func writeBuilds(d *state.Dir, builds []recordedBuild) error {
	data, err := json.MarshalIndent(builds, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the build record: %w", err)
	}
	if err := fsutil.WriteFileAtomic(d.File(buildsFile), append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("write the build record %s: %w", d.File(buildsFile), err)
	}
	return nil
}

// errNoBuilds is a state without a build record: an `up` of an occ before reload existed, or an
// environment whose images were selected rather than built.
var errNoBuilds = errors.New("no build record")

// readBuilds reads the build record of the state directory.
func readBuilds(dir string) ([]recordedBuild, error) {
	p := filepath.Join(dir, buildsFile)
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errNoBuilds
	}
	if err != nil {
		return nil, fmt.Errorf("read the build record %s: %w", p, err)
	}
	var out []recordedBuild
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("read the build record %s: %w", p, err)
	}
	for i, b := range out {
		if b.Role == "" || b.Tag == "" || !filepath.IsAbs(b.ContextDir) || b.Dockerfile == "" {
			return nil, fmt.Errorf("read the build record %s: entry %d lacks its role, tag, absolute context or Dockerfile", p, i)
		}
	}
	return out, nil
}
