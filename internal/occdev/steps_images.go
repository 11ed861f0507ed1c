package occdev

import (
	"context"

	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/profile/oce"
	"github.com/openclaw/occ/internal/occdev/step"
	"github.com/openclaw/occ/internal/progress"
)

// image is the pinned image at a slot; images lists the plan's images: all of them for k3d, the
// images the Gateway runs (pulled by the cluster itself) for an existing cluster.
func (p *Plan) image(slot images.Slot) pins.PinnedImage { return images.Pinned(p.pins)[slot] }
func (p *Plan) images() []pins.PinnedImage {
	return images.Planned(p.pins, p.ClusterProvider != ProviderExisting)
}

// makeImageSlots gives the run the slots its image lanes fill side by side; verifiedImages are
// the images they verified in the node.
func (r *run) makeImageSlots()                   { r.slots = images.NewSlots(r.plan.pins) }
func (r *run) verifiedImages() []images.Verified { return r.slots.Verified() }

// imageStep makes one pinned image present in the engine (images.Present): used as it is when
// the engine holds it by digest, otherwise recorded and pulled by digest or loaded from the
// bundle. pullInTurn does so once the pull of after has its bytes or has ended, so the OpenShell
// images download one at a time, in the order images.PullTurns gives (images.Slots.InTurn).
func imageStep(p *Plan, slot images.Slot) Step { return pullInTurn(p, slot, slot) }

func pullInTurn(p *Plan, slot, after images.Slot) Step {
	return Step{
		Name: "Pull the " + p.image(slot).Title + " image",
		Describe: func(p *Plan) Description {
			return step.Describe(images.PullItem(p.image(slot).Image, "the "+engineName(p)+" engine", p.Bundle != "", EnvK3sImage))
		},
		Run: func(ctx context.Context, r *run, rep progress.Reporter) error {
			return r.slots.InTurn(ctx, slot, after, func() error {
				img, err := r.resolveTag(ctx, slot, rep)
				if err != nil {
					return err
				}
				return r.slots.Pull(ctx, slot, images.PresentOptions{Engine: r.engine.Verbs(), Image: img, Recorder: r.state,
					Progress: oce.PullProgress(rep), Platform: r.enginePlatform, EngineName: r.engine.Name(),
					Archive: r.bundle.Archive(slot), Offline: r.plan.Offline})
			})
		},
	}
}

// resolveTag is the image of slot by digest. Only a node image selected by tag (EnvK3sImage) has
// none: its tag is resolved at its registry now (controlplane.ResolveSelected), said, and the
// run's pins take the digest, so the cluster is created from exactly the image this pull fetched.
func (r *run) resolveTag(ctx context.Context, slot images.Slot, rep progress.Reporter) (pins.Image, error) {
	img := r.plan.image(slot).Image
	if img.Digest != "" {
		return img, nil
	}
	resolved, err := controlplane.ResolveSelected(ctx, r.engine.Verbs(), r.engine.Identity.Kind, img, EnvK3sImage, rep.Note)
	if err != nil {
		return pins.Image{}, err
	}
	set := *r.plan.pins
	set.K3s.Image = resolved
	r.resolvedPins.Store(&set)
	return resolved, nil
}

func describeRepoDigests(p *Plan) Description {
	return note("nothing created; requires each local image's RepoDigests to include its pinned digest (the engine holds that content under that name)")
}

// checkRepoDigests refuses a local image not pulled by its pinned digest, of the images k3d
// created the cluster with and the control plane's own; each OpenShell image is checked by its
// import (images.Import), before it enters the node.
func checkRepoDigests(_ context.Context, r *run, _ progress.Reporter) error {
	return r.slots.CheckRepoDigests(images.ClusterSlots(r.plan.pins), r.profileImports())
}

// importStep loads one pulled OpenShell image into the node, in the image's own lane, once the
// node of the cluster the lane beside it is creating takes images: each image travels into the
// node while the others still download and while k3s starts.
func importStep(p *Plan, slot images.Slot) Step {
	return Step{
		Name:     "Import the " + p.image(slot).Title + " image into the cluster",
		Describe: func(p *Plan) Description { return step.Describe(images.ImportItem(p.image(slot).Image)) },
		Run: func(ctx context.Context, r *run, rep progress.Reporter) error {
			importer, err := r.nodeImporter(ctx, rep)
			if err != nil {
				return err
			}
			return r.slots.Import(ctx, slot, r.importOptions(importer, nil, rep))
		},
	}
}

