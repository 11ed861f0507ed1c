package images

import (
	"context"
	"fmt"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/state"
)

// RemovePulledImage undoes a recorded pull (TypePulledImage): it removes the digest
// reference `up` pulled. Only that reference goes; if the user has tagged the image since, the
// engine keeps the image under the other names. An image whose ID is not the recorded one is
// left alone (someone pulled it again). A record without an ID is of a pull that was
// interrupted: the image can only exist if that pull completed in the engine, so it is removed
// too.
func RemovePulledImage(ctx context.Context, eng engine.Engine, rec state.Object) (state.Removal, error) {
	if rec.Type != TypePulledImage {
		return state.Removal{}, fmt.Errorf("remove pulled image: state entry %s is not a %s record", rec, TypePulledImage)
	}
	ref := rec.Name + "@" + rec.Digest
	ins, found, err := inspectRef(ctx, eng, ref)
	if err != nil {
		return state.Removal{}, err
	}
	if !found {
		return state.Removal{Outcome: state.AlreadyGone}, nil
	}
	if rec.ID != "" && ins.ID != rec.ID {
		return state.Removal{Outcome: state.LeftAlone, Detail: fmt.Sprintf("%s is now image %s, not the %s occ pulled", ref, ins.ID, rec.ID)}, nil
	}
	// A container still running the image (another environment's k3d node, which runs the
	// same pinned node image) keeps it: the engine refuses to untag its only reference, and
	// that environment's own record does not name it, so it is left, with the reason, rather
	// than failing this environment's down for ever.
	return untagRecorded(ctx, eng, ref)
}

// untagRecorded removes ref, a name occ recorded: an image a container still uses keeps its
// name (the engine refuses to untag its only reference) and is left, with the reason.
func untagRecorded(ctx context.Context, eng engine.Engine, ref string) (state.Removal, error) {
	if err := eng.Untag(ctx, ref); engine.IsInUse(err) {
		return state.Removal{Outcome: state.LeftAlone, Detail: fmt.Sprintf("%s is in use by a container (%v)", ref, err)}, nil
	} else if err != nil && !engine.IsNotFound(err) {
		return state.Removal{}, fmt.Errorf("remove image %s: %w", ref, err)
	}
	return state.Removal{Outcome: state.Removed}, nil
}

// inspectRecorded reports whether ref, a name occ recorded, still names the image id occ made
// under it (made: "occ pulled", "occ built"); any image when id is empty.
func inspectRecorded(ctx context.Context, eng engine.Engine, ref, id, made string) state.Inspection {
	ins, found, err := inspectRef(ctx, eng, ref)
	switch {
	case err != nil:
		return state.Inspection{State: state.Unknown, Detail: err.Error()}
	case !found:
		return state.Inspection{State: state.Missing}
	case id != "" && ins.ID != id:
		return state.Inspection{State: state.Changed, Detail: fmt.Sprintf("%s is now image %s, not the %s %s", ref, ins.ID, id, made)}
	}
	return state.Inspection{State: state.Present, Detail: "image " + ins.ID}
}

// removeStagingTag removes a staging tag. The tag's name is occ's own (derived from the cluster's
// name), so it is removed even if it no longer names the image staged under it, but only while
// that image keeps another reference: removing the tag then only untags, and never deletes an
// image occ did not make. wantID may be empty (a crash before the tag was made, or an unknown ID).
func removeStagingTag(ctx context.Context, eng engine.Engine, tag, wantID string) error {
	ins, found, err := inspectRef(ctx, eng, tag)
	if err != nil || !found {
		return err
	}
	if ins.ID != wantID && len(ins.RepoTags)+len(ins.RepoDigests) < 2 {
		return fmt.Errorf("staging tag %s names image %s and is its only reference; occ leaves it: remove it yourself (docker rmi %s)", tag, ins.ID, tag)
	}
	return untag(ctx, eng, tag)
}

func inspectRef(ctx context.Context, eng engine.Engine, ref string) (engine.Image, bool, error) {
	ins, err := eng.Image(ctx, ref)
	if engine.IsNotFound(err) {
		return engine.Image{}, false, nil
	}
	if err != nil {
		return engine.Image{}, false, fmt.Errorf("inspect image %s: %w", ref, err)
	}
	return ins, true, nil
}

// untag removes one reference. Force stays off: an image a container still uses is reported,
// not yanked from under it.
func untag(ctx context.Context, eng engine.Engine, ref string) error {
	if err := eng.Untag(ctx, ref); err != nil && !engine.IsNotFound(err) {
		return fmt.Errorf("remove image %s: %w; stop what uses it and run occ dev down again", ref, err)
	}
	return nil
}
