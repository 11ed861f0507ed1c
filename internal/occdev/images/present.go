// Package images gets the pinned images into the cluster and proves they arrived unchanged, one
// function per concern so the flow can run each as a named step:
//
//   - Present makes a pinned image present in the engine, pulling it BY DIGEST (the engine
//     verifies the manifest digest) when absent, with progress events, and records what it
//     pulled so `down` removes exactly that;
//   - Present also refuses an image whose platform is not the engine's (a pinned single-platform
//     manifest of another architecture), before anything reaches the cluster;
//   - CheckRepoDigest refuses a local image whose RepoDigests lack the pinned digest;
//   - Import loads the images into the cluster (save piped into ctr in the node), only the
//     node's platform of each, and none the node already holds as verified;
//   - VerifyInNode proves each image in the node is the local one (Local.Holds), then tags
//     repo@sha256:<pinned> there;
//   - CheckRenderedImages refuses a rendered chart whose containers or rendered configuration
//     name anything but the pins, or that names a required pin nowhere;
//   - Status compares what the node holds with the local images, for `occ dev status`;
//   - Slots holds the images of one `up` as its lanes take them, side by side, into the engine
//     and the node (Pull, Import, Verify), each pinned image at its Slot of Pinned, with the
//     readiness the lanes beside them wait on (InTurn, InNode).
//
// What an image's identity is depends on the engine's image store (Store), and one rule
// (Local.Holds) decides it for the import, the status, reloads and the removers:
//
//   - the classic store (Docker before 29 by default, and Podman): the pinned manifest digest —
//     verified by the engine's pull → the local image ID, which is the config digest → the config
//     digest of the image in the node. docker save writes a manifest of the engine's own, so the
//     node's manifest differs from the pin; the config survives unchanged.
//   - the containerd store (Docker 29's default, new Docker Desktop installs): the pinned digest
//     is the local image ID itself (the index or manifest the engine pulled and verified) → the
//     node holds the manifest that index lists for the node's platform (or the index, followed
//     there to that entry) → its config, read in the node and recorded. The node holds the
//     registry's own manifest digest, so this chain is the stronger one.
package images

import (
	"context"
	"errors"
	"fmt"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/state"
)

// Recorder keeps the state record; *state.Dir implements it.
type Recorder = state.Recorder

// pulledRecord is the record of a pull `up` made into the engine messages call engineName
// ("Docker", "Podman"; empty is Docker): repository, pinned digest and, once pulled, the image
// ID. `down` removes that digest reference, never an image that was there before.
func pulledRecord(pin pins.Image, id, engineName string) state.Object {
	kind := engine.Docker
	for _, k := range engine.Kinds() {
		if k.Name() == engineName {
			kind = k
		}
	}
	return state.Object{Type: TypePulledImage, Name: pin.Name(), Digest: pin.Digest, ID: id, Engine: kind}
}

// Event is one progress report: of a layer while the engine pulls, or of an image as a whole
// (Layer empty).
type Event struct {
	// Image is the pinned reference the event is about.
	Image string
	// Layer is the engine's layer ID, empty for image-level events.
	Layer string
	// Status is the engine's wording ("Downloading", "Pull complete") or occ's ("present",
	// "pulling", "pulled").
	Status string
	// Current and Total are bytes, when the engine reports them.
	Current, Total int64
}

// Store is an engine's image store: what its image IDs name, and how an image leaves it
// (engine.Store).
type Store = engine.Store

// The stores an engine keeps images in (engine.StoreClassic, engine.StoreContainerd).
const (
	StoreClassic    = engine.StoreClassic
	StoreContainerd = engine.StoreContainerd
)

// Local is a pinned image as the engine holds it.
type Local struct {
	Pin pins.Image
	// ID is the engine's image ID: the config digest on the classic store, the digest of the
	// image's target (the pinned index or manifest) on the containerd store.
	ID    string
	Store Store
	// Manifest is, on the containerd store, the manifest of the node's platform the engine lists
	// under ID (ID itself for a single manifest); the engine saves only it. It is empty on the
	// classic store, and where the engine's API cannot list manifests (before 1.48): the whole
	// target then travels and the node follows it to its platform.
	Manifest string
	// ManifestPlatform is that manifest's platform as the engine lists it, the value the engine's
	// save is asked for (variants are spelled as the index spells them).
	ManifestPlatform *ocispec.Platform
	RepoDigests      []string
	Size             int64
	// Platform is the image's OS and architecture as the engine reports them (image inspect).
	Platform Platform
	// Pulled reports whether Present pulled it (and recorded it for removal by `down`).
	Pulled bool
	// Built reports an image occ built in the engine (Built): its Pin.Digest is its image ID, not
	// a registry digest.
	Built bool
}

