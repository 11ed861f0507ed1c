package occdev

import (
	"context"

	"github.com/openclaw/occ/internal/occdev/cluster/k3d"
	"github.com/openclaw/occ/internal/occdev/platform"
)

// profile is what a control plane (layer 3) adds to the flow. The cluster lane and the platform
// steps are the same for every profile; a profile adds its own steps around them and what its
// cluster needs, each profile in its own file (steps_compose.go, steps_kubernetes.go), so adding
// one never reshapes upSteps.
type profile struct {
	// k3d adds what the control plane needs of the k3d cluster: the Compose profile joins its
	// <project>_development network, the Kubernetes-only profile publishes its API proxy's
	// NodePort on 127.0.0.1.
	k3d func(*k3d.Settings)
	// beforeCluster are steps that must finish before the cluster exists (the Compose profile's
	// network and data services); they run first in the cluster lane.
	beforeCluster []Step
	// controlPlane are the control plane's own steps, after the platform is installed.
	controlPlane []Step
	// preflight is the control plane's live check before the state is claimed (the selected
	// images' revision labels), so a refusal changes nothing.
	preflight func(ctx context.Context, r *run) error
	// images are steps of the images lane, beside the cluster's creation, that make the control
	// plane's own images present in the engine (appending to run.extra); they are imported and
	// verified in the node with the OpenShell images. imageNames names them for the dry run.
	images     []Step
	imageNames []string
	// installation adds the control plane's part to the Installation before it is written.
	installation func(ctx context.Context, r *run, in *platform.InstallationInput) error
	// undo removes, when `up` fails, what the control plane made that neither the state's
	// records nor its directory hold (a key written to --key-output).
	undo func(r *run) error
	// summary adds the control plane's part to the summary.
	summary func(r *run, s *Summary)
	// pending says what of this control plane occ does not start yet (the summary and the dry
	// run say it plainly); empty once the profile is complete.
	pending string
}

// profileOf returns the profile of the plan's control plane, with the profile's own settings
// checked (no I/O).
func profileOf(p *Plan, o UpOptions) (profile, error) {
	if p.ControlPlane == ControlPlaneKubernetes {
		return kubernetesProfile(p, o)
	}
	return composeProfile(p), nil
}
