// Package oce holds what every OCE control-plane profile shares, whichever way it runs OCE:
// finding the checkout, the plan of its image builds and their bases, the builds themselves and
// their record, the selected images, the verified bootstrap key, the bootstrap Namespace wait
// and the rollback of a key a failed run wrote. A profile supplies only what differs (how the
// key is read out, where the API answers).
package oce

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/openclaw/occ/internal/occdev/cluster/k3d"
	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/profile"
)

// Options are the inputs of the OCE control plane (layer 3), as every profile reads them from
// its Input (profile.OCEOptions).
type Options = profile.OCEOptions

// Plan is what every profile decides alike about the control plane before anything runs: the
// checkout, the image builds and their bases or the selected images, and where the key goes. A
// profile's own plan adds what only it runs (the Compose project, the Kubernetes chart's
// values).
type Plan struct {
	// Checkout is the OCE checkout's root, Commit its HEAD and CheckoutSource how it was found.
	Checkout       string `json:"checkout"`
	Commit         string `json:"commit"`
	CheckoutSource string `json:"checkoutSource"`
	// BuildPlans are every image build occ makes from the checkout (the Compose services',
	// the controller's, the Agent runtime's), each with the bases its Dockerfile fetches;
	// BaseImages are those bases, each once, as `up` pulls them by digest before any build.
	BuildPlans []*controlplane.PlannedBuild `json:"buildPlans,omitempty"`
	BaseImages []controlplane.BaseImage     `json:"baseImages,omitempty"`
	// RuntimeImage is the Agent runtime: its build tag, or the selected digest reference.
	RuntimeImage string `json:"runtimeImage"`
	// SelectedImages are the developer's prebuilt images, when selected.
	SelectedImages *controlplane.ImageSelection `json:"selectedImages,omitempty"`
	// KeyFile is where the verified bootstrap key will be written.
	KeyFile string `json:"keyFile"`

	// KeyDest is where the verified key goes, and whether occ owns the file.
	KeyDest controlplane.KeyDestination `json:"-"`
}

// The roles of the images occ builds from the checkout, in the plan and the state.
const (
	RoleController = "controller"
	RoleRuntime    = "runtime"
)

// FindOnK3d is Find for a control plane that needs the k3d cluster occ creates: with another
// cluster provider it is pending, with needs (why it needs that cluster) and the fix.
func FindOnK3d(in profile.Input, o Options, needs string) (co controlplane.Checkout, pending string, err error) {
	co, pending, err = Find(in, o)
	if err != nil || pending != "" {
		return co, pending, err
	}
	if in.ClusterProvider != k3d.Name {
		verb := "not started"
		if in.DryRun {
			verb = "would not start"
		}
		return co, fmt.Sprintf("%s: %s, and --cluster-provider %s creates none; use --cluster-provider k3d to run OCE from %s", verb, needs, in.ClusterProvider, co.Root), nil
	}
	return co, "", nil
}

