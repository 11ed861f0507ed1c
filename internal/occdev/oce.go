package occdev

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/engine/locate"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/progress"
)

// findOCEOnK3d is findOCE for a control plane that needs the k3d cluster occ creates: with
// another cluster provider it is pending, with needs (why it needs that cluster) and the fix.
func findOCEOnK3d(p *Plan, o UpOptions, needs string) (co controlplane.Checkout, pending string, err error) {
	co, pending, err = findOCE(p, o)
	if err != nil || pending != "" {
		return co, pending, err
	}
	if p.ClusterProvider != ProviderK3d {
		verb := "not started"
		if o.DryRun {
			verb = "would not start"
		}
		return co, fmt.Sprintf("%s: %s, and --cluster-provider %s creates none; use --cluster-provider k3d to run OCE from %s", verb, needs, p.ClusterProvider, co.Root), nil
	}
	return co, "", nil
}

// findOCE finds the OCE checkout both control-plane profiles run from. Without one, pending
// says so and how to add the control plane (only the sandbox platform comes up), unless an
// option that only the control plane uses was given, which is an error. A directory named
// explicitly that is not a checkout is an error before anything runs.
func findOCE(p *Plan, o UpOptions) (co controlplane.Checkout, pending string, err error) {
	co, err = controlplane.FindCheckout(controlplane.FindCheckoutOptions{Flag: o.OCE.Repository, WorkingDir: o.OCE.WorkingDir})
	if errors.Is(err, controlplane.ErrNoCheckout) {
		if len(o.OCE.ComposeArgs) > 0 || o.OCE.KeyOutput != "" {
			return co, "", &OptionError{Option: "the OCE checkout", Value: "none found", Rule: err.Error(),
				Fix: "Compose options and --key-output need the control plane; run from an OCE checkout or pass --repository"}
		}
		if o.DryRun {
			// Nothing is up after a dry run, so there is nothing to take down first.
			return co, fmt.Sprintf("would not start: %v. Without a checkout occ dev up would bring up only the sandbox platform; to include the OCE control plane, run it from an OpenClaw Enterprise checkout, or with %s <checkout> (or %s set)",
				err, controlplane.FlagRepository, controlplane.EnvRepository), nil
		}
		return co, fmt.Sprintf("not started: %v. Only the sandbox platform is up. To add the OCE control plane, remove this environment (occ dev down --state-dir %s) and run occ dev up again from an OpenClaw Enterprise checkout, or with %s <checkout> (or %s set)",
			err, p.StateDir, controlplane.FlagRepository, controlplane.EnvRepository), nil
	}
	var nce *controlplane.NotCheckoutError
	if errors.As(err, &nce) {
		return co, "", &OptionError{Option: nce.Option, Value: nce.Value, Rule: "is not an OpenClaw Enterprise checkout (" + err.Error() + ")", Fix: "pass the root of an OCE clone"}
	}
	return co, "", err
}

// newOCEPlan is what both profiles decide alike about the control plane before anything runs:
// the checkout and its commit, the selected controller and Agent runtime images (both or
// neither, each by digest) and where the verified key goes.
func newOCEPlan(p *Plan, o UpOptions, co controlplane.Checkout) (*OCEPlan, error) {
	if err := o.OCE.Images.Validate(); err != nil {
		return nil, &OptionError{Option: controlplane.EnvControllerImage + " and " + controlplane.EnvRuntimeImage,
			Value: o.OCE.Images.Controller + " / " + o.OCE.Images.Runtime, Rule: err.Error(), Fix: "select both by digest, or neither to build them from the checkout"}
	}
	keyDest, err := controlplane.ResolveKeyDestination(o.OCE.KeyOutput, p.StateDir)
	if err != nil {
		var ke *controlplane.KeyOutputError
		if errors.As(err, &ke) {
			return nil, &OptionError{Option: controlplane.FlagKeyOutput, Value: ke.Value, Rule: ke.Rule, Fix: ke.Fix}
		}
		return nil, err
	}
	op := &OCEPlan{Checkout: co.Root, Commit: co.Commit, CheckoutSource: co.Source, KeyFile: keyDest.Path, keyDest: keyDest, RuntimeImage: controlplane.DefaultRuntimeTag}
	if o.OCE.Images.Selected() {
		sel := o.OCE.Images
		op.SelectedImages = &sel
		op.RuntimeImage = sel.Runtime
	}
	return op, nil
}

