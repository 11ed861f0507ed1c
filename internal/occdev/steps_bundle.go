package occdev

import (
	"context"
	"path/filepath"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/pinbundle"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/progress"
)

const optBundle = "--bundle (" + EnvBundle + ")"

// resolveBundle checks --bundle: a regular file, planned by its absolute path (the state records
// it so), for a cluster occ creates (an existing cluster pulls its images in its own nodes), and
// without a node image selected by tag (a bundle holds images by digest). It reads nothing of the
// file: the preflight verifies it (openBundle).
func resolveBundle(p *Plan, o UpOptions) error {
	if o.Bundle == "" {
		return nil
	}
	if err := option.RegularFile(o.Bundle); err != nil {
		return &OptionError{Option: optBundle, Value: o.Bundle, Rule: err.Error(), Fix: "name a file occ dev bundle create wrote, or leave it unset to pull and download"}
	}
	abs, err := filepath.Abs(o.Bundle)
	if err != nil {
		return &OptionError{Option: optBundle, Value: o.Bundle, Rule: err.Error(), Fix: "name the file by an absolute path"}
	}
	if p.ClusterProvider == ProviderExisting {
		return &OptionError{Option: optBundle, Value: o.Bundle, Rule: "loads the pinned images into the engine of the cluster occ creates, and --cluster-provider existing pulls them in its own nodes",
			Fix: "unset it, or use --cluster-provider k3d"}
	}
	if img := p.pins.K3s.Image; img.Digest == "" {
		return &OptionError{Option: EnvK3sImage, Value: img.String(), Rule: "is a tag, and a bundle holds images by digest",
			Fix: "give it by digest (as the bundle was made with it), or unset it"}
	}
	p.Bundle = abs
	return nil
}

// openBundle readies the plan's bundle before anything is created (pinbundle.Take): verified
// whole, it must hold every download and image this up takes from it, each image for the
// engine's platform, and the engine must keep a loaded image under its registry digest.
func openBundle(ctx context.Context, r *run, rep progress.Reporter) error {
	if r.plan.Bundle == "" {
		return nil
	}
	opts := pinbundle.TakeOptions{Path: r.plan.Bundle, Setting: optBundle, Pins: r.plan.pins, Local: r.plan.localFiles(), Platform: r.enginePlatform}
	if r.engine != nil && r.engine.Registration().ClassicStore {
		opts.Docker, opts.Endpoint = r.engine.Verbs(), r.plan.Engine.String()
	}
	b, err := pinbundle.Take(ctx, opts)
	if err != nil {
		return err
	}
	r.bundle = b
	rep.Note(b.Summary())
	return nil
}

// localFiles are the pins of the downloads a local selection replaces, which this up takes from
// no bundle.
func (p *Plan) localFiles() []string {
	var keys []string
	if p.ArchiveFile != "" || p.selectedCharts != nil {
		keys = append(keys, pins.KeySourceArchive)
	}
	if p.AgentSandboxManifest != "" {
		keys = append(keys, pins.KeyAgentSandbox)
	}
	for key := range p.Routing.Manifests {
		keys = append(keys, key+".manifest")
	}
	return keys
}

// offlineEngine makes the run's engine refuse pulls and registry lookups when the plan is
// offline: whatever asks (the pinned images, the control plane's bases and builds' lookups), the
// refusal names the image.
func (r *run) offlineEngine() {
	if r.plan.Offline && r.engine != nil {
		r.engine.API = docker.Offline(r.engine.API)
	}
}
