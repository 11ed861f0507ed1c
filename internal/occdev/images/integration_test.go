package images_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/testbed/dockerbed"
)

// `occ dev up` on a laptop that has none of the three pinned OpenShell images: each is pulled by
// digest (recorded before the pull, with progress), its RepoDigests checked, all three imported
// into the cluster in one pass, and verified in the node's containerd: the config digest there
// is the image ID the pinned pull produced, under repo@sha256:<pinned> for the chart. Status
// then reports them matching, a tampered one differing and a removed one absent; `down`
// removes exactly the pulled references, and an image the engine held before stays.
func TestPresentImportVerifyStatusRemove(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	b := startBed(t, ctx)
	c := b.cluster(t, ctx)

	busybox, err := dockerbed.BusyboxImage()
	if err != nil {
		t.Fatal(err)
	}
	before, err := b.Engine.EnsureImage(ctx, busybox)
	if err != nil {
		t.Fatal(err)
	}

	var pinsOf []pins.Image
	var served []dockerbed.Pinned
	var own []string // the IDs of the engine's own content tags of the three images
	for _, role := range []string{dockerbed.RoleGateway, dockerbed.RoleSandbox, dockerbed.RoleSupervisor} {
		img, p := b.provide(t, ctx, product(t, role))
		pinsOf, served = append(pinsOf, img), append(served, p)
		tag, err := product(t, role).Tag()
		if err != nil {
			t.Fatal(err)
		}
		ins, err := b.engine.API.ImageInspect(ctx, tag)
		if err != nil {
			t.Fatal(err)
		}
		own = append(own, ins.ID)
	}

	rec := newRecorder(t)
	var presentAtRecord []string
	rec.onRecord = func(o state.Object) {
		if o.Type == images.TypePulledImage && o.ID == "" && present(t, ctx, b.engine, o.Name+"@"+o.Digest) {
			presentAtRecord = append(presentAtRecord, o.Name)
		}
	}
	var evMu sync.Mutex
	events := map[string][]images.Event{}
	progress := func(ev images.Event) {
		evMu.Lock()
		defer evMu.Unlock()
		events[ev.Image] = append(events[ev.Image], ev)
	}
	var locals []images.Local
	for i, img := range pinsOf {
		if present(t, ctx, b.engine, img.DigestReference()) {
			t.Fatalf("%s is already in the engine; the pull below would prove nothing", img.DigestReference())
		}
		l, err := images.Present(ctx, images.PresentOptions{Engine: b.engine.Verbs(), Image: img, Recorder: rec, Progress: progress})
		if err != nil {
			t.Fatalf("Present %s: %v", img, err)
		}
		if !l.Pulled || l.ID != b.localID(served[i]) {
			t.Fatalf("Present %s = pulled %t ID %s, want pulled with ID %s", img, l.Pulled, l.ID, b.localID(served[i]))
		}
		if err := images.CheckRepoDigest(l); err != nil {
			t.Fatalf("CheckRepoDigest after a pull by digest: %v", err)
		}
		locals = append(locals, l)
		evs := events[img.String()]
		engineEvents := 0
		for _, ev := range evs {
			if ev.Layer != "" {
				engineEvents++
			}
		}
		if len(evs) < 3 || evs[0].Status != "pulling" || evs[len(evs)-1].Status != "pulled" || engineEvents == 0 {
			t.Errorf("progress of %s = %+v, want pulling, the engine's layer events, pulled", img, evs)
		}
	}
	if len(presentAtRecord) != 0 {
		t.Errorf("images recorded only after they were pulled: %v", presentAtRecord)
	}
	if got := rec.of(images.TypePulledImage); len(got) != 3 || got[0].ID != locals[0].ID || got[0].Name != pinsOf[0].Name() || got[0].Digest != pinsOf[0].Digest {
		t.Fatalf("pull records = %+v", got)
	}
	// A second up finds them present: nothing pulled, nothing recorded.
	again := newRecorder(t)
	if l, err := images.Present(ctx, images.PresentOptions{Engine: b.engine.Verbs(), Image: pinsOf[0], Recorder: again}); err != nil || l.Pulled || len(again.of(images.TypePulledImage)) != 0 {
		t.Fatalf("Present of a present image = %+v, %v, records %v", l, err, again.of(images.TypePulledImage))
	}

	imported, err := images.Import(ctx, images.ImportOptions{Engine: b.engine.Verbs(), Importer: b.provider.Importer(c.Name), Images: locals, Recorder: rec, Progress: progress})
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	for _, im := range imported {
		if present(t, ctx, b.engine, im.Staging) {
			t.Errorf("staging tag %s is still in the engine after Import", im.Staging)
		}
	}
	if got := rec.of(images.TypeClusterImage); len(got) != 3 || got[0].Name != pinsOf[0].Name() || got[0].ID != "" {
		t.Errorf("cluster image records after Import = %+v, want one per image, not yet verified", got)
	}
	verified, err := images.VerifyInNode(ctx, images.VerifyOptions{Engine: b.engine.Verbs(), Node: c.NodeContainer, Images: imported, Recorder: rec})
	if err != nil {
		t.Fatalf("VerifyInNode: %v", err)
	}
	for i, v := range verified {
		if v.Reference != pinsOf[i].DigestReference() || v.ConfigDigest != served[i].ConfigDigest {
			t.Errorf("verified %+v, want %s with config %s", v, pinsOf[i].DigestReference(), served[i].ConfigDigest)
		}
		t.Logf("%s: pinned manifest %s, node manifest %s, config %s", v.Pin, v.Pin.Digest, v.NodeManifest, v.ConfigDigest)
	}
	if got := rec.of(images.TypeClusterImage); len(got) != 3 || got[0].ID != served[0].ConfigDigest {
		t.Errorf("cluster image records after VerifyInNode = %+v, want the node's config digests", got)
	}
	nodeRefs := ctrRefs(t, ctx, b.engine, c.NodeContainer)
	for _, im := range imported {
		if nodeRefs[im.Staging] {
			t.Errorf("the node still lists staging name %s", im.Staging)
		}
	}

	st := status(t, ctx, b, c.NodeContainer, pinsOf)
	for _, s := range st {
		if s.State != images.ImageMatches {
			t.Errorf("status of %s = %s (%s), want matches", s.Pin, s.State, s.Reason)
		}
	}
	// The removers `down` and `status` use, built from the recorded state alone.
	engine := docker.VerbsOf(docker.Recorded(&state.Engine{Endpoint: b.engine.Endpoint.String()}))
	access := state.Cluster{Provider: "k3d", Name: c.Name, NodeAddress: c.NodeContainer}
	clusterImages := images.ClusterImageRemover(access, engine)
	pulledImages := images.PulledImageRemover(engine)
	for _, o := range rec.of(images.TypeClusterImage) {
		if in := clusterImages.Inspect(ctx, o); in.State != state.Present {
			t.Errorf("cluster image %s = %+v, want present", o, in)
		}
	}
	for _, o := range rec.of(images.TypePulledImage) {
		if in := pulledImages.Inspect(ctx, o); in.State != state.Present {
			t.Errorf("pulled image %s = %+v, want present", o, in)
		}
	}
	// Someone points the gateway's name in the node at the sandbox's content; another removes
	// the supervisor from the node.
	ctr(t, ctx, b.engine, c.NodeContainer, "images", "tag", "--force", pinsOf[1].DigestReference(), pinsOf[0].DigestReference())
	ctr(t, ctx, b.engine, c.NodeContainer, "images", "rm", pinsOf[2].DigestReference())
	st = status(t, ctx, b, c.NodeContainer, pinsOf)
	// Each store names what differs by its own identity: the config digests on the classic
	// store, the manifests for the node's platform on the containerd store.
	differ := []string{served[1].ConfigDigest, served[0].ConfigDigest}
	if b.store == dockerbed.ContainerdStore {
		differ = []string{served[1].ManifestDigest, served[0].ManifestDigest}
	}
	if st[0].State != images.ImageDiffers || !strings.Contains(st[0].Reason, differ[0]) || !strings.Contains(st[0].Reason, differ[1]) {
		t.Errorf("status of the tampered gateway = %+v, want differs naming both of %v", st[0], differ)
	}
	if st[1].State != images.ImageMatches || st[2].State != images.ImageAbsent {
		t.Errorf("status = %s, %s; want matches, absent", st[1].State, st[2].State)
	}
	recs := rec.of(images.TypeClusterImage)
	if in := clusterImages.Inspect(ctx, recs[0]); in.State != state.Changed {
		t.Errorf("tampered cluster image = %+v, want changed", in)
	}
	if in := clusterImages.Inspect(ctx, recs[2]); in.State != state.Missing {
		t.Errorf("removed cluster image = %+v, want missing", in)
	}
	// A crash between staging and cleanup left the sandbox's staging tag: its cluster image's
	// remover takes it, and the image's name in the node.
	leftover := images.StagingTag(pinsOf[1], c.Name)
	if err := b.engine.API.ImageTag(ctx, locals[1].ID, leftover); err != nil {
		t.Fatal(err)
	}
	if rm, err := clusterImages.Remove(ctx, recs[1]); err != nil || rm.Outcome != state.Removed {
		t.Errorf("remove cluster image %s = %+v, %v", recs[1], rm, err)
	}
	if present(t, ctx, b.engine, leftover) || ctrRefs(t, ctx, b.engine, c.NodeContainer)[pinsOf[1].DigestReference()] {
		t.Errorf("after removing %s the staging tag or the node's name is left", recs[1])
	}
	if rm, err := clusterImages.Remove(ctx, recs[2]); err != nil || rm.Outcome != state.AlreadyGone {
		t.Errorf("remove the already removed %s = %+v, %v", recs[2], rm, err)
	}

	// down removes the pulled references; the bed's content tags (references the engine held
	// before) and the unrelated busybox stay.
	for _, o := range rec.of(images.TypePulledImage) {
		if rm, err := pulledImages.Remove(ctx, o); err != nil || rm.Outcome != state.Removed {
			t.Fatalf("RemovePulledImage %s = %+v, %v", o, rm, err)
		}
		if present(t, ctx, b.engine, o.Name+"@"+o.Digest) {
			t.Errorf("%s is still present after its removal", o)
		}
		if rm, err := images.RemovePulledImage(ctx, b.engine.Verbs(), o); err != nil || rm.Outcome != state.AlreadyGone {
			t.Errorf("a repeated removal of %s = %+v, %v; want already gone", o, rm, err)
		}
	}
	for i, role := range []string{dockerbed.RoleGateway, dockerbed.RoleSandbox, dockerbed.RoleSupervisor} {
		tag, err := product(t, role).Tag()
		if err != nil {
			t.Fatal(err)
		}
		if ins, err := b.engine.API.ImageInspect(ctx, tag); err != nil || ins.ID != own[i] {
			t.Errorf("the engine's own reference %s was touched: %v", tag, err)
		}
	}
	if ins, err := b.engine.API.ImageInspect(ctx, before.Tag); err != nil || ins.ID != before.ID {
		t.Errorf("the pre-existing %s was touched: %v", before.Tag, err)
	}
	if st := status(t, ctx, b, c.NodeContainer, pinsOf[0:1]); st[0].State != images.ImageUnverified {
		t.Errorf("status without the local image = %s, want unverified", st[0].State)
	}
}