// Holds reports whether content, an image in the node followed to its manifest and config, is
// this local image by the identity its store keeps; when it is not, it says which link of the
// chain broke.
func (l Local) Holds(content nodeContent) (bool, string) {
	switch {
	case l.Store != StoreContainerd:
		if content.Config == l.ID {
			return true, ""
		}
		return false, fmt.Sprintf("its config digest is %s, but the local image's config digest (its image ID on the %s store) is %s", content.Config, l.Store, l.ID)
	case content.Target == l.ID:
		return true, "" // the very index or manifest the engine holds, followed in the node
	case l.Manifest != "" && content.Manifest == l.Manifest:
		return true, ""
	case l.Manifest != "":
		return false, fmt.Sprintf("it holds manifest %s, but the engine's image %s lists manifest %s for %s", content.Manifest, l.ID, l.Manifest, platformOf(l))
	default:
		return false, fmt.Sprintf("its target is %s, not the engine's image %s", content.Target, l.ID)
	}
}

// platformOf is the platform a local image's manifest is for, as the engine lists it.
func platformOf(l Local) string {
	if p := l.ManifestPlatform; p != nil {
		return Platform{OS: p.OS, Architecture: p.Architecture, Variant: p.Variant}.String()
	}
	return l.Platform.String()
}

// PresentOptions are the inputs of Present.
type PresentOptions struct {
	Engine engine.Engine
	Image  pins.Image
	// Recorder receives the pulled image's record before the pull starts.
	Recorder Recorder
	// Progress receives events; nil drops them.
	Progress func(Event)
	// Platform is the engine's platform; the zero value asks the engine (EnginePlatform).
	Platform Platform
	// EngineName is how messages name the engine ("Docker", "Podman"); empty means Docker.
	EngineName string
	// Archive, when set, is where an image the engine lacks comes from instead of its registry
	// (a bundle): it is loaded, not pulled, recorded as a pull is.
	Archive *Archive
	// Offline refuses a pull (*OfflineError): an image the engine lacks must come from Archive.
	Offline bool
}

// Present makes the pinned image present in the engine. An image already there under its digest
// reference is used as it is and not recorded (`down` never removes what was there before).
// Otherwise the image is recorded, then pulled by digest, so the engine itself verifies that
// what it stores is what the pin names; a re-tagged or locally built image with the same tag
// cannot stand in for it.
//
// Either way the image must be of the engine's platform. A pinned multi-platform index makes the
// engine pull its own platform's image; a pinned single-platform manifest is pulled as it is,
// whatever its architecture, and would fail only when the cluster starts it. Present refuses it
// with a *PlatformError instead; a pulled image stays recorded, so the rollback removes it.
func Present(ctx context.Context, opts PresentOptions) (Local, error) {
	pin := opts.Image
	ref := pin.DigestReference()
	if pin.Digest == "" {
		return Local{}, fmt.Errorf("image %s has no pinned digest; pin it as <reference>@sha256:<64 hex>", pin)
	}
	emit := func(ev Event) {
		if opts.Progress != nil {
			ev.Image = pin.String()
			opts.Progress(ev)
		}
	}
	if l, err := inspect(ctx, opts.Engine, pin, ref, opts.Platform); err == nil {
		if err := opts.checkPlatform(ctx, l); err != nil {
			return Local{}, err
		}
		emit(Event{Status: "present", Total: l.Size})
		return l, nil
	} else if !engine.IsNotFound(err) {
		return Local{}, err
	}
	if opts.Archive == nil && opts.Offline {
		return Local{}, &OfflineError{Image: ref}
	}
	if opts.Recorder == nil {
		return Local{}, fmt.Errorf("pull %s: no Recorder; a pulled image must be recorded before the pull", ref)
	}
	rec := pulledRecord(pin, "", opts.EngineName)
	if err := opts.Recorder.Record(rec); err != nil {
		return Local{}, fmt.Errorf("record image %s before pulling it: %w", ref, err)
	}
	var l Local
	var err error
	if opts.Archive != nil {
		emit(Event{Status: "loading from " + opts.Archive.From, Total: opts.Archive.Size})
		if err := load(ctx, opts, emit); err != nil {
			return Local{}, errors.Join(err, forgetIfAbsent(ctx, opts.Engine, opts.Recorder, rec))
		}
		if l, err = loadedInspect(ctx, opts); err != nil {
			return Local{}, err
		}
	} else {
		emit(Event{Status: "pulling"})
		if err := pull(ctx, opts.Engine, ref, emit); err != nil {
			return Local{}, errors.Join(pullError(ctx, opts.Engine, pin, err), forgetIfAbsent(ctx, opts.Engine, opts.Recorder, rec))
		}
		if l, err = inspect(ctx, opts.Engine, pin, ref, opts.Platform); err != nil {
			return Local{}, fmt.Errorf("inspect %s after pulling it: %w", ref, err)
		}
	}
	l.Pulled = true
	rec.ID = l.ID
	if err := opts.Recorder.Record(rec); err != nil {
		return Local{}, fmt.Errorf("record image ID of %s: %w", ref, err)
	}
	if err := opts.checkPlatform(ctx, l); err != nil {
		return Local{}, err
	}
	done := "pulled"
	if opts.Archive != nil {
		done = "loaded from " + opts.Archive.From
	}
	emit(Event{Status: done, Current: l.Size, Total: l.Size})
	return l, nil
}

