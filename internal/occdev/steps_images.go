package occdev

import (
	"context"
	"errors"
	"strings"

	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/profile/oce"
	"github.com/openclaw/occ/internal/occdev/step"
	"github.com/openclaw/occ/internal/progress"
)

// imageRole is one pinned image `up` uses, by the slot of run.local its step fills.
type imageRole int

// The pinned images of a k3d cluster: the node and tools images k3d needs to create it, and the
// three OpenShell images imported into it.
const (
	nodeImage imageRole = iota
	toolsImage
	gatewayImage
	sandboxImage
	supervisorImage
	imageRoles
)

// productImages are the images imported into the cluster and used by the Gateway chart.
var productImages = []imageRole{gatewayImage, sandboxImage, supervisorImage}

type roleInfo struct {
	role  string
	title string
	pin   func(*pins.Set) pins.Image
}

var roleInfos = [imageRoles]roleInfo{
	nodeImage:       {"k3sNode", "k3s node", func(s *pins.Set) pins.Image { return s.K3s.Image }},
	toolsImage:      {"k3dTools", "k3d tools", func(s *pins.Set) pins.Image { return s.K3d.ToolsImage }},
	gatewayImage:    {"gateway", "OpenShell Gateway", func(s *pins.Set) pins.Image { return s.OpenShell.Images.Gateway }},
	sandboxImage:    {"sandbox", "OpenShell Sandbox", func(s *pins.Set) pins.Image { return s.OpenShell.Images.Sandbox }},
	supervisorImage: {"supervisor", "OpenShell supervisor", func(s *pins.Set) pins.Image { return s.OpenShell.Images.Supervisor }},
}

// images lists the roles of the plan's images: all five for k3d, the three OpenShell images
// (pulled by the cluster itself) for an existing cluster.
func (p *Plan) images() []roleInfo {
	var out []roleInfo
	for i, ri := range roleInfos {
		if p.ClusterProvider == ProviderExisting && imageRole(i) < gatewayImage {
			continue
		}
		out = append(out, ri)
	}
	return out
}

// imageStep makes one pinned image present in the engine: used as it is when the engine holds
// it by digest (then it is not recorded, and `down` leaves it), otherwise recorded and pulled by
// digest, so the engine verifies the manifest against the pin.
func imageStep(role imageRole) Step {
	ri := roleInfos[role]
	return Step{
		Name: "Pull the " + ri.title + " image",
		Describe: func(p *Plan) Description {
			return step.Describe(step.Image{Reference: ri.pin(p.pins).DigestReference(), Where: "the " + engineName(p) + " engine",
				Note: "pulled by digest unless the engine has it; an image that was there is left alone by down"})
		},
		Run: func(ctx context.Context, r *run, rep progress.Reporter) error {
			l, err := images.Present(ctx, images.PresentOptions{
				API: r.engine.API, Image: ri.pin(r.plan.pins), Recorder: r.state, Progress: pullProgress(rep),
				Platform: r.enginePlatform, EngineName: r.engine.Name(),
			})
			if err != nil {
				return err
			}
			r.local[role] = l
			return nil
		},
	}
}

// pullProgress puts a pull's events on the step's line (oce.PullProgress, which the control
// plane's pulls use too).
func pullProgress(rep progress.Reporter) func(images.Event) { return oce.PullProgress(rep) }

func describeRepoDigests(p *Plan) Description {
	return note("nothing created; requires each local image's RepoDigests (set only by a pull) to include its pinned digest")
}

// checkRepoDigests refuses a local image that was not pulled by its pinned digest (a re-tagged
// or locally built one), for every image the cluster will run.
func checkRepoDigests(_ context.Context, r *run, _ progress.Reporter) error {
	var errs []error
	for role := range imageRoles {
		if err := images.CheckRepoDigest(r.local[role]); err != nil {
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
func describeImportOf(role imageRole) func(p *Plan) Description {
	return func(p *Plan) Description {
		return step.Describe(step.Image{Reference: roleInfos[role].pin(p.pins).DigestReference(), Where: nodeContainerd,
			Note: "imported as soon as its pull is done and the node's containerd answers (for k3d, while the cluster is still starting): the engine's image save piped into ctr image import in the node, under a temporary staging tag removed afterwards"})
	}
}

// importStep loads one pulled OpenShell image into the node. It runs in the image's own lane,
// right after the pull, and waits there for the node of the cluster the lane beside it is
// creating, so each image travels into the node while the others still download and while k3s
// starts.
func importStep(role imageRole) Step {
	ri := roleInfos[role]
	return Step{
		Name:     "Import the " + ri.title + " image into the cluster",
		Describe: describeImportOf(role),
		Run: func(ctx context.Context, r *run, rep progress.Reporter) error {
			importer, err := r.nodeImporter(ctx, rep)
			if err != nil {
				return err
			}
			imported, err := r.importImages(ctx, rep, importer, []images.Local{r.local[role]})
			if err != nil {
				return err
			}
			r.importedProduct[role] = imported
			return nil
		},
	}
}

func describeProfileImport(p *Plan) Description {
	what := "the control plane's own images (built or selected above)"
	if names := p.profile.importNames; names != nil {
		what = "the images " + strings.Join(names(p), ", ")
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
		Progress: func(ev images.Event) {
			if ev.Status != "importing" && ev.Status != "imported" {
				rep.Note(ev.Image + ": " + ev.Status)
			}
		},
	})
}

func describeVerify(p *Plan) Description {
	var imgs []step.Item
	for _, role := range productImages {
		imgs = append(imgs, step.Image{Reference: roleInfos[role].pin(p.pins).DigestReference(), Where: nodeContainerd,
			Note: "named there once its config digest in the node equals the local image ID its pinned pull produced"})
	}
	return step.Describe(imgs...)
}

// nodeContainerd is where the cluster's images are, as a dry run says it.
const nodeContainerd = "the node's containerd"

// verifyImages proves each imported image is in the node as pulled (config digest == local
// image ID) and tags repo@sha256:<pinned> there for the chart (pullPolicy Never).
func verifyImages(ctx context.Context, r *run, _ progress.Reporter) error {
	var all []images.Imported
	for _, role := range productImages {
		all = append(all, r.importedProduct[role]...)
	}
	verified, err := images.VerifyInNode(ctx, images.VerifyOptions{
		API: r.engine.API, Node: r.conn.Access.NodeAddress, Images: append(all, r.imported...), Recorder: r.state,
	})
	if err != nil {
		return err
	}
	r.verified = verified
	return nil
}

// profileImports are the control plane's own images for the cluster (the Agent runtime).
func (r *run) profileImports() []images.Local {
	if r.plan.profile.imports == nil {
		return nil
	}
	return r.plan.profile.imports(r)
}