// A pin whose digest the registry does not serve under its tag (a typo, or a moved tag) is
// refused naming both digests, and leaves no record; a local image that merely carries the
// pinned tag (re-tagged or built locally) cannot stand in for the pin when the registry is
// unreachable, and is refused naming its image ID and the pinned digest.
func TestWrongPinAndRetaggedImageRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b := startBed(t, ctx)
	gw, gwServed := b.provide(t, ctx, product(t, dockerbed.RoleGateway))
	_, sbServed := b.provide(t, ctx, product(t, dockerbed.RoleSandbox))

	wrong := gw
	wrong.Digest = sbServed.Digest
	rec := newRecorder(t)
	_, err := images.Present(ctx, images.PresentOptions{Engine: b.engine.Verbs(), Image: wrong, Recorder: rec})
	if err == nil {
		t.Fatal("a wrong pin was pulled")
	}
	t.Logf("wrong pin: %v", err)
	for _, w := range []string{wrong.Digest, gwServed.Digest, "the pin is wrong"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("wrong-pin error does not mention %q:\n%v", w, err)
		}
	}
	if got := rec.of(images.TypePulledImage); len(got) != 0 {
		t.Errorf("a failed pull left records %+v", got)
	}

	// The registry the pin names is unreachable, and the engine holds the sandbox image
	// re-tagged under the gateway's pinned name and tag.
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	host := closed.Addr().String()
	closed.Close()
	offline := pinOf(t, host+"/occ-bed/openshell-gateway:"+gw.Tag+"@"+gwServed.Digest, "")
	retag := offline.Name() + ":" + offline.Tag
	// The sandbox's content as the engine holds it under the bed's own tag (never pulled here).
	sbTag, err := product(t, dockerbed.RoleSandbox).Tag()
	if err != nil {
		t.Fatal(err)
	}
	sbOwn, err := b.engine.API.ImageInspect(ctx, sbTag)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.engine.API.ImageTag(ctx, sbOwn.ID, retag); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Engine.Forget(retag) })
	_, err = images.Present(ctx, images.PresentOptions{Engine: b.engine.Verbs(), Image: offline, Recorder: rec})
	if err == nil {
		t.Fatal("a re-tagged image stood in for the pin")
	}
	t.Logf("re-tagged image: %v", err)
	for _, w := range []string{retag, sbOwn.ID, gwServed.Digest, "re-tagged or locally built"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("re-tagged error does not mention %q:\n%v", w, err)
		}
	}
	// The same image handed to the import is refused by the RepoDigests check.
	ins, err := b.engine.API.ImageInspect(ctx, retag)
	if err != nil {
		t.Fatal(err)
	}
	var rd *images.RepoDigestError
	if err := images.CheckRepoDigest(images.Local{Pin: offline, ID: ins.ID, RepoDigests: ins.RepoDigests}); !errors.As(err, &rd) ||
		!strings.Contains(err.Error(), sbOwn.ID) || !strings.Contains(err.Error(), gwServed.Digest) {
		t.Errorf("CheckRepoDigest of the re-tagged image = %v", err)
	}
}