// checkPlatform compares the local image's platform with the engine's, asking the engine when
// the options do not carry it.
func (opts PresentOptions) checkPlatform(ctx context.Context, l Local) error {
	if l.Platform.Architecture == "" {
		return nil // the config states no platform, so there is nothing to compare
	}
	platform := opts.Platform
	if platform == (Platform{}) {
		var err error
		if platform, err = EnginePlatform(ctx, opts.Engine, opts.EngineName); err != nil {
			return err
		}
	}
	return checkPlatform(l, platform, opts.EngineName)
}

// Inspect is the local image the engine holds under the pin's digest reference (a selected
// image, pulled before), with the identity its store keeps.
func Inspect(ctx context.Context, eng engine.Engine, pin pins.Image) (Local, error) {
	return inspect(ctx, eng, pin, pin.DigestReference(), Platform{})
}

func inspect(ctx context.Context, eng engine.Engine, pin pins.Image, ref string, platform Platform) (Local, error) {
	img, err := eng.Image(ctx, ref)
	if err != nil {
		if engine.IsNotFound(err) {
			return Local{}, err
		}
		return Local{}, fmt.Errorf("inspect image %s: %w", ref, err)
	}
	return describe(ctx, eng, pin, ref, img, platform)
}

// describe is the local image of an inspect answer: its store, and on the containerd store the
// manifest of the engine's platform. platform is the engine's platform; the zero value asks the
// engine when it is needed.
func describe(ctx context.Context, eng engine.Engine, pin pins.Image, ref string, img engine.Image, platform Platform) (Local, error) {
	l := Local{Pin: pin, ID: img.ID, RepoDigests: img.RepoDigests, Size: img.Size, Platform: img.Platform}
	store, err := storeOf(ctx, eng, pin, img)
	if err != nil {
		return Local{}, err
	}
	l.Store = store
	if store != StoreContainerd || img.Target == "" {
		// The classic store has no manifests of its own; an engine whose API predates the
		// manifest list (it reports no Descriptor either) sends the whole target.
		return l, nil
	}
	if platform == (Platform{}) {
		if platform, err = EnginePlatform(ctx, eng, ""); err != nil {
			return Local{}, err
		}
	}
	withManifests, err := eng.ImageManifests(ctx, ref)
	if err != nil {
		return Local{}, fmt.Errorf("list the manifests of image %s: %w", ref, err)
	}
	if withManifests.ID != img.ID {
		return Local{}, fmt.Errorf("list the manifests of image %s: the engine answered image %s, then %s", ref, img.ID, withManifests.ID)
	}
	m, ok := manifestFor(withManifests.Manifests, platform)
	if !ok {
		// The engine holds no manifest of its own platform under this image: Present's platform
		// check names the platform the image is instead.
		return l, nil
	}
	l.Manifest = m.ID
	p := *m.Platform
	l.ManifestPlatform = &p
	return l, nil
}

// storeOf tells which store the engine keeps the image in. An engine that reports the image's
// target descriptor (API 1.48 and later) keeps it in containerd; a pulled image whose ID is its
// pinned digest does too (an older API), where the classic store's ID is a config digest, which
// never equals a manifest's. Only a built image on an older API leaves the engine's driver status
// to decide.
func storeOf(ctx context.Context, eng engine.Engine, pin pins.Image, img engine.Image) (Store, error) {
	switch {
	case img.Target != "", pin.Digest != "" && img.ID == pin.Digest:
		return StoreContainerd, nil
	case pin.Digest != "":
		return StoreClassic, nil
	}
	return EngineStore(ctx, eng)
}

