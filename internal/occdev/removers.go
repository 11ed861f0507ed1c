package occdev

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/state"
)

// recorded holds the connections to what a state records (state.Connections), each made from
// the record alone (the recorded cluster access and owner, the recorded engine endpoint), never
// from the environment `down` runs in. They are made lazily, on the first record that needs
// one, and shared by every record's Remover and by status.
type recorded struct {
	st   state.State
	c    *state.Connections
	kube func(context.Context) (*kubeobj.Conn, error)
}

func connectRecorded(st state.State) *recorded {
	c := state.Connect(st)
	return &recorded{st: st, c: c, kube: kubeobj.RecordedConn(c)}
}

// docker connects to the recorded engine on first use.
func (r *recorded) docker(ctx context.Context) (*docker.Engine, error) {
	return docker.RecordedEngine(r.c)(ctx)
}

// sameEngine refuses, before anything is read or removed, a recorded engine endpoint at which
// another engine answers now (docker.EngineChangedError): it holds none of the environment's
// objects, so `status` would call them all missing and `down` would forget them as gone. An engine
// that does not answer at all is no refusal here: each record then says it cannot be reached.
func (r *recorded) sameEngine(ctx context.Context, dir string) error {
	if r.st.Engine == nil || r.st.Engine.Endpoint == "" {
		return nil
	}
	_, err := r.docker(ctx)
	var changed *docker.EngineChangedError
	if errors.As(err, &changed) {
		return fmt.Errorf("%w; the state in %s is kept as it is", err, dir)
	}
	return nil
}

// close releases the engine connection, if one was made.
func (r *recorded) close() { docker.CloseRecorded(r.c) }

// removers is the registry `down`, rollback and `status` use: the Remover each record kind's
// layer registered (state.Kind), built over the recorded connections. A record whose type has
// none is kept, never skipped.
func (r *recorded) removers() state.Removers { return r.c.Removers() }

// cleanup removes the recorded objects in reverse creation order through the registry and
// forgets each once it is gone, so a partial cleanup leaves a record of exactly what remains.
// Failures are collected (each distinct cause once: an unreachable cluster fails every object
// the same way) and cleanup continues with the next object. Records keep selects leave the
// registry untouched and stay recorded. It returns what it forgot.
//
// The Compose control plane's API services are stopped before anything else. Then a k3d
// cluster this state created is removed, and the Kubernetes objects and Helm releases
// recorded in it are forgotten with it: deleting the cluster (after its remover has checked it is
// the recorded one) removes them, and they cannot be reached one by one once it is gone. When the
// name now belongs to another cluster (left alone), the recorded cluster is gone and so is what
// was inside it; the other cluster is never contacted about them. When the cluster cannot be
// removed, they stay recorded with it for the next `down`.
//
// The rest follow in reverse creation order; consecutive records of a type whose records never
// depend on each other (state.SideBySide) are removed concurrently.
func cleanup(ctx context.Context, d *state.Dir, log io.Writer, keep func(state.Object) bool) (*DownResult, error) {
	rec := connectRecorded(d.State())
	defer rec.close()
	return cleanupWith(ctx, d, rec, log, keep)
}