// retagBeforeImport is an importer through which the engine's tag is moved to other content
// between occ's check and k3d's save, as a concurrent `docker tag` would.
type retagBeforeImport struct {
	images.Importer
	engine *docker.Engine
	from   string
	to     string
}

func (r retagBeforeImport) ImportImages(ctx context.Context, refs []string, pass images.Pass) error {
	if err := r.engine.API.ImageTag(ctx, r.to, r.from); err != nil {
		return err
	}
	return r.Importer.ImportImages(ctx, refs, pass)
}

// The image a tag names changes between the check and the import: the node then holds other
// content than the pinned pull produced, and the in-node check refuses it naming the image and
// both digests, before any chart could run it.
func TestVerifyRefusesImageChangedDuringImport(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b := startBed(t, ctx)
	c := b.cluster(t, ctx)
	gw, gwServed := b.provide(t, ctx, product(t, dockerbed.RoleGateway))
	sb, sbServed := b.provide(t, ctx, product(t, dockerbed.RoleSandbox))
	rec := newRecorder(t)
	var locals []images.Local
	for _, img := range []pins.Image{gw, sb} {
		l, err := images.Present(ctx, images.PresentOptions{Engine: b.engine.Verbs(), Image: img, Recorder: rec})
		if err != nil {
			t.Fatal(err)
		}
		locals = append(locals, l)
	}
	t.Cleanup(func() {
		for _, o := range rec.of(images.TypePulledImage) {
			_, _ = images.RemovePulledImage(context.Background(), b.engine.Verbs(), o)
		}
	})
	staging := images.StagingTag(locals[0].Pin, c.Name)
	imp := retagBeforeImport{Importer: b.provider.Importer(c.Name), engine: b.engine, from: staging, to: b.localID(sbServed)}
	imported, err := images.Import(ctx, images.ImportOptions{Engine: b.engine.Verbs(), Importer: imp, Images: locals, Recorder: rec})
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	if present(t, ctx, b.engine, staging) {
		t.Errorf("the moved staging tag %s was not cleaned up", staging)
	}
	_, err = images.VerifyInNode(ctx, images.VerifyOptions{Engine: b.engine.Verbs(), Node: c.NodeContainer, Images: imported})
	t.Logf("changed during import: %v", err)
	var de *images.DigestError
	if !errors.As(err, &de) || de.Pin.String() != gw.String() {
		t.Fatalf("VerifyInNode = %v, want a DigestError for the gateway", err)
	}
	differ := []string{gwServed.ConfigDigest, sbServed.ConfigDigest}
	if b.store == dockerbed.ContainerdStore {
		differ = []string{gwServed.ManifestDigest, sbServed.ManifestDigest}
	}
	for _, w := range append([]string{gw.String()}, differ...) {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error does not mention %q:\n%v", w, err)
		}
	}
	if ctrRefs(t, ctx, b.engine, c.NodeContainer)[gw.DigestReference()] {
		t.Errorf("the chart's name %s was tagged in the node for unverified content", gw.DigestReference())
	}
}

