package oce

import (
	"context"
	"fmt"
	"strings"

	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/profile"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/occdev/step"
	"github.com/openclaw/occ/internal/progress"
)

// DescribeBasePulls is the dry run of PullBases: each base image by the reference the builds
// name it by, with how it is pulled, where the value came from and where it is used.
func DescribeBasePulls(op *Plan) step.Description {
	if len(op.BaseImages) == 0 {
		return step.Note("nothing pulled: the builds name no base image")
	}
	items := make([]step.Item, 0, len(op.BaseImages))
	for _, b := range op.BaseImages {
		items = append(items, step.Image{Reference: b.Image, Where: step.InEngine,
			Note: b.How() + "; from " + b.Source + "; for " + b.UsedIn()})
	}
	d := step.Describe(items...)
	d.Note = "a base the engine already has by its digest is used as it is, and down leaves it"
	return d
}

// PullBases makes every base image of the planned builds present in the engine by digest,
// resolving a base given as a tag to the digest its registry serves now, and records each (the
// images it pulled as objects `down` removes, all of them in the control plane's record), so
// the builds fetch nothing by themselves. It returns every base by the digest the builds use.
func PullBases(ctx context.Context, env profile.Env, rep progress.Reporter, op *Plan) ([]controlplane.ResolvedBase, error) {
	engine := env.Engine()
	var bases []controlplane.ResolvedBase
	var recs []state.BaseImage
	for _, b := range op.BaseImages {
		pin := b.Pin()
		if b.Tag {
			resolved, err := controlplane.ResolveTag(ctx, engine.Verbs(), pin)
			if err != nil {
				return nil, fmt.Errorf("base image %s: %w", b.Image, err)
			}
			rep.Note(fmt.Sprintf("%s is a tag (from %s): resolved to %s at its registry; the builds use that digest", b.Image, b.Source, resolved.Digest))
			pin = resolved
		}
		l, err := images.Present(ctx, images.PresentOptions{Engine: engine.Verbs(), EngineName: engine.Name(), Image: pin, Recorder: env.State(), Progress: PullProgress(rep)})
		if err != nil {
			return nil, fmt.Errorf("base image %s (%s): %w", b.Image, b.Uses[0], err)
		}
		bases = append(bases, controlplane.ResolvedBase{BaseImage: b, Reference: pin})
		rec := state.BaseImage{Given: b.Image, Reference: pin.String(), ID: l.ID, Resolved: b.Tag, Source: b.Source}
		for _, u := range b.Uses {
			rec.Uses = append(rec.Uses, u.String())
		}
		recs = append(recs, rec)
	}
	return bases, env.State().Update(func(s *state.State) { s.ControlPlane.BaseImages = recs })
}

// BaseSummary describes the pulled base images for the summary.
func BaseSummary(bases []controlplane.ResolvedBase) []string {
	var out []string
	for _, b := range bases {
		line := b.Reference.String()
		if b.Tag {
			line += " (resolved from the tag " + b.Image + ")"
		}
		var where []string
		for _, u := range b.Uses {
			where = append(where, u.String())
		}
		out = append(out, line+" for "+strings.Join(where, ", "))
	}
	return out
}

// PullProgress puts a pull's events on the step's line: one running byte count over all
// layers, and a note when the image was already there.
func PullProgress(rep progress.Reporter) func(images.Event) {
	totals := images.Totals(rep.Transfer)
	return func(ev images.Event) {
		if ev.Layer != "" {
			totals(ev)
			return
		}
		if ev.Status == "present" {
			rep.Note("already in the engine by digest; used as it is")
		}
	}
}

// SelectedLocal is a selected image as the import takes it: its digest reference, which the
// engine's RepoDigests must carry (it came from a registry, by that digest).
func SelectedLocal(ctx context.Context, engine *docker.Engine, img controlplane.LocalImage) (images.Local, error) {
	pin, err := pins.ParseImage(img.Reference)
	if err != nil {
		return images.Local{}, err
	}
	l, err := images.Inspect(ctx, engine.Verbs(), pin)
	if err != nil {
		return images.Local{}, fmt.Errorf("inspect selected image %s: %w", img.Reference, err)
	}
	return l, nil
}
