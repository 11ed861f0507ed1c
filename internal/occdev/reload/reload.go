// Package reload is `occ dev reload`: it rebuilds the images `up` built from the recorded OCE
// checkout, imports and verifies the changed ones in the node, rolls the control plane onto them
// through the recorded profile's reload steps (profile.Reloader), points the Installation at a
// rebuilt Agent runtime and records the result. It reads only the record; what only the root's
// registration tables know (the profiles, the cluster providers) and its test seam are handed in
// as Parts.
package reload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/openclaw/occ/internal/fsutil"
	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/diagnose"
	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/observe"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/profile"
	"github.com/openclaw/occ/internal/occdev/profile/oce"
	"github.com/openclaw/occ/internal/occdev/recorded"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/occdev/step"
	"github.com/openclaw/occ/internal/progress"
)

// Options are the settings of `occ dev reload`.
type Options struct {
	// StateDir is the state directory of the environment (--state-dir,
	// OCC_DEVELOPMENT_STATE_DIRECTORY).
	StateDir string
	// Environment names the environment (--name, OCC_DEVELOPMENT_ENVIRONMENT); empty is the
	// default one.
	Environment string
	// Services limits the reload to these services, by the names `occ dev status` lists: only
	// they are recreated or rolled out, and for Compose only the images they run are rebuilt.
	// None reloads every image `up` built.
	Services []string
	// StartupTimeout bounds the wait for the reloaded services (--startup-timeout,
	// option.EnvStartupTimeoutSeconds): 0 is 600s, anything else lies between 1s and 24h.
	StartupTimeout time.Duration
	// OCCCommand is how the user runs occ, for the commands an error names; default "occ".
	OCCCommand string
	// Progress receives step events; nil discards them.
	Progress progress.Sink
	// Log receives the build output and notes that are not step lines.
	Log io.Writer
	// OCCVersion is occ's version as `occ version` prints it, for the debug bundle.
	OCCVersion string
	// NoDiagnose skips the debug bundle a failed reload writes beside the state directory
	// (--no-diagnose).
	NoDiagnose bool
}

// Parts are what only the root's registration tables know, handed in as values: the registered
// control-plane profiles (the recorded one gives the reload its steps), the cluster providers
// (reload imports through the recorded cluster's) and the step runner's test seam.
type Parts struct {
	// Profiles are the registered control-plane profiles by name, with those a test added.
	Profiles map[string]profile.Profile
	// Providers are the registered cluster providers by name.
	Providers map[string]cluster.Registration
	// ClusterType is the type of the record the named provider keeps of the cluster it
	// created; empty for a provider that keeps none, or a name this occ does not know.
	ClusterType func(provider string) state.Type
	// AfterStep, a test seam, is called after each successful step (step.Runner.AfterStep).
	AfterStep func(name string) error
}

// Result says what `occ dev reload` did.
type Result struct {
	StateDirectory string `json:"stateDirectory"`
	Profile        string `json:"profile"`
	// Commit is the checkout's commit the images were built from, recorded now; PreviousCommit
	// the one recorded before, when it differs.
	Commit         string `json:"commit"`
	PreviousCommit string `json:"previousCommit,omitempty"`
	// Images are the rebuilt images, changed or not.
	Images []Image `json:"images"`
	// Rolled are the services recreated (Compose) or Deployments rolled out (Kubernetes-only).
	Rolled []string `json:"rolled"`
}

// Image is one image `reload` rebuilt.
type Image struct {
	Role string `json:"role"`
	Tag  string `json:"tag"`
	// Previous and Current are the engine's image IDs recorded before and built now.
	Previous string `json:"previous"`
	Current  string `json:"current"`
	Changed  bool   `json:"changed"`
	// InCluster is the digest reference the cluster runs it by, for an image imported into it.
	InCluster string `json:"inCluster,omitempty"`
}