// failingImporter reports an error after importing (as k3d does when `ctr import` exits before
// the last bytes of the stream were written), or without importing anything.
type failingImporter struct {
	images.Importer
	importFirst bool
}

func (f failingImporter) ImportImages(ctx context.Context, refs []string, pass images.Pass) error {
	if f.importFirst {
		if err := f.Importer.ImportImages(ctx, refs, pass); err != nil {
			return err
		}
	}
	return errors.New("failed to copy read stream. io: read/write on closed pipe")
}

// racingImporter reports success without importing on its first call, as k3d does when its
// exec wait inspects the import before the engine has marked it running.
type racingImporter struct {
	images.Importer
	calls *int
}

func (r racingImporter) ImportImages(ctx context.Context, refs []string, pass images.Pass) error {
	*r.calls++
	if *r.calls == 1 {
		return nil
	}
	return r.Importer.ImportImages(ctx, refs, pass)
}

// An importer can report a failure for an import that happened (k3d's direct mode races the
// end of the stream against ctr's exit), or success for one that did not (its exec wait races
// the exec's start); the node decides: an import whose content is in the node succeeds, a
// missing image is imported again, and one that never arrives fails with k3d's error and what
// the node lacks.
func TestImportErrorsAreJudgedByTheNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b := startBed(t, ctx)
	c := b.cluster(t, ctx)
	gw, _ := b.provide(t, ctx, product(t, dockerbed.RoleGateway))
	rec := newRecorder(t)
	l, err := images.Present(ctx, images.PresentOptions{Engine: b.engine.Verbs(), Image: gw, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, o := range rec.of(images.TypePulledImage) {
			_, _ = images.RemovePulledImage(context.Background(), b.engine.Verbs(), o)
		}
	})
	real := b.provider.Importer(c.Name)
	_, err = images.Import(ctx, images.ImportOptions{Engine: b.engine.Verbs(), Importer: failingImporter{Importer: real}, Images: []images.Local{l}, Recorder: rec})
	if err == nil || !strings.Contains(err.Error(), "closed pipe") || !strings.Contains(err.Error(), "after 3 imports") || !strings.Contains(err.Error(), "lacks") {
		t.Fatalf("Import whose importer imported nothing = %v, want k3d's error and what the node lacks", err)
	}
	calls := 0
	if _, err := images.Import(ctx, images.ImportOptions{Engine: b.engine.Verbs(), Importer: racingImporter{Importer: real, calls: &calls}, Images: []images.Local{l}, Recorder: rec}); err != nil || calls != 2 {
		t.Fatalf("Import through a racing importer = %v after %d calls, want success on the second", err, calls)
	}
	ctr(t, ctx, b.engine, c.NodeContainer, "images", "rm", images.StagingTag(gw, c.Name))
	imported, err := images.Import(ctx, images.ImportOptions{Engine: b.engine.Verbs(), Importer: failingImporter{Importer: real, importFirst: true}, Images: []images.Local{l}, Recorder: rec})
	if err != nil {
		t.Fatalf("Import whose content reached the node = %v, want success", err)
	}
	if _, err := images.VerifyInNode(ctx, images.VerifyOptions{Engine: b.engine.Verbs(), Node: c.NodeContainer, Images: imported}); err != nil {
		t.Fatalf("VerifyInNode: %v", err)
	}
}

