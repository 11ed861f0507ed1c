package k3d

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/openclaw/occ/internal/occdev/engine"
)

// ErrNotOurs is returned by Delete for a cluster that is not the recorded one; nothing was
// deleted.
var ErrNotOurs = errors.New("not the recorded cluster")

// sweepRounds bounds the passes over leftovers: a removal can fail while Docker is still tearing
// down a neighbour (a network whose last container is going away), and another pass finishes.
const sweepRounds = 5

// Delete removes the cluster of id, only after Inspect has confirmed it is the recorded one
// (name, k3d's labels, the owner label and, when recorded, the kube-system UID), and then proves
// that no container, network or volume of it is left. A missing cluster is not an error, so
// Delete is safe to repeat. A recorded UID that cannot be checked (the node is stopped or its API
// does not answer) refuses the deletion: the record is kept, and the error says how to finish.
func (p *Provider) Delete(ctx context.Context, id Identity) error {
	st, f, err := p.inspect(ctx, id)
	if err != nil {
		return fmt.Errorf("delete k3d cluster %s: %w", id.Name, err)
	}
	return p.deleteInspected(ctx, id, st, f)
}

// deleteInspected is Delete after the identity check: st and f are what inspect just found of
// id, so the cluster is checked once, not again before its removal.
func (p *Provider) deleteInspected(ctx context.Context, id Identity, st Status, f found) error {
	switch st.State {
	case StateMissing:
		return nil
	case StateNotOurs:
		return fmt.Errorf("delete k3d cluster %s: %w: %s; occ leaves it alone (remove it yourself if it is yours)", id.Name, ErrNotOurs, st.Reason)
	case StateExists:
		if id.UID != "" && !st.UIDVerified {
			return fmt.Errorf("delete k3d cluster %s: cannot confirm it is the recorded cluster: %s; start it (docker start %s) and run occ dev down again", id.Name, st.Reason, serverNode(id.Name))
		}
	}
	return p.remove(ctx, id, f)
}

// remove deletes an identified cluster: the Docker objects inspect found of it just before
// (before), removed as k3d's ClusterDelete removes those of the clusters occ creates (one
// server, no agents, registry or load balancer: the node containers, then the cluster's own
// network, its volumes and the nodes' anonymous volumes), and then again whatever is still
// there, until nothing is left. Removing them here rather than through ClusterDelete lets the
// removals of one kind run side by side, removes exactly the objects the identity check saw,
// and reports every failure (ClusterDelete only logs them).
func (p *Provider) remove(ctx context.Context, id Identity, before found) error {
	// Volumes the nodes mount are noted now: once a container is gone, its anonymous volumes
	// can no longer be told apart from anyone else's.
	var mounted []string
	for _, c := range before.containers {
		mounted = append(mounted, c.volumes...)
	}
	sweepErr := p.sweep(ctx, before, mounted)
	var last found
	for range sweepRounds {
		f, err := p.find(ctx, id.Name)
		if err != nil {
			return fmt.Errorf("delete k3d cluster %s: %w", id.Name, err)
		}
		left, err := p.volumesLeft(ctx, mounted, f.volumes)
		if err != nil {
			return fmt.Errorf("delete k3d cluster %s: %w", id.Name, err)
		}
		f.volumes = append(f.volumes, left...)
		if f.empty() {
			return nil
		}
		last = f
		sweepErr = p.sweep(ctx, f, nil)
		if ctx.Err() != nil {
			break
		}
	}
	err := fmt.Errorf("delete k3d cluster %s: still present after deletion: %s; remove them with docker rm -f / docker network rm / docker volume rm and run occ dev down again", id.Name, last.describe())
	err = errors.Join(err, sweepErr)
	if ctx.Err() != nil {
		err = errors.Join(err, ctx.Err())
	}
	return err
}

// volumesLeft returns the mounted volumes, other than those already listed, that still exist.
// Each is inspected on its own, side by side.
func (p *Provider) volumesLeft(ctx context.Context, mounted, listed []string) ([]string, error) {
	var check []string
	for _, v := range mounted {
		if !slices.Contains(listed, v) && !slices.Contains(check, v) {
			check = append(check, v)
		}
	}
	eng := p.engine.Verbs()
	exists := make([]bool, len(check))
	errs := make([]error, len(check))
	var wg sync.WaitGroup
	for i, v := range check {
		wg.Go(func() {
			_, err := eng.Inspect(ctx, engine.Volumes, v)
			switch {
			case err == nil:
				exists[i] = true
			case !engine.IsNotFound(err):
				errs[i] = fmt.Errorf("inspect volume %s: %w", v, err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var left []string
	for i, v := range check {
		if exists[i] {
			left = append(left, v)
		}
	}
	return left, nil
}

// sweep removes the given leftovers: the containers, then side by side the own network and the
// volumes, those listed and mounted (the nodes' anonymous volumes, noted before the containers
// went). The containers go without their volumes, so that every volume is removed at once
// rather than one after another inside each container's removal; the removals of one kind run
// side by side, since none of them waits for another of its kind. It returns the removal
// errors; the caller looks again either way.
func (p *Provider) sweep(ctx context.Context, f found, mounted []string) error {
	eng := p.engine.Verbs()
	var errs []error
	each := func(n int, remove func(i int) error) {
		out := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { out[i] = remove(i) })
		}
		wg.Wait()
		errs = append(errs, out...)
	}
	each(len(f.containers), func(i int) error {
		c := f.containers[i]
		if err := eng.Remove(ctx, engine.Containers, c.id); err != nil && !engine.IsNotFound(err) {
			return fmt.Errorf("remove container %s: %w", c.name, err)
		}
		return nil
	})
	volumes := slices.Clone(f.volumes)
	for _, v := range mounted {
		if !slices.Contains(volumes, v) {
			volumes = append(volumes, v)
		}
	}
	// The network is one more removal beside the volumes (index len(volumes)).
	each(len(volumes)+1, func(i int) error {
		if i == len(volumes) {
			if f.network == "" {
				return nil
			}
			if err := eng.Remove(ctx, engine.Networks, f.network); err != nil && !engine.IsNotFound(err) {
				return fmt.Errorf("remove network %s: %w", f.network, err)
			}
			return nil
		}
		v := volumes[i]
		if err := eng.Remove(ctx, engine.Volumes, v); err != nil && !engine.IsNotFound(err) {
			return fmt.Errorf("remove volume %s: %w", v, err)
		}
		return nil
	})
	return errors.Join(errs...)
}