// run is what the steps of one reload share.
type run struct {
	opts Options
	// clusterType is Parts.ClusterType.
	clusterType func(provider string) state.Type
	// dir is the state the reload holds locked, and log the writer of its notes.
	dir *state.Dir
	log io.Writer
	rec *recorded.Env
	// st is the record as the reload found it.
	st state.State
	// provider is the recorded cluster's provider (nil for a name this occ does not know),
	// opened with the reload and closed with it.
	provider cluster.Provider
	// Written by the checks: the recorded engine and cluster, connected, and the checkout.
	engine   *docker.Engine
	conn     *kubeobj.Conn
	checkout controlplane.Checkout
	// builds are the recorded builds the reload repeats (limited by the chosen services), and
	// chosen the chosen services (nil: all).
	builds []oce.RecordedBuild
	chosen []string
	// rebuilding is set once the checks passed and the first build started: from then on a
	// failure leaves the environment on its old or its new images.
	rebuilding bool
	// Written by the rebuild: each build's result, and the images for the node whose ID is not
	// the recorded one.
	built   map[string]images.Local
	changed map[string]bool
	toNode  []images.Local
	// Written by the import and the verification.
	imported []images.Imported
	verified []images.Verified
	// hook is the recorded control plane's part of the reload.
	hook *hook
	// Written by the roll: what was recreated (Compose) or rolled out (Kubernetes-only).
	rolled []string
}

// reloadSteps is the whole `occ dev reload` flow, in order; the recorded control plane's hook
// gives the steps that roll it. Nothing in the environment changes before the import; every
// step after it converges when run again, so an interrupted reload is finished by the next one,
// and `down` removes what any of them recorded.
func reloadSteps(hook *hook, st state.State) []runStep {
	steps := []runStep{
		{Name: "Check the recorded environment", Run: checkReloadable},
		{Name: "Rebuild the control-plane images from the checkout", Run: rebuildImages},
		{Name: "Import the rebuilt images into the cluster", Run: importRebuilt},
		{Name: "Verify the rebuilt images in the node", Run: verifyRebuilt},
	}
	steps = append(steps, hook.steps(st)...)
	return append(steps, runStep{Name: "Record the rebuilt images and the checkout's commit", Run: recordReload})
}

// runStep is one step of the reload. Reload steps have no description: the dry run lists them
// by name.
type runStep = step.Step[struct{}, *run]

