package images

import (
	"context"
	"fmt"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/state"
)

// Engine connects to the recorded engine on first use (docker.Recorded, through docker.VerbsOf).
type Engine func(context.Context) (engine.Engine, error)

// PulledImageRemover is the state.Remover of recorded pulls (TypePulledImage), built from
// the recorded engine alone.
func PulledImageRemover(engine Engine) state.Remover { return pulled{engine: engine} }

type pulled struct{ engine Engine }

func (r pulled) Remove(ctx context.Context, o state.Object) (state.Removal, error) {
	eng, err := r.engine(ctx)
	if err != nil {
		return state.Removal{}, err
	}
	return RemovePulledImage(ctx, eng, o)
}

func (r pulled) Inspect(ctx context.Context, o state.Object) state.Inspection {
	eng, err := r.engine(ctx)
	if err != nil {
		return state.Inspection{State: state.Unknown, Detail: err.Error()}
	}
	return inspectRecorded(ctx, eng, o.Name+"@"+o.Digest, o.ID, "occ pulled")
}

// ClusterImageRemover is the state.Remover of images imported into the recorded cluster
// (TypeClusterImage), built from the recorded access (whose NodeAddress is the node's
// container) and engine. Remove drops the image's name in the node and any staging tag a crash
// left in the engine; the node's content goes with the cluster. Inspect compares the node's
// config digest with the recorded one.
func ClusterImageRemover(access state.Cluster, engine Engine) state.Remover {
	return imported{access: access, engine: engine}
}

type imported struct {
	access state.Cluster
	engine Engine
}

func (r imported) pin(o state.Object) (pins.Image, error) {
	pin, err := pins.ParseImage(o.Name + "@" + o.Digest)
	if err != nil {
		return pins.Image{}, fmt.Errorf("state entry %s: %w", o, err)
	}
	return pin, nil
}

func (r imported) Remove(ctx context.Context, o state.Object) (state.Removal, error) {
	pin, err := r.pin(o)
	if err != nil {
		return state.Removal{}, err
	}
	eng, err := r.engine(ctx)
	if err != nil {
		return state.Removal{}, err
	}
	if r.access.Name != "" {
		if err := removeStagingTag(ctx, eng, StagingTag(pin, r.access.Name), o.ID); err != nil {
			return state.Removal{}, err
		}
	}
	if r.access.NodeAddress == "" {
		return state.Removal{Outcome: state.AlreadyGone, Detail: "the state records no node to look in"}, nil
	}
	n := nodeContainerd{eng: eng, node: r.access.NodeAddress}
	list, err := n.list(ctx)
	if err != nil {
		if exists, _ := n.eng.ContainerExists(ctx, r.access.NodeAddress); !exists {
			// The node is gone (the cluster was removed): so is everything in it.
			return state.Removal{Outcome: state.AlreadyGone}, nil
		}
		return state.Removal{}, fmt.Errorf("list images in node %s: %w", r.access.NodeAddress, err)
	}
	ref := pin.DigestReference()
	for _, row := range list {
		if row.Name == ref {
			if _, err := n.ctr(ctx, "images", "rm", ref); err != nil {
				return state.Removal{}, fmt.Errorf("remove %s from node %s: %w", ref, r.access.NodeAddress, err)
			}
			return state.Removal{Outcome: state.Removed}, nil
		}
	}
	return state.Removal{Outcome: state.AlreadyGone}, nil
}

func (r imported) Inspect(ctx context.Context, o state.Object) state.Inspection {
	pin, err := r.pin(o)
	if err != nil {
		return state.Inspection{State: state.Unknown, Detail: err.Error()}
	}
	eng, err := r.engine(ctx)
	if err != nil {
		return state.Inspection{State: state.Unknown, Detail: err.Error()}
	}
	if r.access.NodeAddress == "" {
		return state.Inspection{State: state.Unknown, Detail: "the state records no node to look in"}
	}
	n := nodeContainerd{eng: eng, node: r.access.NodeAddress}
	list, err := n.list(ctx)
	if err != nil {
		if exists, cerr := n.eng.ContainerExists(ctx, r.access.NodeAddress); !exists && cerr == nil {
			// The node is gone (its cluster was removed): so is everything in it.
			return state.Inspection{State: state.Missing, Detail: "node " + r.access.NodeAddress + " no longer exists"}
		}
		return state.Inspection{State: state.Unknown, Detail: err.Error()}
	}
	content, found, err := n.resolve(ctx, list, pin.DigestReference())
	switch {
	case err != nil:
		return state.Inspection{State: state.Unknown, Detail: err.Error()}
	case !found:
		return state.Inspection{State: state.Missing, Detail: "not in node " + r.access.NodeAddress}
	case o.ID != "" && content.Config != o.ID:
		return state.Inspection{State: state.Changed, Detail: fmt.Sprintf("node config digest %s, recorded %s", content.Config, o.ID)}
	}
	return state.Inspection{State: state.Present, Detail: "config " + content.Config}
}
