// Package k3d creates, identifies and deletes the disposable k3d cluster of `occ dev up`, through
// k3d v5's Go library (pkg/client over its Docker runtime), never the k3d CLI. The deletion
// removes the cluster's Docker objects through the engine API itself, the ones k3d's
// ClusterDelete removes for a cluster of this shape.
//
// The cluster follows the reference's shape: one server, no agents, the pinned k3s image, the API
// on 127.0.0.1 at a port the caller chose, a PodSecurity admission configuration, legacy
// iptables, and kubelet settings under which imported images are never garbage-collected. It
// differs in one respect: k3d's server load balancer is disabled. With one server it only
// forwards to that server, and dropping it saves an image to pin and pull and a container to
// start; k3d then publishes the API port on server-0 itself, so port mappings target server-0 and
// the container kubeconfig names server-0 on the Docker network.
//
// Ownership is explicit. Create records the cluster before k3d creates anything, labels server-0
// with the caller's owner value, and returns the kube-system UID once the API answers (the flow
// records it with the cluster's access). Inspect and Delete accept a cluster only when its name,
// k3d's labels, that owner label and (when recorded) that UID all agree; Delete then proves that
// no container, network or volume of the cluster is left. The user's default kubeconfig is never
// read or written.
package k3d

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"sync"

	k3dlog "github.com/k3d-io/k3d/v5/pkg/logger"
	k3dtypes "github.com/k3d-io/k3d/v5/pkg/types"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/state"
)

// OwnerLabel is the label occ puts on server-0: its value is the state's owner value
// (state.State.Owner), the evidence that a same-named cluster is the one this state created. It
// is the key of every object a state owns (kubeobj.LabelDevState).
const OwnerLabel = kubeobj.LabelDevState

// Recorder makes a state entry durable; *state.Dir implements it. Create records the cluster
// through it before the first Docker object exists.
type Recorder interface {
	Record(state.Object) error
}

// Options configure a Provider.
type Options struct {
	// Engine is the Docker engine to create clusters in, reached at its pinned endpoint.
	Engine *docker.Engine
	// ToolsImage is the reference k3d runs its tools container from (the pinned k3d-tools image,
	// or a test bed's stand-in). It must be present in the engine before Create: occ pulls pinned
	// images itself, by digest, so k3d never pulls a tag. Inspect and Delete do not need it
	// (`down` builds its provider from the state, which records no tools image).
	ToolsImage string
	// Log receives k3d's own log lines; nil discards them. The flow points it at a file in the
	// state directory, so a failed creation can be diagnosed without cluttering the terminal.
	Log io.Writer
	// HostRoot and HostOS are the machine occ runs on, read by the preflight of the host's
	// kernel and the automatic resolver's hint: its root file system and its operating system
	// (runtime.GOOS's names). Nil and empty mean this machine; tests give another.
	HostRoot fs.FS
	HostOS   string
}

// hostSystem is the machine occ runs on, as the provider reads it.
type hostSystem struct {
	root fs.FS
	os   string
}

// Provider drives k3d for one Docker engine. Every k3d library call goes through withK3d.
type Provider struct {
	engine *docker.Engine
	tools  string
	env    []docker.EnvVar
	host   hostSystem
}

// k3dMu serialises calls into the k3d library. k3d keeps process-wide state (its logger, its
// cached "fixes", a tools-node mutex) and reads the environment on every call, so two calls in
// flight at once could see each other's settings; occ never needs them to overlap.
var k3dMu sync.Mutex

// New returns a provider for the engine. k3d reads the engine address and the tools image from
// the process environment; every call through the provider sets them first
// (docker.PinK3dEnvironment, the one place occ changes its environment).
func New(opts Options) (*Provider, error) {
	if opts.Engine == nil {
		return nil, errors.New("k3d provider: no Docker engine")
	}
	var extra []docker.EnvVar
	if opts.ToolsImage != "" {
		extra = append(extra, docker.EnvVar{Name: k3dtypes.K3dEnvImageTools, Value: opts.ToolsImage})
	}
	p := &Provider{
		engine: opts.Engine,
		tools:  opts.ToolsImage,
		env:    docker.K3dEnvironment(opts.Engine.Endpoint, extra...),
		host:   hostSystem{root: opts.HostRoot, os: opts.HostOS},
	}
	if p.host.root == nil {
		p.host.root = os.DirFS("/")
	}
	if p.host.os == "" {
		p.host.os = runtime.GOOS
	}
	out := opts.Log
	if out == nil {
		out = io.Discard
	}
	if err := p.withK3d(func() error { k3dlog.Log().SetOutput(out); return nil }); err != nil {
		return nil, err
	}
	return p, nil
}

// withK3d runs fn, which calls the k3d library, alone in the process and with k3d's
// environment pointing at this provider's engine; the environment is put back when fn returns.
func (p *Provider) withK3d(fn func() error) error {
	k3dMu.Lock()
	defer k3dMu.Unlock()
	restore, err := docker.PinK3dEnvironment(p.env)
	if err != nil {
		return err
	}
	defer restore()
	return fn()
}

// Names k3d derives from a cluster name.
func serverNode(cluster string) string  { return fmt.Sprintf("k3d-%s-server-0", cluster) }
func toolsNode(cluster string) string   { return fmt.Sprintf("k3d-%s-tools", cluster) }
func ownNetwork(cluster string) string  { return "k3d-" + cluster }
func imageVolume(cluster string) string { return fmt.Sprintf("k3d-%s-images", cluster) }
func contextName(cluster string) string { return "k3d-" + cluster }
func containerServer(cluster string) string {
	return fmt.Sprintf("https://%s:%s", serverNode(cluster), k3dtypes.DefaultAPIPort)
}