// Run rebuilds the images `up` built from the checkout of the recorded environment and rolls
// the control plane onto the ones that changed. It reads only the record (the engine, the
// cluster, the checkout and the builds `up` made), and refuses an environment whose engine,
// cluster or checkout is gone or another, saying what to do. The state is held locked for the
// whole reload. A failure writes a debug bundle beside the state directory, which it keeps.
func Run(ctx context.Context, opts Options, parts Parts) (_ *Result, err error) {
	loc, err := state.Locate(opts.StateDir, opts.Environment)
	if err != nil {
		return nil, err
	}
	dir := loc.Dir
	if opts.StartupTimeout, err = option.StartupTimeout(opts.StartupTimeout); err != nil {
		return nil, err
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	d, err := loc.Open()
	if errors.Is(err, state.ErrNotExist) {
		return nil, fmt.Errorf("%w at %s: nothing to reload; start one with occ dev up (or name the state directory of another with --state-dir or %s)", observe.ErrNoEnvironment, dir, state.EnvDirectory)
	}
	if err != nil {
		return nil, err
	}
	defer d.Close()
	st := d.State()
	rec := recorded.Connect(st)
	defer rec.Close()
	// The steps' timeline goes into the debug bundle of a failure.
	var timeline *diagnose.Timeline
	if !opts.NoDiagnose {
		timeline = diagnose.NewTimeline(time.Now())
		opts.Progress = timeline.Record(opts.Progress)
	}
	defer func() {
		if err == nil {
			return
		}
		bundle := observe.FailureBundle(ctx, observe.FailedRun{
			BundleInput: observe.BundleInput{Dir: dir, State: d.State(), Env: rec, Version: opts.OCCVersion, Cause: err, Timeline: timeline},
			Command:     "reload", Collected: "Collected after the failure, from the environment as the reload left it.", Off: opts.NoDiagnose,
		})
		if bundle != "" {
			err = fmt.Errorf("%w\n%s", err, bundle)
		}
	}()
	if err := rec.SameEngine(ctx, dir); err != nil {
		return nil, err
	}
	hook, err := hookOf(dir, opts.OCCCommand, st.Profile, parts.Profiles)
	if err != nil {
		return nil, err
	}
	r := &run{
		opts: opts, clusterType: parts.ClusterType, dir: d, log: &step.SyncWriter{W: log},
		rec: rec, st: st, hook: hook, built: map[string]images.Local{}, changed: map[string]bool{},
	}
	// The recorded cluster's provider, which reload imports through (checkReloadable refuses a
	// cluster it cannot import into); it is closed with the reload.
	if entry, ok := parts.Providers[st.Cluster.Provider]; ok {
		r.provider = entry.Open()
		defer r.provider.Close()
	}
	x := &step.Runner[struct{}, *run]{Sink: opts.Progress, AfterStep: parts.AfterStep}
	if err := x.Run(ctx, r, reloadSteps(hook, st), ""); err != nil {
		if !r.rebuilding {
			return nil, err
		}
		return nil, fmt.Errorf("%w\nthe environment still runs on the images it ran before or on the rebuilt ones; run %s again to finish the reload, or %s to remove it",
			err, reloadCommand(opts.OCCCommand, dir), recorded.DownCommand(opts.OCCCommand, dir))
	}
	return r.result(r.dir.State(), dir), nil
}

// reloadCommand is the command that repeats a reload, shell-quoted.
func reloadCommand(occ, dir string) string { return recorded.Command(occ, "reload", dir) }

// result is the reload's summary from the record it left.
func (r *run) result(st state.State, dir string) *Result {
	res := &Result{StateDirectory: dir, Profile: st.Profile, Images: []Image{}, Rolled: append([]string{}, r.rolled...)}
	if cp := st.ControlPlane; cp != nil {
		res.Commit = cp.Commit
	}
	if prev := r.st.ControlPlane.Commit; prev != res.Commit {
		res.PreviousCommit = prev
	}
	for _, b := range r.builds {
		l := r.built[b.Role]
		img := Image{Role: b.Role, Tag: b.Tag, Previous: recordedImage(r.st, b.Role).ID, Current: l.ID, Changed: r.changed[b.Role]}
		if b.Imported {
			img.InCluster = l.Pin.DigestReference()
		}
		res.Images = append(res.Images, img)
	}
	return res
}

// recordedImage is the control-plane image of role the record holds.
func recordedImage(st state.State, role string) state.ControlPlaneImage {
	if st.ControlPlane != nil {
		for _, img := range st.ControlPlane.Images {
			if img.Role == role {
				return img
			}
		}
	}
	return state.ControlPlaneImage{}
}

// reloadRefusal is an environment reload cannot act on, with what to do instead.
func reloadRefusal(dir, occ, why string) error {
	return fmt.Errorf("cannot reload the environment recorded in %s: %s\nremove it with %s and bring it up again with occ dev up", dir, why, recorded.DownCommand(occ, dir))
}

// checkReloadable refuses an environment reload cannot act on, before anything is built: no
// control plane built from a checkout, a cluster occ did not create (its provider keeps no record
// of it, and occ imports into no node of it), a recorded engine that does not answer, a recorded
// cluster that is gone or is another one now (the identity `down` checks), or a checkout that is
// gone, moved or no longer an OCE checkout. It then chooses the builds of the chosen services.
func checkReloadable(ctx context.Context, r *run, rep progress.Reporter) error {
	dir, occ := r.dir.Path(), r.opts.OCCCommand
	cp := r.st.ControlPlane
	clusterType := r.clusterType(r.st.Cluster.Provider)
	switch {
	case cp == nil:
		return reloadRefusal(dir, occ, "it has no OCE control plane (occ dev up found no checkout)")
	case slices.ContainsFunc(cp.Images, func(i state.ControlPlaneImage) bool { return i.Selected }):
		return reloadRefusal(dir, occ, "its controller and Agent runtime images were selected by digest, not built from the checkout; build and push new ones, then select them")
	case clusterType == "":
		return reloadRefusal(dir, occ, "its cluster is not one occ created with k3d, which the rebuilt images are imported into")
	}
	builds, err := oce.ReadBuilds(dir)
	if errors.Is(err, oce.ErrNoBuilds) {
		return reloadRefusal(dir, occ, "it records no builds (it was brought up by an occ without occ dev reload)")
	}
	if err != nil {
		return err
	}
	if err := checkRecordedCluster(ctx, r, clusterType); err != nil {
		return err
	}
	if err := checkRecordedCheckout(r, builds, rep); err != nil {
		return err
	}
	if check := r.hook.check; check != nil {
		if err := check(ctx, r); err != nil {
			return err
		}
	}
	if err := chooseBuilds(ctx, r, builds); err != nil {
		return err
	}
	return checkRecordedBases(r)
}

// checkRecordedCluster connects to the recorded engine, requires every recorded cluster of
// clusterType (one at least) to be the one recorded, and connects to it.
func checkRecordedCluster(ctx context.Context, r *run, clusterType state.Type) error {
	dir, occ := r.dir.Path(), r.opts.OCCCommand
	provider := r.st.Cluster.Provider
	eng, err := r.rec.Engine(ctx)
	if err != nil {
		var kind engine.Kind
		if r.st.Engine != nil {
			kind = r.st.Engine.Kind
		}
		return reloadRefusal(dir, occ, "its "+kind.Name()+" engine does not answer: "+err.Error())
	}
	r.engine = eng
	reg := r.rec.Removers()
	found := false
	for _, o := range r.st.Objects {
		if o.Type != clusterType {
			continue
		}
		found = true
		in := reg.Inspect(ctx, o)
		switch in.State {
		case state.Present:
		case state.Missing:
			return reloadRefusal(dir, occ, "its "+provider+" cluster "+o.Name+" is gone")
		case state.Changed:
			return reloadRefusal(dir, occ, "the "+provider+" cluster named "+o.Name+" is not the one recorded: "+in.Detail)
		default:
			return reloadRefusal(dir, occ, "its "+provider+" cluster "+o.Name+" cannot be checked: "+in.Detail)
		}
	}
	if !found {
		return reloadRefusal(dir, occ, "it records no "+provider+" cluster")
	}
	if r.conn, err = r.rec.Kube(ctx); err != nil {
		return reloadRefusal(dir, occ, "its cluster does not answer as the recorded one: "+err.Error())
	}
	return nil
}

// checkRecordedCheckout requires the recorded checkout to be where it was, still an OCE checkout
// that holds the context of every recorded build, and takes it for the reload; a checkout at
// another commit is noted.
func checkRecordedCheckout(r *run, builds []oce.RecordedBuild, rep progress.Reporter) error {
	dir, occ := r.dir.Path(), r.opts.OCCCommand
	cp := r.st.ControlPlane
	co, err := controlplane.FindCheckout(controlplane.FindCheckoutOptions{Flag: cp.Checkout})
	if err != nil {
		return reloadRefusal(dir, occ, "its checkout "+cp.Checkout+" is gone or no longer an OCE checkout: "+err.Error())
	}
	if co.Root != cp.Checkout {
		return reloadRefusal(dir, occ, "its checkout "+cp.Checkout+" now resolves to "+co.Root)
	}
	for _, b := range builds {
		if b.ContextDir != cp.Checkout && !strings.HasPrefix(b.ContextDir, cp.Checkout+string(os.PathSeparator)) {
			return reloadRefusal(dir, occ, "its build of "+b.Role+" has the context "+b.ContextDir+", outside the checkout "+cp.Checkout)
		}
	}
	r.checkout = co
	if co.Commit != cp.Commit {
		rep.Note("the checkout is at " + oce.ShortCommit(co.Commit) + " (recorded " + oce.ShortCommit(cp.Commit) + ")")
	}
	return nil
}

// checkRecordedBases refuses a reload whose builds would now fetch a base image `up` did not
// pull: the checkout's Dockerfiles, read again with the recorded build arguments, may name
// another base (a new FROM, another default of an ARG the record does not set). BuildKit would
// then pull it by itself, unpinned by occ and unknown to `down`. The same build arguments and a
// base by the recorded digest pass; so does a base the record pulled for another build.
func checkRecordedBases(r *run) error {
	dir, occ := r.dir.Path(), r.opts.OCCCommand
	pulled := map[string]bool{}
	for _, b := range r.st.ControlPlane.BaseImages {
		if pin, err := pins.ParseImage(b.Reference); err == nil {
			pulled[pin.DigestReference()] = true
		}
	}
	var news []string
	for _, b := range r.builds {
		df, err := controlplane.ParseDockerfile(b.ContextDir, b.Dockerfile)
		if err != nil {
			return reloadRefusal(dir, occ, "its build of "+b.Role+" cannot be repeated: "+err.Error())
		}
		uses, err := df.Bases(b.Target, b.Args)
		if err != nil {
			return reloadRefusal(dir, occ, "its build of "+b.Role+" cannot be repeated: "+err.Error())
		}
		for _, u := range uses {
			pin, err := pins.ParseImage(u.Image)
			if err != nil || pin.Digest == "" || !pulled[pin.DigestReference()] {
				news = append(news, u.String()+" now fetches "+u.Image)
			}
		}
	}
	if len(news) > 0 {
		return reloadRefusal(dir, occ, "the checkout's Dockerfiles name base images occ dev up did not pull (reload repeats the recorded builds and pulls no new base): "+strings.Join(news, "; "))
	}
	return nil
}

// chooseBuilds limits the builds to those of the chosen services; unknown names are refused
// with the names `occ dev status` lists. The recorded control plane's hook says which builds
// the chosen services run (a Compose service the builds of its images; a Kubernetes workload,
// whose images are not known before the cluster is read, every build).
func chooseBuilds(ctx context.Context, r *run, builds []oce.RecordedBuild) error {
	if len(r.opts.Services) == 0 {
		r.builds = builds
		return nil
	}
	all, listErr := observe.Services(ctx, r.st, r.rec)
	chosen, err := observe.ChooseServices(all, r.opts.Services, r.dir.Path(), listErr)
	if err != nil {
		return err
	}
	for _, s := range chosen {
		r.chosen = append(r.chosen, s.Name)
	}
	r.builds, err = r.hook.chooseRecordedBuilds(builds, r.chosen)
	return err
}

// noBuildOf refuses services that run no image occ built from the checkout, naming those that do.
func noBuildOf(services []string, builds []oce.RecordedBuild) error {
	return profile.NoBuildOf(services, asBuilds(builds))
}

// asBuilds are recorded builds as a profile chooses among them.
func asBuilds(builds []oce.RecordedBuild) []profile.Build {
	out := make([]profile.Build, 0, len(builds))
	for _, b := range builds {
		out = append(out, profile.Build{Role: b.Role, Services: b.Services})
	}
	return out
}

// rebuildImages repeats the recorded builds through the engine's BuildKit (the build code `up`
// uses; its cache makes an unchanged image cost almost nothing) and compares each result with
// the recorded image. A rebuilt image for the cluster whose ID is not the recorded one goes on
// to the import. The build output goes to image-build.log in the state directory.
func rebuildImages(ctx context.Context, r *run, rep progress.Reporter) error {
	logPath := r.dir.File(oce.BuildLogFile)
	out, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open the build log: %w", err)
	}
	defer out.Close()
	r.rebuilding = true
	r.toNode = nil
	var changed []string
	for _, b := range r.builds {
		img, err := oce.Build(ctx, r.engine.Verbs(), r.dir, b, func(line string) { fmt.Fprintln(out, line) })
		if err != nil {
			return fmt.Errorf("build the %s image (output in %s): %w", b.Role, logPath, err)
		}
		l, err := images.Built(ctx, r.engine.Verbs(), img.Reference, img.ID)
		if err != nil {
			return err
		}
		r.built[b.Role] = l
		if recordedImage(r.st, b.Role).ID != l.ID {
			r.changed[b.Role] = true
			changed = append(changed, b.Role)
			if b.Imported {
				r.toNode = append(r.toNode, l)
			}
		}
	}
	if len(changed) == 0 {
		rep.Note("every image is as recorded")
	} else {
		rep.Note("changed: " + strings.Join(changed, ", "))
	}
	return nil
}

