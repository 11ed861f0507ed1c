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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/pkg/jsonmessage"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/docker/engineapi"
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

// Store is an engine's image store: what its image IDs name, and how an image leaves it.
type Store string

const (
	// StoreClassic is Docker's graph-driver store (the default before Engine 29) and Podman's:
	// an image ID is the config digest, and docker save writes one platform's image with a
	// manifest of the engine's own.
	StoreClassic Store = "classic"
	// StoreContainerd is Docker's containerd image store (Engine 29's default, and new Docker
	// Desktop installs'): an image ID is the digest of the image's target, the pulled index or
	// manifest, and docker save writes that whole target, naming every platform's manifest
	// while carrying only the content the engine pulled, unless one platform is asked for.
	StoreContainerd Store = "containerd"
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
	API   docker.API
	Image pins.Image
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
	if l, err := inspect(ctx, opts.API, pin, ref, opts.Platform); err == nil {
		if err := opts.checkPlatform(ctx, l); err != nil {
			return Local{}, err
		}
		emit(Event{Status: "present", Total: l.Size})
		return l, nil
	} else if !cerrdefs.IsNotFound(err) {
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
			return Local{}, errors.Join(err, forgetIfAbsent(ctx, opts.API, opts.Recorder, rec))
		}
		if l, err = loadedInspect(ctx, opts); err != nil {
			return Local{}, err
		}
	} else {
		emit(Event{Status: "pulling"})
		if err := pull(ctx, opts.API, ref, emit); err != nil {
			return Local{}, errors.Join(pullError(ctx, opts.API, pin, err), forgetIfAbsent(ctx, opts.API, opts.Recorder, rec))
		}
		if l, err = inspect(ctx, opts.API, pin, ref, opts.Platform); err != nil {
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
	engine := opts.Platform
	if engine == (Platform{}) {
		var err error
		if engine, err = EnginePlatform(ctx, opts.API, opts.EngineName); err != nil {
			return err
		}
	}
	return checkPlatform(l, engine, opts.EngineName)
}

// Inspect is the local image the engine holds under the pin's digest reference (a selected
// image, pulled before), with the identity its store keeps.
func Inspect(ctx context.Context, api docker.API, pin pins.Image) (Local, error) {
	return inspect(ctx, api, pin, pin.DigestReference(), Platform{})
}

func inspect(ctx context.Context, api docker.API, pin pins.Image, ref string, engine Platform) (Local, error) {
	ins, err := api.ImageInspect(ctx, ref)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return Local{}, err
		}
		return Local{}, fmt.Errorf("inspect image %s: %w", ref, err)
	}
	return describe(ctx, api, pin, ref, ins, engine)
}

// describe is the local image of an inspect answer: its store, and on the containerd store the
// manifest of the engine's platform. engine is the engine's platform; the zero value asks the
// engine when it is needed.
func describe(ctx context.Context, api docker.API, pin pins.Image, ref string, ins image.InspectResponse, engine Platform) (Local, error) {
	l := Local{Pin: pin, ID: ins.ID, RepoDigests: ins.RepoDigests, Size: ins.Size,
		Platform: normalisePlatform(ins.Os, ins.Architecture, ins.Variant)}
	store, err := storeOf(ctx, api, pin, ins)
	if err != nil {
		return Local{}, err
	}
	l.Store = store
	if store != StoreContainerd || ins.Descriptor == nil {
		// The classic store has no manifests of its own; an engine whose API predates the
		// manifest list (it reports no Descriptor either) sends the whole target.
		return l, nil
	}
	if engine == (Platform{}) {
		if engine, err = EnginePlatform(ctx, api, ""); err != nil {
			return Local{}, err
		}
	}
	withManifests, err := api.ImageInspect(ctx, ref, engineapi.ImageInspectWithManifests(true))
	if err != nil {
		return Local{}, fmt.Errorf("list the manifests of image %s: %w", ref, err)
	}
	if withManifests.ID != ins.ID {
		return Local{}, fmt.Errorf("list the manifests of image %s: the engine answered image %s, then %s", ref, ins.ID, withManifests.ID)
	}
	m, ok := manifestFor(withManifests.Manifests, engine)
	if !ok {
		// The engine holds no manifest of its own platform under this image: Present's platform
		// check names the platform the image is instead.
		return l, nil
	}
	l.Manifest = m.ID
	p := m.ImageData.Platform
	l.ManifestPlatform = &p
	return l, nil
}

