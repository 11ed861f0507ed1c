package images

import (
	"context"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/state"
)

// TypeBuildHold is an environment's hold on an image it built (engine.BuildRequest.Hold): a tag
// in occ's namespace, named after the built tag's repository and the environment's cluster, and
// once the build made it, the image ID it names.
const TypeBuildHold state.Type = "build-hold"

// holdRepository prefixes holds, as stagingRepository prefixes staging tags.
const holdRepository = "occ.local/build/"

// HeldNote says in a dry run that a build is held (HoldTag).
const HeldNote = "held by the environment's own tag under " + holdRepository + " until down"

// tagPattern is what a tag may be.
var tagPattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)

func init() {
	state.Register(state.Kind{Type: TypeBuildHold, Fields: state.Fields{ID: true, Engine: true}, Check: checkHold,
		Describe: func(o state.Object) string {
			return docker.EngineNameOf(o) + " tag " + o.Name + " (the hold on a built image)"
		},
		Order: state.SideBySide,
		Remover: func(c *state.Connections) state.Remover {
			return HoldRemover(docker.VerbsOf(docker.RecordedEngine(c)))
		}})
}

// HoldTag is the hold of the environment of st on the image built as built (a tag): one name per
// built repository and environment, so an environment's rebuild moves its own hold and no other
// environment's. The tag is the environment's cluster name (unique on its engine, and the name its
// staging tags carry); a cluster without a name that is a tag gives the state's owner instead.
func HoldTag(built string, st state.State) (string, error) {
	ref, err := pins.ParseImage(built)
	if err != nil {
		return "", fmt.Errorf("built image %s: %w", built, err)
	}
	tag := st.Cluster.Name
	if !tagPattern.MatchString(tag) {
		tag = "env-" + st.Owner()
	}
	return holdRepository + path.Base(ref.Repository) + ":" + tag, nil
}

// HoldRecord is the record of a hold: before the build, without an image ID; after it, with the
// ID the hold names.
func HoldRecord(hold, id string) state.Object {
	return state.Object{Type: TypeBuildHold, Name: hold, ID: id}
}

func checkHold(o state.Object) error {
	if !strings.HasPrefix(o.Name, holdRepository) {
		return fmt.Errorf("build hold %q must be a tag under %s", o.Name, holdRepository)
	}
	if ref, err := pins.ParseImage(o.Name); err != nil || ref.Tag == "" || ref.Digest != "" {
		return fmt.Errorf("build hold %q must be a tag reference", o.Name)
	}
	if o.ID != "" && !digestPattern.MatchString(o.ID) {
		return fmt.Errorf("build hold %s: image ID %q must be sha256: and 64 lower-case hex digits", o.Name, o.ID)
	}
	return nil
}

// HoldRemover is the state.Remover of build holds (TypeBuildHold), over the recorded engine.
// Remove untags the hold, whatever image it names now: the name is occ's own, made for this
// environment alone, and only occ's builds of this environment name an image by it. When it is
// the image's last name the image goes with it, as it went when another build took its tag.
func HoldRemover(engine Engine) state.Remover { return holds{engine: engine} }

type holds struct{ engine Engine }

func (r holds) Remove(ctx context.Context, o state.Object) (state.Removal, error) {
	eng, err := r.engine(ctx)
	if err != nil {
		return state.Removal{}, err
	}
	if _, found, err := inspectRef(ctx, eng, o.Name); err != nil {
		return state.Removal{}, err
	} else if !found {
		return state.Removal{Outcome: state.AlreadyGone}, nil
	}
	return untagRecorded(ctx, eng, o.Name)
}

func (r holds) Inspect(ctx context.Context, o state.Object) state.Inspection {
	eng, err := r.engine(ctx)
	if err != nil {
		return state.Inspection{State: state.Unknown, Detail: err.Error()}
	}
	return inspectRecorded(ctx, eng, o.Name, o.ID, "occ built")
}
