package occdev

import (
	"context"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/pinbundle"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/progress"
)

const optBundle = "--bundle (" + EnvBundle + ")"

// resolveBundle checks --bundle (pinbundle.Resolve): a regular file, planned by its absolute path,
// for a cluster occ creates, and without a node image selected by tag. It reads nothing of the
// file: the preflight verifies it (openBundle).
func resolveBundle(p *Plan, o UpOptions) (err error) {
	p.Bundle, err = pinbundle.Resolve(o.Bundle, optBundle, p.ClusterProvider == ProviderExisting, p.pins.K3s.Image, EnvK3sImage)
	return err
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