// Find finds the OCE checkout every control-plane profile runs from. Without one, pending says
// so and how to add the control plane (only the sandbox platform comes up), unless an option
// that only the control plane uses was given, which is an error. A directory named explicitly
// that is not a checkout is an error before anything runs.
func Find(in profile.Input, o Options) (co controlplane.Checkout, pending string, err error) {
	co, err = controlplane.FindCheckout(controlplane.FindCheckoutOptions{Flag: o.Repository, WorkingDir: o.WorkingDir})
	if errors.Is(err, controlplane.ErrNoCheckout) {
		if len(o.ComposeArgs) > 0 || o.KeyOutput != "" {
			return co, "", &option.Error{Option: "the OCE checkout", Value: "none found", Rule: err.Error(),
				Fix: "Compose options and --key-output need the control plane; run from an OCE checkout or pass --repository"}
		}
		if in.DryRun {
			// Nothing is up after a dry run, so there is nothing to take down first.
			return co, fmt.Sprintf("would not start: %v. Without a checkout occ dev up would bring up only the sandbox platform; to include the OCE control plane, run it from an OpenClaw Enterprise checkout, or with %s <checkout> (or %s set)",
				err, controlplane.FlagRepository, controlplane.EnvRepository), nil
		}
		return co, fmt.Sprintf("not started: %v. Only the sandbox platform is up. To add the OCE control plane, remove this environment (occ dev down --state-dir %s) and run occ dev up again from an OpenClaw Enterprise checkout, or with %s <checkout> (or %s set)",
			err, in.StateDir, controlplane.FlagRepository, controlplane.EnvRepository), nil
	}
	var nce *controlplane.NotCheckoutError
	if errors.As(err, &nce) {
		return co, "", &option.Error{Option: nce.Option, Value: nce.Value, Rule: "is not an OpenClaw Enterprise checkout: " + nce.Reason(), Fix: "pass the root of an OCE clone"}
	}
	return co, "", err
}

// NewPlan is what every profile decides alike about the control plane before anything runs:
// the checkout and its commit, the selected controller and Agent runtime images (both or
// neither, each by digest) and where the verified key goes.
func NewPlan(in profile.Input, o Options, co controlplane.Checkout) (*Plan, error) {
	if err := o.Images.Validate(); err != nil {
		return nil, &option.Error{Option: controlplane.EnvControllerImage + " and " + controlplane.EnvRuntimeImage,
			Value: o.Images.Controller + " / " + o.Images.Runtime, Rule: err.Error(), Fix: "select both by digest, or neither to build them from the checkout"}
	}
	keyDest, err := controlplane.ResolveKeyDestination(o.KeyOutput, in.StateDir)
	if err != nil {
		var ke *controlplane.KeyOutputError
		if errors.As(err, &ke) {
			return nil, &option.Error{Option: controlplane.FlagKeyOutput, Value: ke.Value, Rule: ke.Rule, Fix: ke.Fix}
		}
		return nil, err
	}
	op := &Plan{Checkout: co.Root, Commit: co.Commit, CheckoutSource: co.Source, KeyFile: keyDest.Path, KeyDest: keyDest, RuntimeImage: controlplane.DefaultRuntimeTag}
	if o.Images.Selected() {
		sel := o.Images
		op.SelectedImages = &sel
		op.RuntimeImage = sel.Runtime
	}
	return op, nil
}

// baseOverrides are the settings that replace a base-image build argument in every image occ
// builds from the checkout, by argument name, each checked to be a digest reference (an
// override is the developer's own pin: a tag there would be resolved anew on every run), and
// the setting that names each.
func baseOverrides(o Options) (map[string]string, map[string]string, error) {
	values := map[string]string{controlplane.NodeBaseImageArg: o.NodeBaseImage, controlplane.NodeRuntimeBaseImageArg: o.NodeRuntimeBaseImage}
	out, source := map[string]string{}, map[string]string{}
	for _, s := range controlplane.BaseOverrideSettings {
		v := values[s.Arg]
		if v == "" {
			continue
		}
		img, err := pins.ParseImage(v)
		if err == nil && img.Digest == "" {
			err = errors.New("it names no @sha256 digest")
		}
		if err != nil {
			return nil, nil, &option.Error{Option: s.Env, Value: v, Rule: "must be a Node 24 image by digest (<repository>@sha256:<64 hex>): " + err.Error(),
				Fix: "pin it by digest, or unset it to use the checkout's own base for " + s.Arg}
		}
		out[s.Arg], source[s.Arg] = v, s.Env
	}
	return out, source, nil
}