// importRebuilt loads the changed images for the cluster into the node in one pass, as `up`
// does: each is recorded (so `down` removes it) before it is staged.
func importRebuilt(ctx context.Context, r *run, rep progress.Reporter) error {
	r.imported = nil
	if len(r.toNode) == 0 {
		rep.Note("nothing to import")
		return nil
	}
	// The recorded cluster's provider imports through the recorded engine; the provider's own
	// log lines go to the state directory, as during `up`.
	req := cluster.Request{Engine: r.engine.Endpoint, KubeconfigFile: r.dir.File(cluster.KubeconfigFile), Log: r.log, Progress: rep}
	importer, err := cluster.ImporterOf(ctx, r.provider, req, r.conn.Access)
	if err != nil {
		return err
	}
	imported, err := images.Import(ctx, images.ImportOptions{
		Engine: r.engine.Verbs(), Importer: importer, Images: r.toNode, Recorder: r.dir, Progress: images.ImportNotes(rep.Note),
	})
	if err != nil {
		return err
	}
	r.imported = imported
	return nil
}

// verifyRebuilt proves each imported image is in the node with the config the build made and
// names it there by its digest reference, as `up` does.
func verifyRebuilt(ctx context.Context, r *run, _ progress.Reporter) error {
	r.verified = nil
	if len(r.imported) == 0 {
		return nil
	}
	verified, err := images.VerifyInNode(ctx, images.VerifyOptions{
		Engine: r.engine.Verbs(), Node: r.conn.Access.NodeAddress, Images: r.imported, Recorder: r.dir,
	})
	if err != nil {
		return err
	}
	r.verified = verified
	return nil
}