// storeOf tells which store the engine keeps the image in. An engine that reports the image's
// target descriptor (API 1.48 and later) keeps it in containerd; a pulled image whose ID is its
// pinned digest does too (an older API), where the classic store's ID is a config digest, which
// never equals a manifest's. Only a built image on an older API leaves the engine's driver status
// to decide.
func storeOf(ctx context.Context, api docker.API, pin pins.Image, ins image.InspectResponse) (Store, error) {
	switch {
	case ins.Descriptor != nil, pin.Digest != "" && ins.ID == pin.Digest:
		return StoreContainerd, nil
	case pin.Digest != "":
		return StoreClassic, nil
	}
	return EngineStore(ctx, api)
}

// EngineStore is the engine's image store as docker info's driver status reports it.
func EngineStore(ctx context.Context, api docker.API) (Store, error) {
	info, err := api.Info(ctx)
	if err != nil {
		return "", fmt.Errorf("read the engine's image store (docker info): %w", err)
	}
	for _, kv := range info.DriverStatus {
		if len(kv) == 2 && kv[0] == "driver-type" && kv[1] == "io.containerd.snapshotter.v1" {
			return StoreContainerd, nil
		}
	}
	return StoreClassic, nil
}

// manifestFor picks, from the manifests the engine lists under a containerd-store image, the
// image manifest whose content it holds and whose platform engine runs (bestFor). Attestation
// manifests are never picked.
func manifestFor(ms []image.ManifestSummary, engine Platform) (image.ManifestSummary, bool) {
	i := bestFor(len(ms), engine, func(i int) (Platform, bool) {
		m := ms[i]
		if m.Kind != image.ManifestKindImage || !m.Available || m.ImageData == nil {
			return Platform{}, false
		}
		p := m.ImageData.Platform
		return normalisePlatform(p.OS, p.Architecture, p.Variant), true
	})
	if i < 0 {
		return image.ManifestSummary{}, false
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

// pull runs the engine's pull of ref and turns its JSON progress stream into events. The stream
// carries the pull's errors too, as messages; the HTTP status alone does not.
func pull(ctx context.Context, api docker.API, ref string, emit func(Event)) error {
	rc, err := api.ImagePull(ctx, ref, image.PullOptions{})
	if err != nil {
		return err
	}
	defer rc.Close()
	dec := json.NewDecoder(rc)
	for {
		var m jsonmessage.JSONMessage
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("read pull progress: %w", err)
		}
		if m.Error != nil {
			return m.Error
		}
		ev := Event{Layer: m.ID, Status: m.Status}
		if m.Progress != nil {
			ev.Current, ev.Total = m.Progress.Current, m.Progress.Total
		}
		emit(ev)
	}
}

// pullError explains a failed pull. When the pin carries a tag, it asks the registry what that
// tag serves: a different digest means the pin is wrong (or the tag moved). When a local image
// has the pinned tag, it is named with its ID: it does not carry the pinned digest, so it is a
// re-tagged or locally built image, and occ will not use it.
func pullError(ctx context.Context, api docker.API, pin pins.Image, cause error) error {
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
	if d, err := api.DistributionInspect(ctx, tagged, ""); err == nil && d.Descriptor.Digest.String() != pin.Digest {
		facts = append(facts, fmt.Sprintf("the registry serves %s as %s, but the pin says %s: the pin is wrong or the tag was moved; fix the pin file (or OCC_DEVELOPMENT_PIN_FILE)", tagged, d.Descriptor.Digest, pin.Digest))
	}
	if ins, err := api.ImageInspect(ctx, tagged); err == nil {
		facts = append(facts, fmt.Sprintf("the engine has a local %s (image ID %s, RepoDigests %s) that does not carry the pinned %s: it is a re-tagged or locally built image, and occ uses only the pinned digest; remove it (docker rmi %s) or make the registry reachable", tagged, ins.ID, listOrNone(ins.RepoDigests), pin.Digest, tagged))
	}
	if len(facts) == 0 {
		return fmt.Errorf("%s; check that the registry is reachable and serves %s", msg, ref)
	}
	return fmt.Errorf("%s; %s", msg, strings.Join(facts, "; "))
}

// forgetIfAbsent drops the record of a pull that left nothing behind.
func forgetIfAbsent(ctx context.Context, api docker.API, r Recorder, rec state.Object) error {
	ref := rec.Name + "@" + rec.Digest
	if _, err := api.ImageInspect(ctx, ref); err == nil || !cerrdefs.IsNotFound(err) {
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