// PlanBuilds parses the Dockerfiles of the images the profile builds and decides every base
// image they fetch, before anything runs: a Dockerfile the parser refuses, a `# syntax=`
// directive, an empty base or a tag written into a FROM line stops `up` and the dry run here.
func (op *Plan) PlanBuilds(o Options, reqs []controlplane.BuildPlanRequest) error {
	overrides, sources, err := baseOverrides(o)
	if err != nil {
		return err
	}
	var files []*controlplane.Dockerfile
	for _, req := range reqs {
		req.Overrides, req.OverrideSource = overrides, sources
		pb, err := controlplane.PlanBuild(req)
		if err != nil {
			return fmt.Errorf("plan the %s image build: %w", req.Role, err)
		}
		op.BuildPlans = append(op.BuildPlans, pb)
		files = append(files, pb.File)
	}
	if err := controlplane.CheckSyntax(files); err != nil {
		return err
	}
	op.BaseImages, err = controlplane.CollectBases(op.BuildPlans)
	return err
}

// PrintBaseImages lists, for the dry run's table, every base image the builds fetch, with where
// each comes from and is used.
func (op *Plan) PrintBaseImages(w io.Writer) {
	for i, b := range op.BaseImages {
		label := "  base images:"
		if i > 0 {
			label = ""
		}
		fmt.Fprintf(w, "%-16s %s\n", label, b.Describe())
	}
}

// Dockerfiles are the parsed Dockerfiles of the planned builds, each once.
func (op *Plan) Dockerfiles() []*controlplane.Dockerfile {
	var out []*controlplane.Dockerfile
	seen := map[string]bool{}
	for _, b := range op.BuildPlans {
		if !seen[b.Dockerfile] {
			seen[b.Dockerfile] = true
			out = append(out, b.File)
		}
	}
	return out
}

// PlannedBuild is the planned build of role.
func (op *Plan) PlannedBuild(role string) *controlplane.PlannedBuild {
	for _, b := range op.BuildPlans {
		if b.Role == role {
			return b
		}
	}
	return nil
}

// CheckBuilder refuses, in the preflight (before the state exists), an engine whose builder
// cannot read the checkout's Dockerfiles; with selected images nothing is built and any engine
// does.
func CheckBuilder(op *Plan, engine *docker.Engine) error {
	if op == nil || len(op.BuildPlans) == 0 || engine == nil {
		return nil
	}
	return controlplane.CheckBuilder(engine.Identity, op.Dockerfiles())
}

// builds is a profile's plan document that builds images: the Dockerfiles its builds read.
type builds interface {
	Dockerfiles() []*controlplane.Dockerfile
}

// CheckPlannedBuilder is the preflight's builder check for a dry run, from a profile's plan
// document: when doc builds images, the engine at ep (source named it, kind is what it said it
// is) is asked its version (GET /version, which changes nothing) and its builder checked against
// the Dockerfiles.
func CheckPlannedBuilder(doc profile.Document, ep docker.Endpoint, source string, kind engine.Kind) error {
	b, ok := doc.(builds)
	if !ok || len(b.Dockerfiles()) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	eng, err := docker.ConnectAs(ctx, ep, source, kind)
	if err != nil {
		return err
	}
	defer eng.Close()
	// The builder is judged by the kind the engine said it is when it was located (kind).
	id := eng.Identity
	id.Kind = kind
	return controlplane.CheckBuilder(id, b.Dockerfiles())
}

// DigestImage resolves an image a profile pulls by digest: the override (named by env) or the
// pin, through the control-plane layer's rule for it.
func DigestImage(env, override string, pinned pins.Image, rule func(string, pins.Image) (string, error)) (pins.Image, error) {
	ref, err := rule(override, pinned)
	if err != nil {
		return pins.Image{}, &option.Error{Option: env, Value: override, Rule: "is refused: " + err.Error()}
	}
	img, err := pins.ParseImage(ref)
	if err != nil {
		return pins.Image{}, &option.Error{Option: env, Value: override, Rule: "is not an image reference: " + err.Error()}
	}
	return img, nil
}

// ShortCommit is a commit as summaries print it.
func ShortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