// rewriteInstallation points the recorded Installation at the rebuilt Agent runtime: the
// runtime's previous in-cluster digest reference, which names it there, is replaced by the new
// one. It returns the Installation's bytes and whether the runtime changed; an Installation
// that names the new reference already (a reload interrupted after this step) is left as it is.
func rewriteInstallation(r *run) ([]byte, bool, error) {
	path := r.st.InstallationPath
	if !r.changed[oce.RoleRuntime] || path == "" {
		return nil, false, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false, fmt.Errorf("read the Installation %s: %w", path, err)
	}
	old, next := recordedImage(r.st, oce.RoleRuntime).InCluster, r.built[oce.RoleRuntime].Pin.DigestReference()
	text := string(data)
	switch {
	case old != "" && strings.Contains(text, old):
		text = strings.ReplaceAll(text, old, next)
	case strings.Contains(text, next):
		return data, true, nil
	default:
		return nil, false, fmt.Errorf("the Installation %s names neither the recorded Agent runtime %s nor the rebuilt %s: it was changed outside occ; run occ dev down and occ dev up", path, old, next)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, false, fmt.Errorf("rewrite the Installation %s: %w", path, err)
	}
	if err := fsutil.WriteFileAtomic(path, []byte(text), fi.Mode().Perm()); err != nil {
		return nil, false, fmt.Errorf("rewrite the Installation %s: %w", path, err)
	}
	return []byte(text), true, nil
}

