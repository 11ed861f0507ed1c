package occdev

import (
	"errors"
	"fmt"

	"github.com/openclaw/occ/internal/occdev/controlplane"
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
