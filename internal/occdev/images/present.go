// Package images gets the pinned images into the cluster and proves they arrived unchanged, one
// function per concern so the flow can run each as a named step:
//
//   - Present makes a pinned image present in the Docker engine, pulling it BY DIGEST (the engine
//     verifies the manifest digest) when absent, with progress events, and records what it
//     pulled so `down` removes exactly that;
//   - Present also refuses an image whose platform is not the engine's (a pinned single-platform
//     manifest of another architecture), before anything reaches the cluster;
//   - CheckRepoDigest refuses a local image whose RepoDigests lack the pinned digest;
//   - Import loads all images into the cluster in one pass (save piped into ctr in the node);
//   - VerifyInNode reads the node's containerd and requires each image's config digest to equal
//     the local image ID the pinned pull produced, then tags repo@sha256:<pinned> there;
//   - CheckRenderedImages refuses a rendered chart whose containers or rendered configuration
//     name anything but the pins, or that names a required pin nowhere;
//   - Status compares what the node holds with the local images, for `occ dev status`.
//
// The chain of trust is: pinned manifest digest —(verified by the engine's pull)→ local image ID
// (the config digest) —(must equal)→ the config digest of the image in the node. `docker save`
// does not keep the registry manifest, so the node's manifest digest differs from the pin; the
// config digest survives unchanged, which is why it is the value compared.
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

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/state"
)

// Recorder keeps the state record; *state.Dir implements it.
type Recorder = state.Recorder

// pulledRecord is the record of a pull `up` made into the engine messages call engineName
// (PulledType): repository, pinned digest and, once pulled, the image ID. `down` removes that
// digest reference, never an image that was there before.
func pulledRecord(pin pins.Image, id, engineName string) state.Object {
	return state.Object{Type: PulledType(engineName), Name: pin.Name(), Digest: pin.Digest, ID: id}
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

// Local is a pinned image as the engine holds it.
type Local struct {
	Pin pins.Image
	// ID is the engine's image ID, the sha256 of the image's config: the value the node must
	// hold after the import.
	ID          string
	RepoDigests []string
	Size        int64
	// Platform is the image's OS and architecture as the engine reports them (image inspect).
	Platform Platform
	// Pulled reports whether Present pulled it (and recorded it for removal by `down`).
	Pulled bool
	// Built reports an image occ built in the engine (Built): its Pin.Digest is its config
	// digest, not a registry manifest digest.
	Built bool
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
	if l, err := inspect(ctx, opts.API, pin, ref); err == nil {
		if err := opts.checkPlatform(ctx, l); err != nil {
			return Local{}, err
		}
		emit(Event{Status: "present", Total: l.Size})
		return l, nil
	} else if !cerrdefs.IsNotFound(err) {
		return Local{}, err
	}
	if opts.Recorder == nil {
		return Local{}, fmt.Errorf("pull %s: no Recorder; a pulled image must be recorded before the pull", ref)
	}
	rec := pulledRecord(pin, "", opts.EngineName)
	if err := opts.Recorder.Record(rec); err != nil {
		return Local{}, fmt.Errorf("record image %s before pulling it: %w", ref, err)
	}
	emit(Event{Status: "pulling"})
	if err := pull(ctx, opts.API, ref, emit); err != nil {
		return Local{}, errors.Join(pullError(ctx, opts.API, pin, err), forgetIfAbsent(ctx, opts.API, opts.Recorder, rec))
	}
	l, err := inspect(ctx, opts.API, pin, ref)
	if err != nil {
		return Local{}, fmt.Errorf("inspect %s after pulling it: %w", ref, err)
	}
	l.Pulled = true
	rec.ID = l.ID
	if err := opts.Recorder.Record(rec); err != nil {
		return Local{}, fmt.Errorf("record image ID of %s: %w", ref, err)
	}
	if err := opts.checkPlatform(ctx, l); err != nil {
		return Local{}, err
	}
	emit(Event{Status: "pulled", Current: l.Size, Total: l.Size})
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

func inspect(ctx context.Context, api docker.API, pin pins.Image, ref string) (Local, error) {
	ins, err := api.ImageInspect(ctx, ref)
	if err != nil {
		if cerrdefs.IsNotFound(err) {
			return Local{}, err
		}
		return Local{}, fmt.Errorf("inspect image %s: %w", ref, err)
	}
	return Local{Pin: pin, ID: ins.ID, RepoDigests: ins.RepoDigests, Size: ins.Size,
		Platform: normalisePlatform(ins.Os, ins.Architecture, ins.Variant)}, nil
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