// recordReload records the rebuilt images as the control plane's (their IDs and in-cluster
// references) and the checkout's commit, then removes from the node the images they superseded,
// forgetting each once it is gone: after a reload of every service nothing runs them. After a
// reload of some services the superseded images stay recorded (others may still run them) for
// the next full reload or for `down`.
func recordReload(ctx context.Context, r *run, rep progress.Reporter) error {
	refs := map[string]string{}
	for _, v := range r.verified {
		for role, l := range r.built {
			if l.Pin == v.Pin {
				refs[role] = v.Reference
			}
		}
	}
	err := r.dir.Update(func(s *state.State) {
		s.ControlPlane.Commit = r.checkout.Commit
		for i, img := range s.ControlPlane.Images {
			l, ok := r.built[img.Role]
			if !ok {
				continue
			}
			s.ControlPlane.Images[i].ID = l.ID
			if ref, ok := refs[img.Role]; ok {
				s.ControlPlane.Images[i].InCluster = ref
			}
		}
	})
	if err != nil {
		return fmt.Errorf("record the rebuilt images: %w", err)
	}
	if len(r.opts.Services) > 0 {
		return nil
	}
	return removeSuperseded(ctx, r, rep)
}

// removeSuperseded removes the node images of the built roles that are not the current ones.
func removeSuperseded(ctx context.Context, r *run, rep progress.Reporter) error {
	current := map[string]string{}
	for _, b := range r.builds {
		if l, ok := r.built[b.Role]; ok && b.Imported {
			current[l.Pin.Name()] = l.Pin.Digest
		}
	}
	reg := r.rec.Removers()
	var errs []error
	for _, o := range r.dir.State().Objects {
		digest, ours := current[o.Name]
		if o.Type != images.TypeClusterImage || !ours || o.Digest == digest {
			continue
		}
		rm, err := reg.Remove(ctx, o)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := r.dir.Forget(o); err != nil {
			errs = append(errs, err)
			continue
		}
		rep.Note(fmt.Sprintf("%s: %s", o, rm.Outcome))
	}
	return errors.Join(errs...)
}