func status(t *testing.T, ctx context.Context, b *bed, node string, imgs []pins.Image) []images.ImageStatus {
	t.Helper()
	st, err := images.Status(ctx, images.StatusOptions{Engine: b.engine.Verbs(), Node: node, Images: imgs})
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	return st
}

func ctr(t testing.TB, ctx context.Context, e *docker.Engine, node string, args ...string) string {
	t.Helper()
	res, err := e.Verbs().Exec(ctx, node, engine.ExecInput{}, append([]string{"ctr", "-n", "k8s.io"}, args...)...)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("ctr %v: %v %s", args, err, res.Stderr)
	}
	return res.Stdout
}

func ctrRefs(t *testing.T, ctx context.Context, e *docker.Engine, node string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, line := range strings.Split(ctr(t, ctx, e, node, "images", "ls", "-q"), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out[line] = true
		}
	}
	return out
}

// cancelMidStream cancels the import's context once `ctr image import` runs in the node, that
// is while the image streams into it, as Ctrl-C or a failing sibling lane of `up` would.
type cancelMidStream struct {
	images.Importer
	engine *docker.Engine
	node   string
	cancel context.CancelFunc
	// saw is closed when the import was seen running in the node.
	saw chan struct{}
}

func (c cancelMidStream) ImportImages(ctx context.Context, refs []string, pass images.Pass) error {
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			res, err := c.engine.Verbs().Exec(ctx, c.node, engine.ExecInput{}, "ps")
			if err == nil && strings.Contains(res.Stdout, "ctr image import") {
				close(c.saw)
				c.cancel()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return c.Importer.ImportImages(ctx, refs, pass)
}

// `up` is cancelled while a large image streams into the node: the import still ends (k3d's
// direct mode, cancelled half-way, never closes the pipe into `ctr image import`, which would
// then wait for input forever), reports the cancellation, and leaves no staging tag in the engine.
func TestImportCancelledMidStreamEnds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b := startBed(t, ctx)
	c := b.cluster(t, ctx)
	spec, err := dockerbed.SizedImage(256 << 20)
	if err != nil {
		t.Fatal(err)
	}
	pin, _ := b.provide(t, ctx, spec)
	rec := newRecorder(t)
	l, err := images.Present(ctx, images.PresentOptions{Engine: b.engine.Verbs(), Image: pin, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, o := range rec.of(images.TypePulledImage) {
			_, _ = images.RemovePulledImage(context.Background(), b.engine.Verbs(), o)
		}
	})
	ictx, icancel := context.WithCancel(ctx)
	defer icancel()
	imp := cancelMidStream{Importer: b.provider.Importer(c.Name), engine: b.engine, node: c.NodeContainer, cancel: icancel, saw: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := images.Import(ictx, images.ImportOptions{Engine: b.engine.Verbs(), Importer: imp, Images: []images.Local{l}, Recorder: rec})
		done <- err
	}()
	// The bound is a failure verdict for a hung import, not a synchronisation.
	select {
	case err = <-done:
	case <-time.After(3 * time.Minute):
		t.Fatal("the import cancelled while streaming never ended")
	}
	select {
	case <-imp.saw:
	default:
		t.Fatalf("the import ended (%v) before it was seen streaming into the node; the scenario did not happen", err)
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Import cancelled mid-stream = %v, want the cancellation", err)
	}
	if present(t, ctx, b.engine, images.StagingTag(pin, c.Name)) {
		t.Errorf("staging tag %s left in the engine", images.StagingTag(pin, c.Name))
	}
}