// verifyStep proves one imported image (an OpenShell or a routing controller's) is in the node as
// its pinned pull produced it and names it there for the chart or manifest that runs it, in its
// own lane, while the others still travel and k3s starts.
func verifyStep(p *Plan, slot images.Slot) Step {
	user := "the chart"
	if p.image(slot).Routing {
		user = "its manifest"
	}
	return Step{
		Name:     "Verify the " + p.image(slot).Title + " image in the node and tag it for " + user,
		Describe: func(p *Plan) Description { return step.Describe(images.VerifiedItem(p.image(slot).Image)) },
		Run: func(ctx context.Context, r *run, _ progress.Reporter) error {
			return r.slots.Verify(ctx, slot, images.VerifyOptions{Engine: r.engine.Verbs(), Recorder: r.state})
		},
	}
}

// startedImagesFirst is the Gateway install s, run once each image the chart's own objects start
// is verified in the node by its lane beside it (images.StartedSlots).
func startedImagesFirst(s Step) Step {
	return imagesFirst(s, "installed once the images the chart's own objects start (found by its render check) are verified in the node; the images it names for Sandboxes are verified beside the install, before the Installation is written",
		func(r *run) []imageSlot { return images.StartedSlots(r.plan.pins, r.gatewayStarts) })
}

// imageSlot is a pinned image's slot; routingImages are the routing controllers' images'.
type imageSlot = images.Slot

func routingImages(s *pins.Set) []imageSlot { return images.RoutingSlots(s) }

// imagesFirst is the step s, run once the images of the slots waitFor gives are verified in the
// node by their lanes beside it; note says so in the dry run.
func imagesFirst(s Step, note string, waitFor func(r *run) []imageSlot) Step {
	describe, next := s.Describe, s.Run
	s.Describe = func(p *Plan) Description {
		d := describe(p)
		d.Note = note
		return d
	}
	s.Run = func(ctx context.Context, r *run, rep progress.Reporter) error {
		if err := r.slots.WaitInNode(ctx, waitFor(r)); err != nil {
			return err
		}
		return next(ctx, r, rep)
	}
	return s
}

func describeProfileImport(p *Plan) Description {
	return images.DescribeOwnImport(p.profile.ImportImages())
}

// importProfileImages loads the control plane's own images for the cluster in one pass.
func importProfileImages(ctx context.Context, r *run, rep progress.Reporter) error {
	importer, err := cluster.ImporterOf(ctx, r.provider, r.clusterRequest(rep), r.conn.Access)
	if err != nil {
		return err
	}
	return r.slots.ImportOwn(ctx, r.importOptions(importer, r.profileImports(), rep))
}

// nodeImporter is the importer of the node of the cluster being made beside the image lanes:
// the provider's early importer once the node takes images, or else, once the cluster is
// available, the importer of the cluster.
func (r *run) nodeImporter(ctx context.Context, rep progress.Reporter) (images.Importer, error) {
	if early, ok := r.provider.(cluster.EarlyImporter); ok {
		return early.NodeImporter(ctx, r.clusterRequest(rep))
	}
	if err := r.cluster.Wait(ctx); err != nil {
		return nil, err
	}
	return cluster.ImporterOf(ctx, r.provider, r.clusterRequest(rep), r.conn.Access)
}

// importOptions import local (for a slot, its own image) into the node through importer.
func (r *run) importOptions(importer images.Importer, local []images.Local, rep progress.Reporter) images.ImportOptions {
	return images.ImportOptions{Engine: r.engine.Verbs(), Importer: importer, Images: local, Recorder: r.state, Progress: images.ImportNotes(rep.Note)}
}

func describeVerify(p *Plan) Description { return images.DescribeOwnVerify(p.profile.ImportImages()) }

// verifyImages proves each of the control plane's imported images is in the node as it was
// imported (images.Local.Holds) and tags repo@sha256:<digest> there for its Pods.
func verifyImages(ctx context.Context, r *run, _ progress.Reporter) error {
	return r.slots.VerifyOwn(ctx, images.VerifyOptions{Engine: r.engine.Verbs(), Node: r.conn.Access.NodeAddress, Recorder: r.state})
}

// profileImports are the control plane's own images for the cluster (the Agent runtime).
func (r *run) profileImports() []images.Local {
	if r.plan.profile.ImportImages() == nil {
		return nil
	}
	return r.plan.profile.Imports(r)
}