// Plan is what `occ dev reload --dry-run` reports: the recorded environment and what a
// reload would rebuild and in which steps, read from the record alone. Nothing is contacted,
// built or changed, so what changed is known only to the reload itself.
type Plan struct {
	StateDirectory string   `json:"stateDirectory"`
	Profile        string   `json:"profile"`
	Checkout       string   `json:"checkout"`
	RecordedCommit string   `json:"recordedCommit"`
	Builds         []Build  `json:"builds"`
	Steps          []string `json:"steps"`
}

// Build is one recorded build a reload repeats.
type Build struct {
	Role       string   `json:"role"`
	Tag        string   `json:"tag"`
	Context    string   `json:"context"`
	Dockerfile string   `json:"dockerfile"`
	Target     string   `json:"target,omitempty"`
	Services   []string `json:"services,omitempty"`
	Imported   bool     `json:"imported"`
	RecordedID string   `json:"recordedID"`
}

// Describe describes the reload of the recorded environment without doing it. The refusals
// that need only the record (no control plane, selected images, no build record) are made; the
// live checks of the engine, the cluster and the checkout are the reload's first step.
func Describe(opts Options, parts Parts) (*Plan, error) {
	loc, err := state.Locate(opts.StateDir, opts.Environment)
	if err != nil {
		return nil, err
	}
	dir := loc.Dir
	if _, err := option.StartupTimeout(opts.StartupTimeout); err != nil {
		return nil, err
	}
	st, err := loc.Read()
	if errors.Is(err, state.ErrNotExist) {
		return nil, fmt.Errorf("%w at %s: nothing to reload; start one with occ dev up (or name the state directory of another with --state-dir or %s)", observe.ErrNoEnvironment, dir, state.EnvDirectory)
	}
	if err != nil {
		return nil, err
	}
	hook, err := hookOf(dir, opts.OCCCommand, st.Profile, parts.Profiles)
	if err != nil {
		return nil, err
	}
	cp := st.ControlPlane
	switch {
	case cp == nil:
		return nil, reloadRefusal(dir, opts.OCCCommand, "it has no OCE control plane (occ dev up found no checkout)")
	case slices.ContainsFunc(cp.Images, func(i state.ControlPlaneImage) bool { return i.Selected }):
		return nil, reloadRefusal(dir, opts.OCCCommand, "its controller and Agent runtime images were selected by digest, not built from the checkout; build and push new ones, then select them")
	}
	builds, err := oce.ReadBuilds(dir)
	if errors.Is(err, oce.ErrNoBuilds) {
		return nil, reloadRefusal(dir, opts.OCCCommand, "it records no builds (it was brought up by an occ without occ dev reload)")
	}
	if err != nil {
		return nil, err
	}
	out := &Plan{StateDirectory: dir, Profile: st.Profile, Checkout: cp.Checkout, RecordedCommit: cp.Commit, Builds: []Build{}}
	chosen, err := hook.chooseRecordedBuilds(builds, opts.Services)
	if err != nil {
		return nil, err
	}
	for _, b := range chosen {
		out.Builds = append(out.Builds, Build{Role: b.Role, Tag: b.Tag, Context: b.ContextDir, Dockerfile: b.Dockerfile, Target: b.Target,
			Services: b.Services, Imported: b.Imported, RecordedID: recordedImage(st, b.Role).ID})
	}
	if len(out.Builds) == 0 {
		return nil, noBuildOf(opts.Services, builds)
	}
	for _, s := range reloadSteps(hook, st) {
		out.Steps = append(out.Steps, s.Name)
	}
	return out, nil
}
