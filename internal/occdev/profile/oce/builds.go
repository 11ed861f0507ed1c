package oce

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/openclaw/occ/internal/fsutil"
	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/profile"
	"github.com/openclaw/occ/internal/occdev/state"
)

// BuildsFile records, in the state directory, every image build `up` made from the checkout, so
// `occ dev reload` repeats exactly those builds. It is a file of its own (0600, like the Compose
// snapshot) rather than part of state.json: build arguments come from the developer's Compose
// files and settings, and state.json never holds a value that could be a secret.
const BuildsFile = "builds.json"

// BuildLogFile is the file of the state directory the image builds of `up` and `reload` write
// their output to.
const BuildLogFile = "image-build.log"

// RecordedBuild is one build `up` made: the request it handed the engine's BuildKit (the bases
// already resolved to the digests `up` pulled), the control-plane image role it fills, and
// where the result runs.
type RecordedBuild struct {
	// Role is the control-plane image's role in the state ("development", "controller",
	// "runtime").
	Role string `json:"role"`
	// Services are the Compose services that run the image (Compose profile only).
	Services []string `json:"services,omitempty"`
	// Imported says the image runs in the cluster (imported into the node by its image ID).
	Imported bool `json:"imported,omitempty"`

	ContextDir string            `json:"context"`
	Dockerfile string            `json:"dockerfile"`
	Target     string            `json:"target,omitempty"`
	Args       map[string]string `json:"args,omitempty"`
	Tag        string            `json:"tag"`
	Network    string            `json:"network,omitempty"`
}

// Request is the build request of b.
func (b RecordedBuild) Request(progress func(string)) engine.BuildRequest {
	return engine.BuildRequest{
		ContextDir: b.ContextDir, Dockerfile: b.Dockerfile, Target: b.Target, Args: b.Args,
		Tag: b.Tag, NetworkMode: b.Network, Progress: progress,
	}
}

// What names the image b builds in errors: "the image of controller, worker-kubernetes", "the
// Agent runtime image", "the controller image".
func (b RecordedBuild) What() string {
	switch {
	case len(b.Services) > 0:
		return "the image of " + strings.Join(b.Services, ", ")
	case b.Role == RoleRuntime:
		return "the Agent runtime image"
	}
	return "the " + b.Role + " image"
}

// RecordBuild is the record of a build of an image imported into the cluster.
func RecordBuild(role string, req engine.BuildRequest) RecordedBuild {
	return RecordedBuild{Role: role, Imported: true, ContextDir: req.ContextDir, Dockerfile: req.Dockerfile, Target: req.Target, Args: req.Args, Tag: req.Tag, Network: req.NetworkMode}
}

// writeBuilds records the builds in the state directory, replacing an earlier record.
func writeBuilds(d *state.Dir, builds []RecordedBuild) error {
	data, err := json.MarshalIndent(builds, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the build record: %w", err)
	}
	if err := fsutil.WriteFileAtomic(d.File(BuildsFile), append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("write the build record %s: %w", d.File(BuildsFile), err)
	}
	return nil
}

// ErrNoBuilds is a state without a build record: an `up` of an occ before reload existed, or an
// environment whose images were selected rather than built.
var ErrNoBuilds = errors.New("no build record")

// ReadBuilds reads the build record of the state directory.
func ReadBuilds(dir string) ([]RecordedBuild, error) {
	p := filepath.Join(dir, BuildsFile)
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoBuilds
	}
	if err != nil {
		return nil, fmt.Errorf("read the build record %s: %w", p, err)
	}
	var out []RecordedBuild
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

// BuildImages runs the control plane's builds from the checkout through the engine's BuildKit,
// in order, and records them: each image in the state's control-plane record (role, tag, image
// ID), and all of them in the build record `occ dev reload` repeats. It returns the images that
// run in the cluster, by role, as the import takes them.
func BuildImages(ctx context.Context, env profile.Env, builds []RecordedBuild, progress func(string)) (map[string]images.Local, error) {
	engine := env.Engine()
	imported := map[string]images.Local{}
	var recs []state.ControlPlaneImage
	for _, b := range builds {
		img, err := Build(ctx, engine.Verbs(), env.State(), b, progress)
		if err != nil {
			return nil, fmt.Errorf("build %s: %w", b.What(), err)
		}
		if b.Imported {
			if imported[b.Role], err = images.Built(ctx, engine.Verbs(), img.Reference, img.ID); err != nil {
				return nil, err
			}
		}
		recs = append(recs, state.ControlPlaneImage{Role: b.Role, Reference: img.Reference, ID: img.ID})
	}
	if err := writeBuilds(env.State(), builds); err != nil {
		return nil, err
	}
	return imported, RecordImages(env.State(), recs...)
}

// Build runs b through the engine's BuildKit. An image that goes into the cluster is found by
// its ID until the import has carried it into the node, and another build of its tag (another
// environment's from the same checkout, the developer's own) would take it away meanwhile on the
// containerd image store, which deletes an image once its last name moves: so the build also
// names it by the environment's hold (images.HoldTag), recorded before the build and removed by
// `down`. A rebuild moves the environment's own hold.
func Build(ctx context.Context, eng engine.Engine, d *state.Dir, b RecordedBuild, progress func(string)) (controlplane.LocalImage, error) {
	req := b.Request(progress)
	if b.Imported {
		hold, err := images.HoldTag(b.Tag, d.State())
		if err != nil {
			return controlplane.LocalImage{}, err
		}
		if err := d.Record(images.HoldRecord(hold, "")); err != nil {
			return controlplane.LocalImage{}, fmt.Errorf("record the hold %s before the build: %w", hold, err)
		}
		req.Hold = hold
	}
	img, err := controlplane.BuildImage(ctx, eng, req)
	if err != nil || req.Hold == "" {
		return img, err
	}
	if err := d.Record(images.HoldRecord(req.Hold, img.ID)); err != nil {
		return controlplane.LocalImage{}, fmt.Errorf("record the hold %s on image %s: %w", req.Hold, img.ID, err)
	}
	return img, nil
}

// RecordImages adds the control plane's images to its record.
func RecordImages(d *state.Dir, imgs ...state.ControlPlaneImage) error {
	return d.Update(func(s *state.State) { s.ControlPlane.Images = append(s.ControlPlane.Images, imgs...) })
}

// BuildArgs says which build arguments occ passes, for the dry run; each base comes in by the
// digest the pull step records.
func BuildArgs(b *controlplane.PlannedBuild) string {
	if b == nil || len(b.Args) == 0 {
		return "no build arguments but the digests of the bases pulled before"
	}
	keys := make([]string, 0, len(b.Args))
	for k, v := range b.Args {
		keys = append(keys, k+"="+v)
	}
	slices.Sort(keys)
	return strings.Join(keys, " ")
}
