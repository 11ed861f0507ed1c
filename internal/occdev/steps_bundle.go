package occdev

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/openclaw/occ/internal/contract"
	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/pinbundle"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/progress"
)

const optBundle = "--bundle (" + EnvBundle + ")"

// resolveBundle checks --bundle: a regular file, planned by its absolute path (the state records
// it so), for a cluster occ creates (an existing cluster pulls its images in its own nodes).
// It reads nothing of the file: the preflight verifies it (openBundle).
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
	p.Bundle = abs
	return nil
}

// openBundle readies the plan's bundle before anything is created: the engine must keep a
// loaded image under its registry digest, the whole file is hashed (pinbundle.Verify), and it
// must hold every file and image this up takes from it, each image for the engine's platform.
// The first artifact it lacks is named with its digest (*pinbundle.MissingError).
func openBundle(ctx context.Context, r *run, rep progress.Reporter) error {
	p := r.plan
	if p.Bundle == "" {
		return nil
	}
	if r.engine != nil && r.engine.Registration().ClassicStore {
		store, err := images.EngineStore(ctx, r.engine.API)
		if err != nil {
			return err
		}
		if store == images.StoreClassic {
			return &OptionError{Option: optBundle, Value: p.Bundle,
				Rule: "loads the pinned images into the engine, and the Docker engine at " + p.Engine.String() + " keeps images in its classic store, which names a loaded image by its config alone, never by the pinned digest the cluster and its verification use",
				Fix:  "switch Docker's containerd image store on (daemon.json \"features\": {\"containerd-snapshotter\": true}; Docker Desktop: Settings, General, Use containerd for pulling and storing images), use Podman, or leave --bundle unset"}
		}
	}
	contents, err := pinbundle.Verify(ctx, p.Bundle, nil)
	if err != nil {
		return err
	}
	o, err := pinbundle.Open(p.Bundle)
	if err != nil {
		return err
	}
	r.bundle = o
	for _, f := range p.bundleFiles() {
		if !o.Has("sha256:" + f.artifact.SHA256) {
			return &pinbundle.MissingError{Path: p.Bundle, Digest: "sha256:" + f.artifact.SHA256, What: "the " + f.what + " " + contract.RedactURL(f.artifact.URL)}
		}
	}
	r.fromBundle = make([]*pinbundle.Image, len(flowImages(p.pins)))
	pick := entryFor(r.enginePlatform)
	for i, img := range flowImages(p.pins) {
		if img.Image.Digest == "" {
			return &OptionError{Option: EnvK3sImage, Value: img.Image.String(), Rule: "is a tag, and a bundle holds images by digest",
				Fix: "give it by digest (as the bundle was made with it), or unset it"}
		}
		bi, err := o.Image(img.Image.Name(), img.Image.Digest, pick)
		if err != nil {
			return fmt.Errorf("%s image: %w", img.Title, err)
		}
		r.fromBundle[i] = &bi
	}
	rep.Note(fmt.Sprintf("bundle %s verified: pins %s, %d artifacts for %v", p.Bundle, short(contents.Pins.Digest), len(contents.Artifacts), contents.Platforms))
	return nil
}

// short is the first 12 characters of a hex digest.
func short(hex string) string {
	if len(hex) > 12 {
		return hex[:12]
	}
	return hex
}

// bundleFile is a download the run takes from the bundle.
type bundleFile struct {
	what     string
	artifact pins.Artifact
}

// bundleFiles are the downloads this up makes, which a bundle must hold: those no local
// selection replaces.
func (p *Plan) bundleFiles() []bundleFile {
	var out []bundleFile
	if p.ArchiveFile == "" && p.selectedCharts == nil {
		out = append(out, bundleFile{sourceArchive, p.pins.OpenShell.SourceArchive.Artifact})
	}
	if p.AgentSandboxManifest == "" {
		out = append(out, bundleFile{"Agent Sandbox manifest", p.pins.AgentSandbox.Manifest})
	}
	if p.installsRouting() {
		for _, c := range p.pins.Routing.Controllers() {
			if p.Routing.Manifests[c.Key] == "" {
				out = append(out, bundleFile{c.Name + " manifest", c.Manifest})
			}
		}
	}
	return out
}

// entryFor picks the index entry an engine of platform runs, as the engine itself would
// (images.BestFor); attestation entries never run anywhere.
func entryFor(platform images.Platform) func([]v1.Descriptor) int {
	return func(ds []v1.Descriptor) int {
		return images.BestFor(len(ds), platform, func(i int) (images.Platform, bool) {
			p := ds[i].Platform
			if p == nil {
				return images.Platform{}, false
			}
			return images.NormalisePlatform(p.OS, p.Architecture, p.Variant), true
		})
	}
}

// bundleArchive is the image of slot as the bundle gives it to the engine, nil without a bundle.
func (r *run) bundleArchive(slot imageSlot) *images.Archive {
	if r.bundle == nil {
		return nil
	}
	img := r.fromBundle[slot]
	return &images.Archive{From: r.bundle.Name(), Size: img.Size(), Write: func(w io.Writer) error {
		return r.bundle.WriteArchive(w, *img)
	}}
}

// offlineEngine makes the run's engine refuse pulls and registry lookups when the plan is
// offline: whatever asks (the pinned images, the control plane's bases and builds' lookups), the
// refusal names the image.
func (r *run) offlineEngine() {
	if r.plan.Offline && r.engine != nil {
		r.engine.API = docker.Offline(r.engine.API)
	}
}