// baseOverrides are the settings that replace a base-image build argument in every image occ
// builds from the checkout, by argument name, each checked to be a digest reference (an
// override is the developer's own pin: a tag there would be resolved anew on every run), and
// the setting that names each.
func baseOverrides(o OCEOptions) (map[string]string, map[string]string, error) {
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
			return nil, nil, &OptionError{Option: s.Env, Value: v, Rule: "must be a Node 24 image by digest (<repository>@sha256:<64 hex>): " + err.Error(),
				Fix: "pin it by digest, or unset it to use the checkout's own base for " + s.Arg}
		}
		out[s.Arg], source[s.Arg] = v, s.Env
	}
	return out, source, nil
}

// planBuilds parses the Dockerfiles of the images the profile builds and decides every base
// image they fetch, before anything runs: a Dockerfile the parser refuses, a `# syntax=`
// directive, an empty base or a tag written into a FROM line stops `up` and the dry run here.
func planBuilds(op *OCEPlan, o UpOptions, reqs []controlplane.BuildPlanRequest) error {
	overrides, sources, err := baseOverrides(o.OCE)
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

// dockerfiles are the parsed Dockerfiles of the planned builds, each once.
func (op *OCEPlan) dockerfiles() []*controlplane.Dockerfile {
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

// checkBuilder refuses, in the preflight (before the state exists), an engine whose builder
// cannot read the checkout's Dockerfiles; with selected images nothing is built and any engine
// does.
func checkBuilder(r *run) error {
	op := r.plan.OCE
	if op == nil || len(op.BuildPlans) == 0 || r.engine == nil {
		return nil
	}
	return controlplane.CheckBuilder(controlplane.EngineBuilder{Version: r.engine.Version, APIVersion: r.engine.APIVersion, Podman: r.plan.EngineKind == string(locate.Podman)}, op.dockerfiles())
}

func describeBasePulls(p *Plan) Description {
	var items []string
	for _, b := range p.OCE.BaseImages {
		items = append(items, "image "+b.Describe())
	}
	return Description{Creates: items, Note: "each pulled by digest unless the engine has it by that digest (an image that was there is left alone by down); a base occ did not pull is never removed"}
}

// pullBases makes every base image of the planned builds present in the engine by digest,
// resolving a base given as a tag to the digest its registry serves now, and records each (the
// images it pulled as objects `down` removes, all of them in the control plane's record), so
// the builds fetch nothing by themselves.
func pullBases(ctx context.Context, r *run, rep progress.Reporter) error {
	op := r.plan.OCE
	r.bases = nil
	var recs []state.BaseImage
	for _, b := range op.BaseImages {
		pin := b.Pin()
		if b.Tag {
			resolved, err := controlplane.ResolveTag(ctx, r.engine.API, pin)
			if err != nil {
				return fmt.Errorf("base image %s: %w", b.Image, err)
			}
			rep.Note(fmt.Sprintf("%s is a tag (from %s): resolved to %s at its registry; the builds use that digest", b.Image, b.Source, resolved.Digest))
			pin = resolved
		}
		l, err := images.Present(ctx, images.PresentOptions{API: r.engine.API, EngineName: r.engine.Name(), Image: pin, Recorder: r.state, Progress: pullProgress(rep)})
		if err != nil {
			return fmt.Errorf("base image %s (%s): %w", b.Image, b.Uses[0], err)
		}
		r.bases = append(r.bases, controlplane.ResolvedBase{BaseImage: b, Reference: pin})
		rec := state.BaseImage{Given: b.Image, Reference: pin.String(), ID: l.ID, Resolved: b.Tag, Source: b.Source}
		for _, u := range b.Uses {
			rec.Uses = append(rec.Uses, u.String())
		}
		recs = append(recs, rec)
	}
	return r.state.Update(func(s *state.State) { s.ControlPlane.BaseImages = recs })
}

// plannedBuild is the planned build of role.
func (op *OCEPlan) plannedBuild(role string) *controlplane.PlannedBuild {
	for _, b := range op.BuildPlans {
		if b.Role == role {
			return b
		}
	}
	return nil
}

// baseSummary describes the recorded base images for the summary.
func baseSummary(r *run) []string {
	var out []string
	for _, b := range r.bases {
		line := b.Reference.String()
		if b.Tag {
			line += " (resolved from the tag " + b.Image + ")"
		}
		var where []string
		for _, u := range b.Uses {
			where = append(where, u.String())
		}
		out = append(out, line+" for "+strings.Join(where, ", "))
	}
	return out
}