// cleanupWith is cleanup through the recorded connections rec (made from d's state), for a
// caller that has used them already (down checks the engine first).
func cleanupWith(ctx context.Context, d *state.Dir, rec *recorded, log io.Writer, keep func(state.Object) bool) (*DownResult, error) {
	st := d.State()
	res := &DownResult{StateDirectory: d.Path(), Removed: []string{}, LeftAlone: []string{}}
	reg := rec.removers()
	var errs []error
	seen := map[string]bool{}
	fail := func(err error) {
		if !seen[err.Error()] {
			seen[err.Error()] = true
			errs = append(errs, err)
		}
	}
	forget := func(o state.Object) {
		if err := d.Forget(o); err != nil {
			errs = append(errs, err)
		}
	}
	// account logs and counts what o's remover did; it reports whether o is gone (or left
	// alone) now, so its record can go.
	account := func(o state.Object, rm state.Removal, err error) bool {
		if err != nil {
			fail(err)
			return false
		}
		switch rm.Outcome {
		case state.LeftAlone:
			fmt.Fprintf(log, "left %s alone: %s\n", o, rm.Detail)
			res.LeftAlone = append(res.LeftAlone, o.String())
		case state.AlreadyGone:
			fmt.Fprintf(log, "%s was already gone\n", o)
			res.Removed = append(res.Removed, o.String())
		default:
			fmt.Fprintf(log, "removed %s\n", o)
			res.Removed = append(res.Removed, o.String())
		}
		return true
	}
	// remove hands o to its remover, and forgets it once it is gone (or left alone).
	remove := func(o state.Object) (state.Outcome, bool) {
		rm, err := reg.Remove(ctx, o)
		if !account(o, rm, err) {
			return "", false
		}
		forget(o)
		return rm.Outcome, true
	}

	handled := make([]bool, len(st.Objects))
	for i, o := range st.Objects {
		if state.OrderOf(o.Type) == state.QuiescedFirst && !keep(o) {
			handled[i] = true
			remove(o)
		}
	}
	// Pulls that no container runs go side by side with the cluster's removal: no object depends
	// on an image nothing runs, so its place in the order does not matter, and its removal
	// (layers deleted from the engine) costs no time after the cluster's. They are accounted
	// for and forgotten once the cluster's removal has ended.
	early := unusedPulls(ctx, rec, st.Objects, handled, keep)
	earlyRms, earlyErrs := make([]state.Removal, len(early)), make([]error, len(early))
	var earlyWG sync.WaitGroup
	for k, i := range early {
		handled[i] = true
		earlyWG.Go(func() { earlyRms[k], earlyErrs[k] = reg.Remove(ctx, st.Objects[i]) })
	}
	for i, o := range st.Objects {
		if state.OrderOf(o.Type) != state.TheCluster || keep(o) {
			continue
		}
		handled[i] = true
		outcome, gone := remove(o)
		var went []state.Object
		for j, in := range st.Objects {
			if state.OrderOf(in.Type) != state.InsideCluster {
				continue
			}
			handled[j] = true
			switch {
			case !gone:
				// Kept with the cluster's record: the next `down` removes it with them.
			case outcome == state.LeftAlone:
				fmt.Fprintf(log, "%s went with the recorded k3d cluster %s, which no longer exists\n", in, o.Name)
				went = append(went, in)
			default:
				fmt.Fprintf(log, "removed %s with k3d cluster %s\n", in, o.Name)
				went = append(went, in)
			}
		}
		// They went at one moment, with the cluster: one write of the record forgets them all.
		for _, in := range went {
			res.Removed = append(res.Removed, in.String())
		}
		if len(went) > 0 {
			if err := d.ForgetAll(went...); err != nil {
				errs = append(errs, err)
			}
		}
	}
	earlyWG.Wait()
	var earlyGone []state.Object
	for k, i := range early {
		if o := st.Objects[i]; account(o, earlyRms[k], earlyErrs[k]) {
			earlyGone = append(earlyGone, o)
		}
	}
	if len(earlyGone) > 0 {
		if err := d.ForgetAll(earlyGone...); err != nil {
			errs = append(errs, err)
		}
	}
	var rest []state.Object
	for i := len(st.Objects) - 1; i >= 0; i-- {
		if o := st.Objects[i]; !handled[i] && !keep(o) {
			rest = append(rest, o)
		}
	}
	for len(rest) > 0 {
		n := 1
		for state.OrderOf(rest[0].Type) == state.SideBySide && n < len(rest) && rest[n].Type == rest[0].Type {
			n++
		}
		run := rest[:n]
		rest = rest[n:]
		if n == 1 {
			remove(run[0])
			continue
		}
		// Records of one such type that follow each other are removed side by side; they are
		// accounted for in their order and forgotten in one write.
		rms, rerrs := make([]state.Removal, n), make([]error, n)
		var wg sync.WaitGroup
		for i, o := range run {
			wg.Go(func() { rms[i], rerrs[i] = reg.Remove(ctx, o) })
		}
		wg.Wait()
		var gone []state.Object
		for i, o := range run {
			if account(o, rms[i], rerrs[i]) {
				gone = append(gone, o)
			}
		}
		if len(gone) > 0 {
			if err := d.ForgetAll(gone...); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return res, errors.Join(errs...)
}

// unusedPulls are the indexes of the recorded pulls (not yet handled or kept) whose image no
// container of the recorded engine runs, when the state records a cluster occ created (the
// removal they can go beside); none when the engine cannot list its containers, which leaves
// every pull to its place in the order.
func unusedPulls(ctx context.Context, rec *recorded, objs []state.Object, handled []bool, keep func(state.Object) bool) []int {
	if !slices.ContainsFunc(objs, func(o state.Object) bool { return state.OrderOf(o.Type) == state.TheCluster && !keep(o) }) {
		return nil
	}
	var pulls []int
	for i, o := range objs {
		if o.Type == images.TypePulledImage && o.ID != "" && !handled[i] && !keep(o) {
			pulls = append(pulls, i)
		}
	}
	if len(pulls) == 0 {
		return nil
	}
	eng, err := rec.docker(ctx)
	if err != nil {
		return nil
	}
	used, err := eng.ImagesInUse(ctx)
	if err != nil {
		return nil
	}
	var out []int
	for _, i := range pulls {
		if !used[docker.BareImageID(objs[i].ID)] {
			out = append(out, i)
		}
	}
	return out
}
