package controlplane

import (
	"context"
	"fmt"
	"strings"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/pins"
)

// The build arguments the OCE Dockerfiles take their Node bases from, and the settings that
// replace them. NODE_BASE_IMAGE is the full Node 24 image (the root Dockerfile gives it no
// default: occ passes its pin there, as the reference does), NODE_RUNTIME_BASE_IMAGE the slim
// one of the final runtime stages (both Dockerfiles pin a default by digest).
const (
	NodeRuntimeBaseImageArg = "NODE_RUNTIME_BASE_IMAGE"
	EnvNodeRuntimeBaseImage = "OCC_DEVELOPMENT_NODE_RUNTIME_BASE_IMAGE"
)

// BaseOverrideSettings are the base-image build arguments a setting replaces, each in every
// image occ builds from the checkout (the controller, the Agent runtime and the Compose
// services' image): one Node base per environment is what a registry mirror or an engine
// without Docker Hub needs. The reference applies OCC_DEVELOPMENT_NODE_BASE_IMAGE to the
// controller build only and has no setting for the runtime bases.
var BaseOverrideSettings = []struct{ Arg, Env string }{
	{NodeBaseImageArg, EnvNodeBaseImage},
	{NodeRuntimeBaseImageArg, EnvNodeRuntimeBaseImage},
}

// BuildArg is the value a profile passes for one build argument, and where it came from
// ("the pin oce.nodeBaseImage", "the Compose build argument").
type BuildArg struct {
	Value  string
	Source string
}

// BuildPlanRequest is one image occ will build from the checkout.
type BuildPlanRequest struct {
	// Role names the image ("controller", "runtime", the Compose build's tag).
	Role string
	// ContextDir is the build context (the checkout); Dockerfile its slash path inside it.
	ContextDir string
	Dockerfile string
	// Target is the stage built; empty is the last.
	Target string
	// Args are the build arguments the profile passes.
	Args map[string]BuildArg
	// Overrides replace build arguments by name (BaseOverrideSettings), whatever Args say;
	// OverrideSource names the setting of each.
	Overrides      map[string]string
	OverrideSource map[string]string
}

// PlannedBuild is an image occ builds, with the arguments it passes and every image its build
// fetches.
type PlannedBuild struct {
	Role       string            `json:"role"`
	Dockerfile string            `json:"dockerfile"`
	Target     string            `json:"target,omitempty"`
	Args       map[string]string `json:"args,omitempty"`
	Bases      []BaseUse         `json:"bases"`
	// File is the parsed Dockerfile, for the builder check.
	File *Dockerfile `json:"-"`

	sources map[string]string
}

// PlanBuild parses the build's Dockerfile and lists its bases. Everything is decided from local
// files; nothing is contacted.
func PlanBuild(req BuildPlanRequest) (*PlannedBuild, error) {
	df, err := ParseDockerfile(req.ContextDir, req.Dockerfile)
	if err != nil {
		return nil, err
	}
	pb := &PlannedBuild{Role: req.Role, Dockerfile: req.Dockerfile, Target: req.Target, File: df, Args: map[string]string{}, sources: map[string]string{}}
	for k, v := range req.Args {
		pb.Args[k], pb.sources[k] = v.Value, v.Source
	}
	for k, v := range req.Overrides {
		if v == "" {
			continue
		}
		if _, declared := df.Arg(k); !declared {
			continue
		}
		pb.Args[k], pb.sources[k] = v, req.OverrideSource[k]
	}
	if pb.Bases, err = df.Bases(req.Target, pb.Args); err != nil {
		return nil, err
	}
	return pb, nil
}

// source says where the image of use comes from.
func (b *PlannedBuild) source(use BaseUse) string {
	if use.Arg == "" {
		return "written in " + use.Dockerfile
	}
	if s, ok := b.sources[use.Arg]; ok {
		return s
	}
	if a, ok := b.File.Arg(use.Arg); ok && a.HasDefault {
		return fmt.Sprintf("the default of ARG %s (%s:%d)", use.Arg, use.Dockerfile, a.Line)
	}
	return "build argument " + use.Arg
}

// BaseImage is one image the builds fetch: where its reference came from, every place it is
// used, and how occ makes it present. The dry run lists them; `up` pulls each by digest before
// any build and records it.
type BaseImage struct {
	// Image is the reference as given (tag, digest or both).
	Image string `json:"image"`
	// Source says where that value came from (a setting, a pin, a Dockerfile default).
	Source string `json:"source"`
	// Uses are the places it is used.
	Uses []BaseUse `json:"uses"`
	// Tag is true when the reference has no digest: it is resolved to one at its registry
	// before the pull, and the builds use that digest.
	Tag bool `json:"tag,omitempty"`

	pin pins.Image
}

// Pin is the parsed reference.
func (b BaseImage) Pin() pins.Image { return b.pin }

// Describe is one line for the dry run and the summary.
func (b BaseImage) Describe() string {
	return fmt.Sprintf("%s (%s; from %s) for %s", b.Image, b.How(), b.Source, b.UsedIn())
}

// How says how the base is pulled: by its digest, or as a tag resolved to one first.
func (b BaseImage) How() string {
	if b.Tag {
		return "a tag: resolved to a digest at its registry, then pulled by that digest, which the builds use"
	}
	return "pulled by digest"
}

