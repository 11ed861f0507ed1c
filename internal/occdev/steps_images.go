package occdev

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/profile/oce"
	"github.com/openclaw/occ/internal/occdev/step"
	"github.com/openclaw/occ/internal/progress"
)

// flowImages are the pinned images `up` pulls itself, by their slot in run.local: the images k3d
// creates the cluster with, then the images the Gateway runs, which are imported into the node.
// What each image is for comes from the pins' own table (pins.ImageUse).
func flowImages(s *pins.Set) []pins.PinnedImage {
	return append(append(s.ClusterImages(), s.GatewayImages()...), s.RoutingImages()...)
}

// imageSlot is one pinned image `up` uses, by its slot in flowImages.
type imageSlot int

// slotsOf are the slots of the images whose use keep accepts, in flowImages order.
func slotsOf(s *pins.Set, keep func(pins.PinnedImage) bool) []imageSlot {
	var out []imageSlot
	for i, img := range flowImages(s) {
		if keep(img) {
			out = append(out, imageSlot(i))
		}
	}
	return out
}

// clusterImages are the slots of the images k3d creates the cluster with; gatewayImages those
// of the images imported into the cluster and used by the Gateway chart.
func clusterImages(s *pins.Set) []imageSlot {
	return slotsOf(s, func(img pins.PinnedImage) bool { return img.Cluster })
}

func gatewayImages(s *pins.Set) []imageSlot {
	return slotsOf(s, func(img pins.PinnedImage) bool { return img.Gateway != nil })
}

// nodeImages are the slots of the images imported into the node, each by its own lane: the
// Gateway's and the routing controllers'.
func nodeImages(s *pins.Set) []imageSlot {
	return slotsOf(s, func(img pins.PinnedImage) bool { return img.Gateway != nil || img.Routing })
}

// routingImages are the slots of the routing controllers' images.
func routingImages(s *pins.Set) []imageSlot {
	return slotsOf(s, func(img pins.PinnedImage) bool { return img.Routing })
}

// image is the pinned image of a slot.
func (p *Plan) image(slot imageSlot) pins.PinnedImage { return flowImages(p.pins)[slot] }

// images lists the plan's images: all of them for k3d, the images the Gateway runs (pulled by
// the cluster itself) for an existing cluster.
func (p *Plan) images() []pins.PinnedImage {
	var out []pins.PinnedImage
	for _, img := range flowImages(p.pins) {
		if p.ClusterProvider == ProviderExisting && img.Cluster {
			continue
		}
		out = append(out, img)
	}
	return out
}

// makeImageSlots gives the run a slot for each image of flowImages before the lanes that fill
// them side by side start.
func (r *run) makeImageSlots() {
	n := len(flowImages(r.plan.pins))
	r.local = make([]images.Local, n)
	r.product = make([]productImage, n)
	r.inNode = make([]readiness, n)
	r.pulled = make([]readiness, n)
}

// productImage is one OpenShell image as its lane took it into the node: the node's container
// and the image under its staging name (the import), then under the chart's name (the
// verification).
type productImage struct {
	node     string
	imported []images.Imported
	verified []images.Verified
}

// verifiedImages are every image verified in the node: the OpenShell images in pin order, then
// the control plane's own.
func (r *run) verifiedImages() []images.Verified {
	var out []images.Verified
	for _, slot := range nodeImages(r.plan.pins) {
		out = append(out, r.product[slot].verified...)
	}
	return append(out, r.verified...)
}

// pullInTurn is the pull of slot, begun once the pull of after (the lane before it; slot itself
// for the first lane) has all its bytes (its engine may still be extracting them) or has ended,
// so the OpenShell images download one at a time. They share one link: one at a time, each is
// complete, and its import into the node under way, while the next downloads, so only the last
// one's import follows the last byte; side by side they would all complete together at the end
// and the largest's import would follow it. A pull of an image the engine holds ends at once.
func pullInTurn(p *Plan, slot, after imageSlot) Step {
	return inTurn(imageStep(p, slot), slot, after)
}

// inTurn is the step s of slot's lane, run once the turn of after has passed (at once when
// after is slot), which passes slot's turn when it ends, however it ends, if its download did
// not pass it before.
func inTurn(s Step, slot, after imageSlot) Step {
	pull := s.Run
	s.Run = func(ctx context.Context, r *run, rep progress.Reporter) error {
		defer r.pulled[slot].Set()
		if after != slot {
			if err := r.pulled[after].Wait(ctx); err != nil {
				return err
			}
		}
		return pull(ctx, r, rep)
	}
	return s
}

