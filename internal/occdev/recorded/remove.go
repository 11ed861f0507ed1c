package recorded

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/state"
)

// Result says what a removal did. Removed lists the recorded objects that are gone now (removed,
// or already gone); LeftAlone the recorded names that now belong to something occ did not
// create, whose records were dropped and whose objects were not touched. Neither is ever nil.
type Result struct {
	Removed   []string
	LeftAlone []string
}

// Remove removes the objects d records through e's registry, class by class (state.Order), and
// forgets each once it is gone, so a partial removal leaves a record of exactly what remains.
// Failures are collected (each distinct cause once: an unreachable cluster fails every object
// the same way) and the removal continues with the next object. Records keep selects leave the
// registry untouched and stay recorded; nil keeps none.
//
// The QuiescedFirst records (the Compose control plane's API services) go before anything
// else. Then each cluster this state created is removed, and the InsideCluster records (its
// Kubernetes objects and Helm releases) are forgotten with it: deleting the cluster (after its
// remover has checked it is the recorded one) removes them, and they cannot be reached one by
// one once it is gone. When the name now belongs to another cluster (left alone), the recorded
// cluster is gone and so is what was inside it; the other cluster is never contacted about
// them. When the cluster cannot be removed, they stay recorded with it for the next `down`.
//
// The rest follow in reverse creation order; consecutive records of a SideBySide type are
// removed concurrently.
func Remove(ctx context.Context, d *state.Dir, e *Env, log io.Writer, keep func(state.Object) bool) (Result, error) {
	if keep == nil {
		keep = func(state.Object) bool { return false }
	}
	st := d.State()
	r := &removal{
		ctx: ctx, d: d, env: e, reg: e.Removers(), log: log, keep: keep,
		objs: st.Objects, handled: make([]bool, len(st.Objects)), seen: map[string]bool{},
		res: Result{Removed: []string{}, LeftAlone: []string{}},
	}
	r.quiesce()
	// Pulls that no container runs go side by side with the cluster's removal: no object depends
	// on an image nothing runs, so its place in the order does not matter, and its removal
	// (layers deleted from the engine) costs no time after the cluster's. They are accounted
	// for and forgotten once the cluster's removal has ended.
	early := r.start(r.unusedPulls())
	r.clusters()
	r.finish(early)
	r.rest()
	return r.res, errors.Join(r.errs...)
}

// removal is one run of Remove: the records, which of them a class has taken already, and what
// has been removed, left alone and failed so far. Only its own goroutine writes it; a batch's
// goroutines write only the batch.
type removal struct {
	ctx     context.Context
	d       *state.Dir
	env     *Env
	reg     state.Removers
	log     io.Writer
	keep    func(state.Object) bool
	objs    []state.Object
	handled []bool
	res     Result
	errs    []error
	seen    map[string]bool
}

// fail collects err, once per distinct message.
func (r *removal) fail(err error) {
	if !r.seen[err.Error()] {
		r.seen[err.Error()] = true
		r.errs = append(r.errs, err)
	}
}

// forget drops the records of objects that are gone, in one write of the state.
func (r *removal) forget(gone ...state.Object) {
	if len(gone) == 0 {
		return
	}
	if err := r.d.ForgetAll(gone...); err != nil {
		r.errs = append(r.errs, err)
	}
}

// account logs and counts what o's remover did; it reports whether o is gone (or left alone)
// now, so its record can go.
func (r *removal) account(o state.Object, rm state.Removal, err error) bool {
	if err != nil {
		r.fail(err)
		return false
	}
	switch rm.Outcome {
	case state.LeftAlone:
		fmt.Fprintf(r.log, "left %s alone: %s\n", o, rm.Detail)
		r.res.LeftAlone = append(r.res.LeftAlone, o.String())
	case state.AlreadyGone:
		fmt.Fprintf(r.log, "%s was already gone\n", o)
		r.res.Removed = append(r.res.Removed, o.String())
	default:
		fmt.Fprintf(r.log, "removed %s\n", o)
		r.res.Removed = append(r.res.Removed, o.String())
	}
	return true
}

// remove hands o to its remover, and forgets it once it is gone (or left alone).
func (r *removal) remove(o state.Object) (state.Outcome, bool) {
	rm, err := r.reg.Remove(r.ctx, o)
	if !r.account(o, rm, err) {
		return "", false
	}
	r.forget(o)
	return rm.Outcome, true
}