// A pull that downloads a layer the engine lacks says, through the engine's own progress, when
// the layer's bytes are in: DownloadsDone fires once, before the pull ends (while the engine may
// still extract), and no layer is announced after it; a pull of an image whose layers the engine
// already holds downloads nothing, and it does not fire.
func TestDownloadsDoneOnTheEnginesOwnProgress(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b := startBed(t, ctx)
	spec, err := dockerbed.SizedImage(6<<20 + 109) // a size no other test uses: its layer is new to the engine
	if err != nil {
		t.Fatal(err)
	}
	// Whatever a run that stopped half-way left of this image (under any registry's name) would
	// hold its layer in the engine.
	list, err := b.Engine.API.ImageList(ctx, image.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range list {
		for _, ref := range append(im.RepoTags, im.RepoDigests...) {
			if strings.HasPrefix(ref, spec.Repo+":") || strings.Contains(ref, "/"+spec.Repo+":") || strings.Contains(ref, "/"+spec.Repo+"@") {
				b.Engine.Forget(ref)
			}
		}
	}
	// Pushed to the registry only: the engine has neither the image nor its layer.
	push := func(spec dockerbed.ImageSpec) pins.Image {
		p, err := b.Registry.Push(ctx, spec)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Engine.Forget(p.Ref) })
		return pinOf(t, p.Ref, "")
	}
	img := push(spec)
	if present(t, ctx, b.engine, img.DigestReference()) {
		t.Fatalf("%s is already in the engine; the pull below would download nothing", img.DigestReference())
	}
	pull := func(img pins.Image) (evs []images.Event, fired int) {
		var mu sync.Mutex
		fired = -1
		downloaded := images.DownloadsDone(func() { fired = len(evs) - 1 })
		_, err := images.Present(ctx, images.PresentOptions{Engine: b.engine.Verbs(), Image: img, Recorder: newRecorder(t), Progress: func(ev images.Event) {
			mu.Lock()
			defer mu.Unlock()
			evs = append(evs, ev)
			downloaded(ev)
		}})
		if err != nil {
			t.Fatal(err)
		}
		return evs, fired
	}
	evs, fired := pull(img)
	if fired < 0 || evs[fired].Status != "Download complete" || fired >= len(evs)-1 {
		t.Fatalf("the download of %s was said to be done at event %d, want at its layer's Download complete, before the pull ended: %+v", img, fired, evs)
	}
	for n, ev := range evs {
		if n > fired && (ev.Status == "Pulling fs layer" || ev.Status == "Waiting" || ev.Status == "Downloading") {
			t.Errorf("event %d (%s of layer %s) came after the downloads were said to be done (%d)", n, ev.Status, ev.Layer, fired)
		}
	}

	// The same layer under a second image: nothing to download, nothing said.
	spec.Config.Cmd = []string{"/data/blob", "again"}
	again := push(spec)
	if evs, fired := pull(again); fired != -1 {
		t.Errorf("a pull that downloaded nothing was said to be done at event %d: %+v", fired, evs)
	}
}