// imageStep makes one pinned image present in the engine: used as it is when the engine holds
// it by digest (then it is not recorded, and `down` leaves it), otherwise recorded and pulled by
// digest, so the engine verifies the manifest against the pin.
func imageStep(p *Plan, slot imageSlot) Step {
	return Step{
		Name: "Pull the " + p.image(slot).Title + " image",
		Describe: func(p *Plan) Description {
			img := p.image(slot).Image
			if img.Digest == "" {
				return step.Describe(step.Image{Reference: img.String(), Where: "the " + engineName(p) + " engine",
					Note: "a tag (" + EnvK3sImage + "): resolved to a digest at its registry, then pulled by that digest, which the cluster runs; an image that was there is left alone by down"})
			}
			note := "pulled by digest unless the engine has it; an image that was there is left alone by down"
			if p.Bundle != "" {
				note = "loaded from the bundle unless the engine has it by digest (an engine on the containerd image store, or Podman, keeps it under that digest, as a pull does); an image that was there is left alone by down"
			}
			return step.Describe(step.Image{Reference: img.DigestReference(), Where: "the " + engineName(p) + " engine", Note: note})
		},
		Run: func(ctx context.Context, r *run, rep progress.Reporter) error {
			img, err := r.resolveTag(ctx, slot, rep)
			if err != nil {
				return err
			}
			// The next image's turn begins once this one's bytes are in, while the engine
			// still extracts them (pullInTurn).
			show, downloaded := pullProgress(rep), images.DownloadsDone(r.pulled[slot].Set)
			l, err := images.Present(ctx, images.PresentOptions{
				API: r.engine.API, Image: img, Recorder: r.state,
				Progress: func(ev images.Event) { show(ev); downloaded(ev) },
				Platform: r.enginePlatform, EngineName: r.engine.Name(),
				Archive: r.bundleArchive(slot), Offline: r.plan.Offline,
			})
			if err != nil {
				return err
			}
			r.local[slot] = l
			return nil
		},
	}
}

// resolveTag is the image of slot by digest. Only a node image selected by tag
// (EnvK3sImage) has none: its tag is resolved at its registry now, said, and the run's pins
// take the digest, so the cluster is created from exactly the image this pull fetched.
func (r *run) resolveTag(ctx context.Context, slot imageSlot, rep progress.Reporter) (pins.Image, error) {
	img := r.plan.image(slot).Image
	if img.Digest != "" {
		return img, nil
	}
	resolved, err := controlplane.ResolveTag(ctx, r.engine.API, img)
	if err != nil && !r.engine.Registration().ResolvesTags {
		// Podman's Docker-compatible API has no distribution endpoint to ask.
		return pins.Image{}, fmt.Errorf("%s %s is a tag, and %s's API resolves no tag to a digest (%v); give it by digest (%s@sha256:<digest>; `skopeo inspect docker://%s` prints the digest)",
			EnvK3sImage, img, r.engine.Name(), err, img, img)
	}
	if err != nil {
		return pins.Image{}, fmt.Errorf("%s %s: %w", EnvK3sImage, img, err)
	}
	rep.Note(img.String() + " is a tag (from " + EnvK3sImage + "): resolved to " + resolved.Digest + " at its registry; the cluster runs that digest")
	set := *r.plan.pins
	set.K3s.Image = resolved
	r.resolvedPins.Store(&set)
	return resolved, nil
}

// pullProgress puts a pull's events on the step's line (oce.PullProgress, which the control
// plane's pulls use too).
func pullProgress(rep progress.Reporter) func(images.Event) { return oce.PullProgress(rep) }

func describeRepoDigests(p *Plan) Description {
	return note("nothing created; requires each local image's RepoDigests to include its pinned digest (the engine holds that content under that name)")
}