// quiesce removes the QuiescedFirst records, in creation order.
func (r *removal) quiesce() {
	for i, o := range r.objs {
		if state.OrderOf(o.Type) == state.QuiescedFirst && !r.keep(o) {
			r.handled[i] = true
			r.remove(o)
		}
	}
}

// clusters removes each recorded cluster and accounts for the records that live inside it.
func (r *removal) clusters() {
	for i, o := range r.objs {
		if state.OrderOf(o.Type) != state.TheCluster || r.keep(o) {
			continue
		}
		r.handled[i] = true
		outcome, gone := r.remove(o)
		r.wentWith(o, outcome, gone)
	}
}

// wentWith takes the InsideCluster records: when the cluster is gone they went with it, at one
// moment, and one write of the record forgets them all; otherwise they stay recorded with the
// cluster, and the next `down` removes them with it.
func (r *removal) wentWith(cluster state.Object, outcome state.Outcome, gone bool) {
	var went []state.Object
	for j, in := range r.objs {
		if state.OrderOf(in.Type) != state.InsideCluster {
			continue
		}
		r.handled[j] = true
		switch {
		case !gone:
		case outcome == state.LeftAlone:
			fmt.Fprintf(r.log, "%s went with the recorded k3d cluster %s, which no longer exists\n", in, cluster.Name)
			went = append(went, in)
		default:
			fmt.Fprintf(r.log, "removed %s with k3d cluster %s\n", in, cluster.Name)
			went = append(went, in)
		}
	}
	for _, in := range went {
		r.res.Removed = append(r.res.Removed, in.String())
	}
	r.forget(went...)
}

// rest removes every record no class took yet, in reverse creation order; consecutive records
// of one SideBySide type go together as a batch.
func (r *removal) rest() {
	var rest []state.Object
	for i := len(r.objs) - 1; i >= 0; i-- {
		if o := r.objs[i]; !r.handled[i] && !r.keep(o) {
			rest = append(rest, o)
		}
	}
	for len(rest) > 0 {
		n := 1
		for state.OrderOf(rest[0].Type) == state.SideBySide && n < len(rest) && rest[n].Type == rest[0].Type {
			n++
		}
		if n == 1 {
			r.remove(rest[0])
		} else {
			r.finish(r.start(rest[:n]))
		}
		rest = rest[n:]
	}
}

// batch is records being removed side by side: each goroutine writes only its own slot.
type batch struct {
	objs []state.Object
	rms  []state.Removal
	errs []error
	wg   sync.WaitGroup
}

// start hands each of objs to its remover concurrently.
func (r *removal) start(objs []state.Object) *batch {
	b := &batch{objs: objs, rms: make([]state.Removal, len(objs)), errs: make([]error, len(objs))}
	for i, o := range objs {
		b.wg.Go(func() { b.rms[i], b.errs[i] = r.reg.Remove(r.ctx, o) })
	}
	return b
}

// finish waits for a batch, accounts for its records in their order and forgets those that are
// gone in one write.
func (r *removal) finish(b *batch) {
	b.wg.Wait()
	var gone []state.Object
	for i, o := range b.objs {
		if r.account(o, b.rms[i], b.errs[i]) {
			gone = append(gone, o)
		}
	}
	r.forget(gone...)
}

// unusedPulls marks and returns the recorded pulls (not yet handled or kept) whose image no
// container of the recorded engine runs, when the state records a cluster occ created (the
// removal they can go beside); none when the engine cannot list its containers, which leaves
// every pull to its place in the order.
func (r *removal) unusedPulls() []state.Object {
	if !slices.ContainsFunc(r.objs, func(o state.Object) bool { return state.OrderOf(o.Type) == state.TheCluster && !r.keep(o) }) {
		return nil
	}
	var pulls []int
	for i, o := range r.objs {
		if o.Type == images.TypePulledImage && o.ID != "" && !r.handled[i] && !r.keep(o) {
			pulls = append(pulls, i)
		}
	}
	if len(pulls) == 0 {
		return nil
	}
	eng, err := r.env.Engine(r.ctx)
	if err != nil {
		return nil
	}
	used, err := eng.ImagesInUse(r.ctx)
	if err != nil {
		return nil
	}
	var out []state.Object
	for _, i := range pulls {
		if !used[docker.BareImageID(r.objs[i].ID)] {
			r.handled[i] = true
			out = append(out, r.objs[i])
		}
	}
	return out
}
