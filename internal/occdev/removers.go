package occdev

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/openclaw/occ/internal/occdev/cluster/k3d"
	"github.com/openclaw/occ/internal/occdev/controlplane/compose"
	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/helmrelease"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/state"
)

// recorded holds the connections to what a state records, each made from the record alone (the
// recorded cluster access and owner, the recorded engine endpoint), never from the environment
// `down` runs in. They are made lazily, on the first record that needs one, and shared by every
// record and by status.
type recorded struct {
	st   state.State
	kube func(context.Context) (*kubeobj.Conn, error)

	engine func(context.Context) (*docker.Engine, error)
	used   atomic.Bool
}

func connectRecorded(st state.State) *recorded {
	return &recorded{st: st, kube: kubeobj.Recorded(st.Cluster, st.Owner()), engine: docker.Recorded(st.Engine)}
}

// docker connects to the recorded engine on first use.
func (r *recorded) docker(ctx context.Context) (*docker.Engine, error) {
	r.used.Store(true)
	return r.engine(ctx)
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
func (r *recorded) close() {
	if !r.used.Load() {
		return
	}
	if eng, err := r.engine(context.Background()); err == nil {
		_ = eng.Close()
	}
}

// recordKind is what `down`, rollback and `status` know of one record type beyond what the
// state store knows (its fields, rules and description, registered by the layer that makes
// it): the Remover that layer provides, built from the recorded connections, and where the
// type's records come in the order of removal.
type recordKind struct {
	remover func(r *recorded, project *compose.Recorded) state.Remover
	removal removal
}

// removal is a record type's place in the order of removal.
type removal int

const (
	// inReverse records are removed in strict reverse creation order (a Namespace after what
	// is inside it).
	inReverse removal = iota
	// quiescedFirst records are removed before anything else, the cluster included: the
	// Compose control plane's API and worker, which would otherwise go on reconciling against a
	// cluster being deleted. OCE's own `down` stops the reconcilers first for the same reason.
	quiescedFirst
	// theCluster is a cluster occ created: removed next, and the insideCluster records go
	// with it.
	theCluster
	// insideCluster records live inside the cluster's API and go with a cluster occ created.
	// (Cluster images also leave a staging tag in the engine, so they are not of this kind and
	// their remover still runs.)
	insideCluster
	// sideBySide records never depend on each other: each names its own image reference (a
	// pull's digest reference; an import's staging tag and name in the node), so the removal of
	// one cannot change what the removal of another finds. Consecutive records of one such
	// type are removed concurrently.
	sideBySide
)

// recordKinds is the registry of removers: one entry per record type, naming the remover the
// layer that creates the type provides. A record whose type is missing here is kept, never
// skipped.
var recordKinds = map[state.Type]recordKind{
	kubeobj.TypeObject: {removal: insideCluster,
		remover: func(r *recorded, _ *compose.Recorded) state.Remover { return kubeobj.Remover(r.kube) }},
	helmrelease.TypeRelease: {removal: insideCluster,
		remover: func(r *recorded, _ *compose.Recorded) state.Remover { return helmrelease.Remover(r.kube) }},
	k3d.TypeCluster: {removal: theCluster,
		remover: func(r *recorded, _ *compose.Recorded) state.Remover { return k3d.Remover(r.st.Cluster, r.docker) }},
	images.TypeDockerImage: {removal: sideBySide,
		remover: func(r *recorded, _ *compose.Recorded) state.Remover { return images.DockerImageRemover(r.docker) }},
	images.TypePodmanImage: {removal: sideBySide,
		remover: func(r *recorded, _ *compose.Recorded) state.Remover { return images.DockerImageRemover(r.docker) }},
	images.TypeClusterImage: {removal: sideBySide,
		remover: func(r *recorded, _ *compose.Recorded) state.Remover {
			return images.ClusterImageRemover(r.st.Cluster, r.docker)
		}},
	compose.TypeServices: {removal: quiescedFirst,
		remover: func(_ *recorded, p *compose.Recorded) state.Remover { return compose.ServicesRemover(p) }},
	compose.TypeProject: {
		remover: func(_ *recorded, p *compose.Recorded) state.Remover { return compose.ProjectRemover(p) }},
	compose.TypeNetwork: {
		remover: func(r *recorded, _ *compose.Recorded) state.Remover { return compose.NetworkRemover(r.docker) }},
	compose.TypePodmanNetwork: {
		remover: func(r *recorded, _ *compose.Recorded) state.Remover { return compose.NetworkRemover(r.docker) }},
	compose.TypeVolume: {
		remover: func(r *recorded, _ *compose.Recorded) state.Remover { return compose.VolumeRemover(r.docker) }},
	compose.TypePodmanVolume: {
		remover: func(r *recorded, _ *compose.Recorded) state.Remover { return compose.VolumeRemover(r.docker) }},
}

// removers is the registry `down`, rollback and `status` use: one Remover per recorded type,
// built from recordKinds over the recorded connections.
func (r *recorded) removers() state.Removers {
	project := &compose.Recorded{Engine: r.docker}
	if cp := r.st.ControlPlane; cp != nil {
		project.Project = cp.Compose
	}
	reg := make(state.Removers, len(recordKinds))
	for t, k := range recordKinds {
		reg[t] = k.remover(r, project)
	}
	return reg
}

// removalOf is t's place in the order of removal; a type without a remover keeps its reverse
// order (and is refused when its turn comes).
func removalOf(t state.Type) removal { return recordKinds[t].removal }

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
// depend on each other (sideBySide) are removed concurrently.
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
		if removalOf(o.Type) == quiescedFirst && !keep(o) {
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
		if removalOf(o.Type) != theCluster || keep(o) {
			continue
		}
		handled[i] = true
		outcome, gone := remove(o)
		var went []state.Object
		for j, in := range st.Objects {
			if removalOf(in.Type) != insideCluster {
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
		for removalOf(rest[0].Type) == sideBySide && n < len(rest) && rest[n].Type == rest[0].Type {
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
	if !slices.ContainsFunc(objs, func(o state.Object) bool { return removalOf(o.Type) == theCluster && !keep(o) }) {
		return nil
	}
	var pulls []int
	for i, o := range objs {
		if images.IsPulled(o.Type) && o.ID != "" && !handled[i] && !keep(o) {
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