// checkRepoDigests refuses a local image that was not pulled by its pinned digest (a re-tagged
// or locally built one), for the images k3d created the cluster with and the control plane's
// own; each OpenShell image is checked by its import (images.Import), before it enters the node.
func checkRepoDigests(_ context.Context, r *run, _ progress.Reporter) error {
	var errs []error
	for _, slot := range clusterImages(r.plan.pins) {
		if err := images.CheckRepoDigest(r.local[slot]); err != nil {
			errs = append(errs, err)
		}
	}
	for _, l := range r.profileImports() {
		if err := images.CheckRepoDigest(l); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// describeImportOf says what the import of one OpenShell image creates in the node.
func describeImportOf(slot imageSlot) func(p *Plan) Description {
	return func(p *Plan) Description {
		return step.Describe(step.Image{Reference: p.image(slot).Image.DigestReference(), Where: nodeContainerd,
			Note: "imported as soon as its pull is done and the node's containerd answers (for k3d, while the cluster is still starting): the engine's image save piped into ctr image import in the node, under a temporary staging tag removed afterwards"})
	}
}

// importStep loads one pulled OpenShell image into the node. It runs in the image's own lane,
// right after the pull, and waits there for the node of the cluster the lane beside it is
// creating, so each image travels into the node while the others still download and while k3s
// starts.
func importStep(p *Plan, slot imageSlot) Step {
	return Step{
		Name:     "Import the " + p.image(slot).Title + " image into the cluster",
		Describe: describeImportOf(slot),
		Run: func(ctx context.Context, r *run, rep progress.Reporter) error {
			importer, err := r.nodeImporter(ctx, rep)
			if err != nil {
				return err
			}
			imported, err := r.importImages(ctx, rep, importer, []images.Local{r.local[slot]})
			if err != nil {
				return err
			}
			r.product[slot] = productImage{node: importer.NodeContainer(), imported: imported}
			return nil
		},
	}
}

// verifyStep proves one imported image (an OpenShell or a routing controller's) is in the node as
// its pinned pull produced it and names it there for the chart or manifest that runs it, in the
// image's own lane right after its import: each image is verified while the others still
// travel and while k3s starts.
func verifyStep(p *Plan, slot imageSlot) Step {
	img := p.image(slot)
	user := "the chart"
	if img.Routing {
		user = "its manifest"
	}
	return Step{
		Name: "Verify the " + img.Title + " image in the node and tag it for " + user,
		Describe: func(p *Plan) Description {
			return step.Describe(verifiedItem(p.image(slot).Image))
		},
		Run: func(ctx context.Context, r *run, _ progress.Reporter) error {
			pi := &r.product[slot]
			verified, err := images.VerifyInNode(ctx, images.VerifyOptions{
				API: r.engine.API, Node: pi.node, Images: pi.imported, Recorder: r.state,
			})
			if err != nil {
				return err
			}
			pi.verified = verified
			r.inNode[slot].Set()
			return nil
		},
	}
}

// startedImagesFirst is the Gateway install s, run once each OpenShell image the chart's own
// objects start is verified in the node by its lane beside it. An image the chart only names for
// the Gateway to start later (in a Sandbox) is not waited for.
func startedImagesFirst(s Step) Step {
	return imagesFirst(s, "installed once the images the chart's own objects start (found by its render check) are verified in the node; the images it names for Sandboxes are verified beside the install, before the Installation is written",
		func(r *run) []imageSlot {
			var out []imageSlot
			for _, slot := range gatewayImages(r.plan.pins) {
				img := r.plan.image(slot).Image
				if slices.ContainsFunc(r.gatewayStarts, func(s pins.Image) bool { return s.Name() == img.Name() && s.Digest == img.Digest }) {
					out = append(out, slot)
				}
			}
			return out
		})
}

// imagesFirst is the step s, run once the images of the slots waitFor gives are verified in the
// node by their lanes beside it; note says so in the dry run.
func imagesFirst(s Step, note string, waitFor func(r *run) []imageSlot) Step {
	describe := s.Describe
	s.Describe = func(p *Plan) Description {
		d := describe(p)
		d.Note = note
		return d
	}
	next := s.Run
	s.Run = func(ctx context.Context, r *run, rep progress.Reporter) error {
		for _, slot := range waitFor(r) {
			if err := r.inNode[slot].Wait(ctx); err != nil {
				return err
			}
		}
		return next(ctx, r, rep)
	}
	return s
}

// verifiedItem is a verified image as a dry run describes it.
func verifiedItem(img pins.Image) step.Item {
	return step.Image{Reference: img.DigestReference(), Where: nodeContainerd,
		Note: "named there once the node holds the local image its pinned pull produced: its config digest on the classic image store, the pinned index or its platform manifest on the containerd store"}
}

func describeProfileImport(p *Plan) Description {
	what := "the control plane's own images (built or selected above)"
	if names := p.profile.ImportNames(); len(names) > 0 {
		what = "the images " + strings.Join(names, ", ")
	}
	return creates(what + " in the node's containerd, imported in one pass (the engine's image save piped into ctr image import in the node, under temporary staging tags removed afterwards)")
}

// importProfileImages loads the control plane's own images for the cluster in one pass.
func importProfileImages(ctx context.Context, r *run, rep progress.Reporter) error {
	importer, err := cluster.ImporterOf(ctx, r.provider, r.clusterRequest(rep), r.conn.Access)
	if err != nil {
		return err
	}
	imported, err := r.importImages(ctx, rep, importer, r.profileImports())
	if err != nil {
		return err
	}
	r.imported = imported
	return nil
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

// importImages loads local images into the node through importer.
func (r *run) importImages(ctx context.Context, rep progress.Reporter, importer images.Importer, local []images.Local) ([]images.Imported, error) {
	return images.Import(ctx, images.ImportOptions{
		API: r.engine.API, Importer: importer, Images: local, Recorder: r.state,
		Progress: images.ImportNotes(rep.Note),
	})
}

func describeVerify(p *Plan) Description {
	return creates("the control plane's own images named in the node for its Pods, each once the node holds the local image imported (by the identity the engine's image store keeps)")
}

// nodeContainerd is where the cluster's images are, as a dry run says it.
const nodeContainerd = "the node's containerd"

// verifyImages proves each of the control plane's imported images is in the node as it was
// imported (images.Local.Holds) and tags repo@sha256:<digest> there for its Pods.
func verifyImages(ctx context.Context, r *run, _ progress.Reporter) error {
	verified, err := images.VerifyInNode(ctx, images.VerifyOptions{
		API: r.engine.API, Node: r.conn.Access.NodeAddress, Images: r.imported, Recorder: r.state,
	})
	if err != nil {
		return err
	}
	r.verified = verified
	return nil
}

// profileImports are the control plane's own images for the cluster (the Agent runtime).
func (r *run) profileImports() []images.Local {
	if r.plan.profile.ImportNames() == nil {
		return nil
	}
	return r.plan.profile.Imports(r)
}