// EngineStore is the engine's image store as its identity (docker info's driver status) reports
// it.
func EngineStore(ctx context.Context, eng engine.Engine) (Store, error) {
	id, err := eng.Identify(ctx)
	if err != nil {
		return "", fmt.Errorf("read the engine's image store (docker info): %w", err)
	}
	return id.Store, nil
}

// manifestFor picks, from the manifests the engine lists under a containerd-store image, the
// image manifest whose content it holds and whose platform engine runs (bestFor). Attestation
// manifests are never picked.
func manifestFor(ms []engine.Manifest, platform Platform) (engine.Manifest, bool) {
	i := bestFor(len(ms), platform, func(i int) (Platform, bool) {
		m := ms[i]
		if m.Kind != engine.ManifestImage || !m.Available || m.Platform == nil {
			return Platform{}, false
		}
		p := m.Platform
		return normalisePlatform(p.OS, p.Architecture, p.Variant), true
	})
	if i < 0 {
		return engine.Manifest{}, false
	}
	return ms[i], true
}

// BestFor is bestFor, for an index read elsewhere (a bundle's).
func BestFor(n int, platform Platform, platformOf func(i int) (Platform, bool)) int {
	return bestFor(n, platform, platformOf)
}

// bestFor is the index of the candidate (of n, each with its platform, or none) that runs on
// platform as containerd's platform matcher prefers it: of those compatible with it, the one of
// exactly its variant, else the first. -1 when none is compatible.
func bestFor(n int, platform Platform, platformOf func(i int) (Platform, bool)) int {
	first := -1
	for i := range n {
		p, ok := platformOf(i)
		if !ok || !compatible(p, platform) {
			continue
		}
		if p.Variant == platform.Variant {
			return i
		}
		if first < 0 {
			first = i
		}
	}
	return first
}

// pull runs the engine's pull of ref and turns its progress into events; a failure the engine
// reports in its progress is the pull's error.
func pull(ctx context.Context, eng engine.Engine, ref string, emit func(Event)) error {
	return eng.Pull(ctx, ref, func(p engine.PullProgress) {
		emit(Event{Layer: p.Layer, Status: p.Status, Current: p.Current, Total: p.Total})
	})
}

// pullError explains a failed pull. When the pin carries a tag, it asks the registry what that
// tag serves: a different digest means the pin is wrong (or the tag moved). When a local image
// has the pinned tag, it is named with its ID: it does not carry the pinned digest, so it is a
// re-tagged or locally built image, and occ will not use it.
func pullError(ctx context.Context, eng engine.Engine, pin pins.Image, cause error) error {
	ref := pin.DigestReference()
	msg := fmt.Sprintf("pull pinned image %s by digest: %v", ref, cause)
	if ctx.Err() != nil {
		return fmt.Errorf("pull pinned image %s: %w", ref, ctx.Err())
	}
	if pin.Tag == "" {
		return fmt.Errorf("%s; check that the registry is reachable and serves %s", msg, ref)
	}
	tagged := pin.Name() + ":" + pin.Tag
	var facts []string
	if d, err := eng.ResolveTag(ctx, tagged); err == nil && d != pin.Digest {
		facts = append(facts, fmt.Sprintf("the registry serves %s as %s, but the pin says %s: the pin is wrong or the tag was moved; fix the pin file (or OCC_DEVELOPMENT_PIN_FILE)", tagged, d, pin.Digest))
	}
	if ins, err := eng.Image(ctx, tagged); err == nil {
		facts = append(facts, fmt.Sprintf("the engine has a local %s (image ID %s, RepoDigests %s) that does not carry the pinned %s: it is a re-tagged or locally built image, and occ uses only the pinned digest; remove it (docker rmi %s) or make the registry reachable", tagged, ins.ID, listOrNone(ins.RepoDigests), pin.Digest, tagged))
	}
	if len(facts) == 0 {
		return fmt.Errorf("%s; check that the registry is reachable and serves %s", msg, ref)
	}
	return fmt.Errorf("%s; %s", msg, strings.Join(facts, "; "))
}

// forgetIfAbsent drops the record of a pull that left nothing behind.
func forgetIfAbsent(ctx context.Context, eng engine.Engine, r Recorder, rec state.Object) error {
	ref := rec.Name + "@" + rec.Digest
	if _, err := eng.Image(ctx, ref); err == nil || !engine.IsNotFound(err) {
		return nil // present, or unknown: keep the record for down
	}
	if err := r.Forget(rec); err != nil {
		return fmt.Errorf("forget the record of image %s: %w", ref, err)
	}
	return nil
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return "[" + strings.Join(s, ", ") + "]"
}
