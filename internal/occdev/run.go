package occdev

import (
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openclaw/occ/internal/occdev/artifacts"
	"github.com/openclaw/occ/internal/occdev/charts"
	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/progress"
)

// run is what the steps of one `up` share: the plan, the claimed state, and what earlier steps
// produced for later ones. Steps of concurrent lanes write disjoint fields (the artifacts lane
// its own, the cluster lane its own, and inside the cluster lane the k3d and images lanes
// theirs; the import lane its own, and the platform lane beside it none); the steps after a
// group read them once every lane has finished.
type run struct {
	plan  *Plan
	opts  UpOptions
	log   io.Writer
	state *state.Dir

	// Written by the preflight: the Docker engine (k3d only), reached at the located endpoint,
	// and the platform of the containers it runs.
	engine         *docker.Engine
	enginePlatform images.Platform

	// Written by the artifacts lane.
	archive            *artifacts.Verified
	helmDir            string
	charts             *charts.Charts
	workspaceResources []unstructured.Unstructured
	agentSandbox       []*unstructured.Unstructured

	// Written by the cluster lane: the pinned images as the engine holds them (by role, each
	// slot by its own step) and the connection.
	local [imageRoles]images.Local
	conn  *kubeobj.Conn
	// cluster is done once conn is set: the image lanes beside the cluster's creation wait on
	// it before they import, and read conn only after it.
	cluster readiness
	// importedProduct is each OpenShell image as its own lane imported it into the node.
	importedProduct [imageRoles][]images.Imported
	// clusterFailed is set when the cluster's creation failed by itself (not cancelled), which
	// keeps its record and the state directory for `down`.
	clusterFailed atomic.Bool

	// Written by the control plane's base pull: every base image of its builds, by digest.
	bases []controlplane.ResolvedBase

	// Written by the import lane: the control plane's images imported into the node, and every
	// image verified there.
	imported []images.Imported
	verified []images.Verified

	// Written by the Compose profile's steps (nil for other profiles).
	compose *composeRun
	// Written by the control plane's steps every profile shares (steps_oce.go).
	oce oceSession

	// Written by the Gateway and Installation steps.
	gateway          *platform.Gateway
	gatewayEndpoint  string
	installationPath string

	// kube is the Kubernetes-only control plane's own part of the run (steps_kubernetes.go).
	kube kubernetesRun

	// reload is the part of an `occ dev reload` (reload.go); nil for `up`.
	reload *reloadRun
}

// close releases what the run holds open outside the state.
func (r *run) close() {
	if r.engine != nil {
		_ = r.engine.Close()
	}
	if r.plan.k3d != nil {
		_ = r.plan.k3d.Close()
	}
	if r.plan.k3dLog != nil {
		r.plan.k3dLog.close()
	}
}

// Files of the state directory the cluster layer may write.
const (
	kubeconfigFile          = "kubeconfig"
	containerKubeconfigFile = "container-kubeconfig"
	k3dLogFile              = "k3d.log"
)

// clusterRequest is what the provider sees. Before the state is claimed (preflight, dry run)
// it has no owner, recorder or state paths.
func (r *run) clusterRequest(rep progress.Reporter) cluster.Request {
	return clusterRequest(r.plan, r.state, r.log, rep)
}

func clusterRequest(p *Plan, d *state.Dir, log io.Writer, rep progress.Reporter) cluster.Request {
	req := cluster.Request{
		Name: p.ClusterName, Kubeconfig: p.Kubeconfig, Context: p.Context, Engine: p.Engine,
		Pins: p.pins, Log: log, Progress: rep,
	}
	if d != nil {
		req.KubeconfigFile = d.File(kubeconfigFile)
		req.ContainerKubeconfigFile = d.File(containerKubeconfigFile)
		req.Owner = d.State().Owner()
		req.Recorder = d
	} else if p.StateDir != "" {
		// The dry run describes the files where `up` will write them.
		req.KubeconfigFile = filepath.Join(p.StateDir, kubeconfigFile)
		req.ContainerKubeconfigFile = filepath.Join(p.StateDir, containerKubeconfigFile)
	}
	return req
}

// lazyLog is k3d's log file in the state directory. k3d's logger is process-wide and is set when
// the provider connects (before the state exists), so the file is opened on the first line, and
// lines after the run closed it (or after a rollback removed the directory) are dropped.
type lazyLog struct {
	path string

	mu     sync.Mutex
	f      *os.File
	closed bool
}

func (l *lazyLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return len(b), nil
	}
	if l.f == nil {
		f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return len(b), nil // no state directory yet: k3d logs nothing that matters before it
		}
		l.f = f
	}
	_, _ = l.f.Write(b)
	return len(b), nil
}

func (l *lazyLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
}
