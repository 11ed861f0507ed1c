package occdev

import (
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openclaw/occ/internal/occdev/artifacts"
	"github.com/openclaw/occ/internal/occdev/charts"
	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/progress"
)

// run is what the steps of one `up` share: the plan, the claimed state, and what earlier steps
// produced for later ones. Steps of concurrent lanes write disjoint fields (the artifacts lane
// its own, the cluster lane its own); the steps after the group read them once every lane has
// finished.
type run struct {
	plan  *Plan
	opts  UpOptions
	log   io.Writer
	state *state.Dir

	// Written by the artifacts lane.
	archive            *artifacts.Verified
	helmDir            string
	charts             *charts.Charts
	workspaceResources []unstructured.Unstructured
	agentSandbox       []*unstructured.Unstructured

	// Written by the cluster lane.
	conn *kubeobj.Conn

	// Written by the platform steps.
	gateway          *platform.Gateway
	gatewayEndpoint  string
	installationPath string
}

// Files of the state directory the cluster layer may write.
const (
	kubeconfigFile          = "kubeconfig"
	containerKubeconfigFile = "kubeconfig.container"
)

// clusterRequest is what the provider sees. Before the state is claimed (preflight, dry run)
// it has no owner, recorder or state paths.
func (r *run) clusterRequest(rep progress.Reporter) cluster.Request {
	return clusterRequest(r.plan, r.state, r.log, rep)
}

func clusterRequest(p *Plan, d *state.Dir, log io.Writer, rep progress.Reporter) cluster.Request {
	req := cluster.Request{Kubeconfig: p.Kubeconfig, Context: p.Context, Pins: p.pins, Log: log, Progress: rep}
	if d != nil {
		req.KubeconfigFile = d.File(kubeconfigFile)
		req.ContainerKubeconfigFile = d.File(containerKubeconfigFile)
		req.Owner = d.State().Owner()
		req.Recorder = d
	}
	return req
}
