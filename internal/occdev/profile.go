package occdev

import (
	"context"
	"strings"

	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/progress"
)

// profile is what a control plane (layer 3) adds to the flow. The cluster lane and the platform
// steps are the same for every profile; a profile adds its own steps around them and what its
// cluster needs, each profile in its own file (steps_compose.go, steps_kubernetes.go), so adding
// one never reshapes upSteps. Every field is optional.
type profile struct {
	// preflight makes the profile's live checks at the end of the preflight, before the state is
	// claimed (the Compose project's resources absent, its plugin found, selected images
	// present).
	preflight func(ctx context.Context, r *run, rep progress.Reporter) error
	// cluster is what the control plane needs of the cluster: the Compose profile joins its
	// <project>_development network, the Kubernetes-only profile publishes its API proxy's
	// NodePort on 127.0.0.1. A provider that cannot give it refuses it.
	cluster cluster.Needs
	// beforeCluster are steps that must finish before the cluster exists (the Compose profile's
	// network and data services); they run first in the cluster lane.
	beforeCluster []Step
	// imports are local images of the control plane imported into the cluster in the same pass
	// as the OpenShell images (the Agent runtime), once the cluster lane's steps before the
	// import have run.
	imports func(r *run) []images.Local
	// importNames names those images for the dry run (before they are built or selected).
	importNames func(p *Plan) []string
	// installation adds the control plane's part of the Installation (the Agent runtime's
	// in-cluster reference, the node) before it is written.
	installation func(ctx context.Context, r *run, in *platform.InstallationInput) error
	// controlPlane are the control plane's own steps, after the platform is installed.
	controlPlane []Step
	// rollback undoes what a failed `up` made outside the state's records (a user's
	// --key-output file); it runs with the rollback of the records.
	rollback func(r *run) error
	// summary is the control plane's part of the summary of a successful `up`.
	summary func(r *run) *OCESummary
	// pending says what of this control plane occ does not start (no checkout was found, or
	// the profile is not wired yet); the summary and the dry run say it plainly.
	pending string
}

// profileOf returns the profile of the plan's control plane; a bad control-plane setting (a
// checkout that is not one, a refused Compose model) is an error before anything runs.
func profileOf(p *Plan, o UpOptions) (profile, error) {
	if p.ControlPlane == ControlPlaneKubernetes {
		if len(o.OCE.ComposeArgs) > 0 {
			return profile{}, &OptionError{Option: "Compose options after --", Value: strings.Join(o.OCE.ComposeArgs, " "),
				Rule: "the Kubernetes-only profile does not accept Compose options", Fix: "drop them, or use --control-plane compose"}
		}
		return kubernetesProfile(p, o)
	}
	return composeProfile(p, o)
}
