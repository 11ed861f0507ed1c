package occdev

import (
	"io"
	"path/filepath"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openclaw/occ/internal/occdev/artifacts"
	"github.com/openclaw/occ/internal/occdev/charts"
	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/pinbundle"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/progress"
)

// run is what the steps of one `up` share: the plan, the claimed state, and what earlier steps
// produced for later ones. Steps of concurrent lanes write disjoint fields (the artifacts lane
// its own, the cluster lane its own, and inside the cluster lane the k3d, images and import
// lanes theirs, and the platform lane the Gateway's); the steps after a
// group read them once every lane has finished.
type run struct {
	plan  *Plan
	opts  UpOptions
	log   io.Writer
	state *state.Dir

	// provider is the live cluster provider of the run, opened from the plan when the run
	// starts and closed when it ends.
	provider cluster.Provider

	// Written by the preflight: the container engine (when the plan has one), reached at the
	// located endpoint, and the platform of the containers it runs.
	engine         *docker.Engine
	enginePlatform images.Platform
	// bundle is the plan's bundle, verified, opened and found to hold everything the run takes
	// from it (openBundle); nil without a bundle.
	bundle *pinbundle.Taken

	// Written by the artifacts lane.
	archive            *artifacts.Verified
	helmDir            string
	charts             *charts.Charts
	workspaceResources []unstructured.Unstructured
	agentSandbox       []*unstructured.Unstructured
	// routing are the routing controllers' admitted manifests (none when the plan installs none).
	routing []*platform.RoutingController
	// gatewayStarts are the pinned images the Gateway chart's own objects start (its render
	// check found them), which its install waits for; the others it names are for Sandboxes.
	gatewayStarts []pins.Image
	// artifacts is done once the lane has written everything above: the platform lane of a
	// k3d cluster, beside the cluster's creation, waits on it.
	artifacts readiness

	// Written by the cluster lane: the images as its lanes take them into the engine and the node
	// (allocated with the run, each pinned image's slot by its own lanes, the control plane's
	// images by the import lane) and the connection.
	slots *images.Slots
	// resolvedPins are the plan's pins with a node image selected by tag resolved to the digest
	// its pull used (nil until then, or when the node image is pinned by digest): the cluster
	// is created from that digest.
	resolvedPins atomic.Pointer[pins.Set]
	conn         *kubeobj.Conn
	// cluster is done once conn is set: the image lanes beside the cluster's creation wait on
	// it before they import, and read conn only after it.
	cluster readiness
	// keptCluster is the record the cluster provider's failed Ensure left for `down`
	// (cluster.KeptError), which keeps it and the state directory.
	keptCluster atomic.Pointer[state.Object]

	// Written by the Gateway and Installation steps.
	gateway          *platform.Gateway
	gatewayEndpoint  string
	installationPath string
}

// close releases what the run holds open outside the state.
func (r *run) close() {
	if r.engine != nil {
		_ = r.engine.Close()
	}
	if r.bundle != nil {
		_ = r.bundle.Close()
	}
	if r.provider != nil {
		_ = r.provider.Close()
	}
}

// clusterRequest is what the provider sees. Before the state is claimed (preflight, dry run)
// it has no owner, recorder or state paths.
func (r *run) clusterRequest(rep progress.Reporter) cluster.Request {
	req := clusterRequest(r.plan, r.state, r.log, rep)
	if resolved := r.resolvedPins.Load(); resolved != nil {
		req.Pins = resolved
	}
	return req
}

func clusterRequest(p *Plan, d *state.Dir, log io.Writer, rep progress.Reporter) cluster.Request {
	req := cluster.Request{
		Name: p.ClusterName, Kubeconfig: p.Kubeconfig, Context: p.Context, Engine: p.Engine, EngineKind: engineKind(p),
		Pins: p.pins, Log: log, Progress: rep, Needs: p.profile.Needs(), Settings: p.clusterSettings,
	}
	if d != nil {
		req.KubeconfigFile = d.File(cluster.KubeconfigFile)
		req.ContainerKubeconfigFile = d.File(cluster.ContainerKubeconfigFile)
		req.Owner = d.State().Owner()
		req.Recorder = d
	} else if p.StateDir != "" {
		// The dry run describes the files where `up` will write them.
		req.KubeconfigFile = filepath.Join(p.StateDir, cluster.KubeconfigFile)
		req.ContainerKubeconfigFile = filepath.Join(p.StateDir, cluster.ContainerKubeconfigFile)
	}
	return req
}
