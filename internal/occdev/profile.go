package occdev

import "github.com/openclaw/occ/internal/occdev/cluster/k3d"

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
	// pending says what of this control plane occ does not start yet (the summary and the dry
	// run say it plainly); empty once the profile is complete.
	pending string
}

// profileOf returns the profile of the plan's control plane.
func profileOf(p *Plan) profile {
	if p.ControlPlane == ControlPlaneKubernetes {
		return kubernetesProfile(p)
	}
	return composeProfile(p)
}