// UsedIn lists the places the base is used.
func (b BaseImage) UsedIn() string {
	where := make([]string, 0, len(b.Uses))
	for _, u := range b.Uses {
		where = append(where, u.String())
	}
	return strings.Join(where, ", ")
}

// CollectBases merges the bases of builds into one list (an image used by several stages or
// builds once), in order of first use, and applies the rules occ holds every base to: an image
// reference it can parse, and a digest unless the value comes through a build argument (occ
// can then replace the tag by the digest it resolved; a tag written into a FROM line it cannot).
func CollectBases(builds []*PlannedBuild) ([]BaseImage, error) {
	var out []BaseImage
	index := map[string]int{}
	var errs []string
	for _, b := range builds {
		for _, use := range b.Bases {
			if i, ok := index[use.Image]; ok {
				out[i].Uses = append(out[i].Uses, use)
				continue
			}
			src := b.source(use)
			pin, err := pins.ParseImage(use.Image)
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s: %v (from %s); %s", use, err, src, baseFix(use)))
				continue
			}
			if pin.Digest == "" && use.Arg == "" {
				errs = append(errs, fmt.Sprintf("%s names %s by tag in the Dockerfile itself: occ pins every base by digest and can replace a tag only when the FROM is one build argument; write it as %s@sha256:<digest>, or select both images by digest with %s and %s",
					use, use.Image, pin.Name(), EnvControllerImage, EnvRuntimeImage))
				continue
			}
			index[use.Image] = len(out)
			out = append(out, BaseImage{Image: use.Image, Source: src, Uses: []BaseUse{use}, Tag: pin.Digest == "", pin: pin})
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("the base images of the checkout's Dockerfiles cannot be pinned:\n  - %s", strings.Join(errs, "\n  - "))
	}
	return out, nil
}

func baseFix(use BaseUse) string {
	for _, s := range BaseOverrideSettings {
		if s.Arg == use.Arg {
			return "set " + s.Env + " to <repository>@sha256:<digest>"
		}
	}
	if use.Arg != "" {
		return "give the build argument " + use.Arg + " an image reference"
	}
	return "fix the reference in " + use.Dockerfile
}

// ResolvedBase is a base image made present in the engine: the digest reference the builds use
// and the engine's image ID.
type ResolvedBase struct {
	BaseImage
	// Reference is the digest reference pulled (the tag kept for reading).
	Reference pins.Image
}

// WithResolved returns the build arguments of b with every base that came through a build
// argument replaced by the digest reference it was resolved and pulled as, so the build uses
// exactly the recorded image (a tag could name other content by build time).
func (b *PlannedBuild) WithResolved(resolved []ResolvedBase) map[string]string {
	args := make(map[string]string, len(b.Args))
	for k, v := range b.Args {
		args[k] = v
	}
	for _, use := range b.Bases {
		if use.Arg == "" {
			continue
		}
		for _, r := range resolved {
			if r.Image == use.Image {
				args[use.Arg] = r.Reference.String()
			}
		}
	}
	if len(args) == 0 {
		return nil
	}
	return args
}

// TagResolver asks the engine what a registry serves for a tagged reference (engine.Engine has
// it).
type TagResolver interface {
	ResolveTag(ctx context.Context, ref string) (string, error)
}

// ResolveTag asks the registry, through the engine, which digest img's tag names now, and
// returns img with that digest. The digest is that of the tag's manifest (for a multi-platform
// image, its index), so a pull by it yields the engine's platform as a pull of the tag would.
func ResolveTag(ctx context.Context, engine TagResolver, img pins.Image) (pins.Image, error) {
	if img.Digest != "" {
		return img, nil
	}
	ref := img.String()
	if img.Tag == "" {
		ref += ":latest"
		img.Tag = "latest"
	}
	digest, err := engine.ResolveTag(ctx, ref)
	if err != nil {
		return pins.Image{}, fmt.Errorf("resolve the tag %s to a digest at its registry: %w; make the registry reachable, or give the image by digest (%s@sha256:<digest>)", ref, err, ref)
	}
	out := img
	out.Digest = digest
	if _, err := pins.ParseImage(out.String()); err != nil {
		return pins.Image{}, fmt.Errorf("resolve the tag %s: the registry answered digest %q: %w", ref, digest, err)
	}
	return out, nil
}

// ResolveSelected is ResolveTag for the image img a setting selects by tag (the k3s node image
// of OCC_DEVELOPMENT_K3S_IMAGE, whose name setting is): its errors name the setting, an engine
// of a kind whose API resolves no tag (Podman's Docker-compatible API has no distribution
// endpoint to ask) is refused with how to give the digest instead, and note is told the digest
// the tag resolved to.
func ResolveSelected(ctx context.Context, eng TagResolver, kind engine.Kind, img pins.Image, setting string, note func(string)) (pins.Image, error) {
	resolved, err := ResolveTag(ctx, eng, img)
	if err != nil && !kind.Registration().ResolvesTags {
		return pins.Image{}, fmt.Errorf("%s %s is a tag, and %s's API resolves no tag to a digest (%v); give it by digest (%s@sha256:<digest>; `skopeo inspect docker://%s` prints the digest)",
			setting, img, kind.Name(), err, img, img)
	}
	if err != nil {
		return pins.Image{}, fmt.Errorf("%s %s: %w", setting, img, err)
	}
	note(img.String() + " is a tag (from " + setting + "): resolved to " + resolved.Digest + " at its registry; the cluster runs that digest")
	return resolved, nil
}
