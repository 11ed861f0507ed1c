package k3d

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/engine/locate"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/occdev/step"
)

// Name is the --cluster-provider value of the k3d provider.
const Name = "k3d"

// Settings are the k3d provider's own settings: the Settings of a cluster.Request for k3d, a
// value the plan decides, and part of the Request Create takes. What a control plane needs of the
// cluster (a network to join, NodePorts to publish) is not here: it is the request's
// cluster.Needs.
type Settings struct {
	// APIPort is the API's host port on 127.0.0.1; 0 picks a free one when the cluster is made.
	APIPort int
	// PodSecurityExemptRuntimeClasses are exempt from PodSecurity admission ("openshell-sandbox").
	PodSecurityExemptRuntimeClasses []string
	// DiskThresholdPercent sets the kubelet's hard eviction thresholds for node and image file
	// systems (1..20; 0 means DefaultDiskThresholdPercent).
	DiskThresholdPercent int
	// Timeout bounds k3d's creation and start (0 means DefaultTimeout).
	Timeout time.Duration
	// DNS is the node's DNS resolver (ChooseNodeDNS's result; the zero value keeps k3d's own
	// handling). An address is written into the state directory's node-resolv.conf, which is
	// mounted over the node's /etc/resolv.conf, and k3d's DNS fix is turned off.
	DNS NodeDNS
}

// ClusterProvider is the k3d provider behind cluster.Provider: a thin adapter that maps a
// cluster.Request (its Settings a Settings value) onto Request, New and Create. It connects to
// the engine the request names (the state's recorded endpoint) at Preflight, Ensure or
// ImageImporter, and writes k3d's own log lines to LogFile in the state directory; Close
// releases both.
type ClusterProvider struct {
	// ToolsImage replaces pins k3d.toolsImage (a test bed's stand-in); empty uses the pin.
	ToolsImage string

	mu       sync.Mutex
	provider *Provider
	endpoint locate.Endpoint
	log      *lazyLog
	// gate opens when the node of the running (or next) Ensure takes images.
	gate *nodeGate
}

var (
	_ cluster.Provider      = (*ClusterProvider)(nil)
	_ cluster.EarlyImporter = (*ClusterProvider)(nil)
)

// Name implements cluster.Provider.
func (*ClusterProvider) Name() string { return Name }

// RecordType is the type of the cluster's record (cluster.Keeper).
func (*ClusterProvider) RecordType() state.Type { return TypeCluster }

// settingsOf is the request's Settings; none selects every default.
func settingsOf(req cluster.Request) (Settings, error) {
	switch s := req.Settings.(type) {
	case nil:
		return Settings{}, nil
	case Settings:
		return s, nil
	}
	return Settings{}, fmt.Errorf("k3d provider: the request's settings are a %T, not k3d settings", req.Settings)
}

// request builds the provider's Request; the API port stays 0 until Ensure chooses one.
func (c *ClusterProvider) request(req cluster.Request) (Request, error) {
	s, err := settingsOf(req)
	if err != nil {
		return Request{}, err
	}
	r := Request{
		Name:                    req.Name,
		Owner:                   req.Owner,
		StateDir:                filepath.Dir(req.KubeconfigFile),
		KubeconfigPath:          req.KubeconfigFile,
		ContainerKubeconfigPath: req.ContainerKubeconfigFile,
		Needs:                   req.Needs,
		Settings:                s,
		EngineKind:              req.EngineKind,
	}
	if req.Recorder != nil {
		r.Recorder = req.Recorder
	}
	if req.Pins == nil {
		return r, errors.New("k3d provider: no pins (the k3s node image and k3d tools image are pinned)")
	}
	r.NodeImage = req.Pins.K3s.Image
	r.Progress = req.Progress
	// The node looks up the registry of the pinned images: OpenShell's first, whose images its
	// sandboxes run.
	var imgs []pins.Image
	for _, p := range append(req.Pins.GatewayImages(), req.Pins.ClusterImages()...) {
		imgs = append(imgs, p.Image)
	}
	r.DNSCheckName = LookupName(imgs...)
	return r, nil
}

func (c *ClusterProvider) toolsImage(req cluster.Request) string {
	if c.ToolsImage != "" {
		return c.ToolsImage
	}
	if req.Pins == nil {
		return ""
	}
	return req.Pins.K3d.ToolsImage.DigestReference()
}

// Describe implements cluster.Provider.
func (c *ClusterProvider) Describe(req cluster.Request) cluster.Description {
	preflight := "the host's kernel gives the node the legacy iptables nat table (on Linux, when the engine runs on it), no k3d cluster " + req.Name + " exists and a chosen API port is free"
	r, err := c.request(req)
	if err != nil {
		return cluster.Description{Description: step.Note(err.Error()), Preflight: preflight}
	}
	d := r.Describe()
	d.Note = fmt.Sprintf("in the %s engine at %s; the user's kubeconfig is never written", req.EngineKind.Name(), req.Engine)
	return cluster.Description{Description: d, Preflight: preflight}
}

// Check implements cluster.Provider: the name rule, the request's fields and the recorded
// engine endpoint, without contacting anything.
func (c *ClusterProvider) Check(req cluster.Request) error {
	r, err := c.request(req)
	if err != nil {
		return err
	}
	errs := []error{r.Check()}
	if req.Engine.IsZero() {
		errs = append(errs, errors.New("k3d provider: no container engine (the k3d cluster runs in the located engine's containers)"))
	}
	if c.toolsImage(req) == "" {
		errs = append(errs, errors.New("k3d provider: no tools image (pins k3d.toolsImage)"))
	}
	return errors.Join(errs...)
}

// Preflight implements cluster.Provider: the engine answers (a missing or stopped engine is
// reported with what to start before anything is downloaded or created), the host's kernel gives
// the node its legacy iptables nat table (checkHostNAT; a kernel that did not show enough is
// only warned about), nothing of a cluster of that name exists yet (Preflight runs before the
// state is claimed, so an existing one cannot be this environment's), and a chosen API port is
// free.
func (c *ClusterProvider) Preflight(ctx context.Context, req cluster.Request) error {
	p, err := c.connect(ctx, req)
	if err != nil {
		return err
	}
	unsure, release, err := p.checkHostNAT(ctx)
	if err != nil {
		return err
	}
	if unsure {
		req.Progress.Note(hostNATWarning(release))
	}
	f, err := p.find(ctx, req.Name)
	if err != nil {
		return err
	}
	if !f.empty() {
		return &NameError{Option: EnvClusterName, Value: req.Name,
			Rule: "names a k3d cluster that already exists in the " + p.engine.Name() + " engine (" + f.describe() + ")",
			Fix:  "choose another name, or unset " + EnvClusterName + " for a random one; remove the old cluster with occ dev down (if occ made it) or k3d cluster delete " + req.Name}
	}
	s, err := settingsOf(req)
	if err != nil {
		return err
	}
	if port := s.APIPort; port != 0 {
		if err := portFree(port); err != nil {
			return &RequestError{Option: EnvAPIPort, Value: strconv.Itoa(port), Rule: "is already in use on " + apiHost + " (" + err.Error() + ")", Fix: "choose a free port, or unset it for a free one occ chooses"}
		}
	}
	return nil
}

// connect returns the provider for the request's engine, connecting once.
func (c *ClusterProvider) connect(ctx context.Context, req cluster.Request) (*Provider, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.provider != nil && c.endpoint == req.Engine {
		return c.provider, nil
	}
	source := "the located " + req.EngineKind.Name() + " engine"
	eng, err := docker.ConnectAs(ctx, req.Engine, source, req.EngineKind)
	if err != nil {
		return nil, err
	}
	if c.log == nil {
		c.log = newLazyLog(req.KubeconfigFile)
	}
	p, err := New(Options{Engine: eng, ToolsImage: c.toolsImage(req), Log: c.log})
	if err != nil {
		eng.Close()
		return nil, err
	}
	c.provider, c.endpoint = p, req.Engine
	return p, nil
}

// Ensure implements cluster.Provider: Create (recorded before anything exists, rolled back on
// failure or cancellation) and the Access the flow records.
func (c *ClusterProvider) Ensure(ctx context.Context, req cluster.Request) (cluster.Access, error) {
	p, err := c.connect(ctx, req)
	if err != nil {
		return cluster.Access{}, err
	}
	r, err := c.request(req)
	if err != nil {
		return cluster.Access{}, err
	}
	if r.APIPort == 0 {
		if r.APIPort, err = FreeLoopbackPort(req.Needs.TakenPorts()...); err != nil {
			return cluster.Access{}, err
		}
	}
	req.Progress.Note(fmt.Sprintf("creating k3d cluster %s (API on 127.0.0.1:%d)", r.Name, r.APIPort))
	var rec *seenRecorder
	if r.Recorder != nil {
		rec = &seenRecorder{Recorder: r.Recorder}
		r.Recorder = rec
	}
	gate := c.nodeGate(true)
	r.gate = gate
	if req.Ready != nil {
		r.apiReady = func(created *Cluster) error { return req.Ready(ctx, accessOf(created)) }
	}
	created, err := p.Create(ctx, r)
	if err != nil {
		gate.fail(fmt.Errorf("k3d cluster %s has no node to import into: its creation failed", r.Name))
	} else {
		gate.open()
	}
	if err != nil {
		// A creation that failed by itself, rather than being cancelled (Ctrl-C, or another
		// lane's failure), after the cluster was recorded, is never assumed gone: k3d's cleanup
		// of it ran under the conditions that made it fail. Its record stays for `down`.
		if rec != nil && rec.cluster != nil && ctx.Err() == nil && !errors.Is(err, context.Canceled) {
			return cluster.Access{}, &cluster.KeptError{Record: *rec.cluster, Err: err}
		}
		return cluster.Access{}, err
	}
	return accessOf(created), nil
}

// accessOf is the Access of a cluster Create made or adopted.
func accessOf(created *Cluster) cluster.Access {
	return cluster.Access{
		Provider:            Name,
		Name:                created.Name,
		Kubeconfig:          created.Kubeconfig,
		Context:             created.Context,
		Server:              created.Server,
		UID:                 created.UID,
		ContainerKubeconfig: created.ContainerKubeconfig,
		NodeAddress:         created.NodeContainer,
		Network:             created.Network,
	}
}

// NodeAddress implements cluster.Provider: server-0's name, which resolves on the cluster's
// Docker network (where the Compose control plane runs).
func (*ClusterProvider) NodeAddress(_ context.Context, access cluster.Access) (string, error) {
	if access.NodeAddress != "" {
		return access.NodeAddress, nil
	}
	if access.Name == "" {
		return "", errors.New("the recorded k3d cluster has no name")
	}
	return serverNode(access.Name), nil
}

// Close releases the engine connection Preflight, Ensure or ImageImporter made and closes k3d's
// log file (lines k3d's process-wide logger writes to it afterwards are dropped); the provider
// may connect again afterwards.
func (c *ClusterProvider) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.log != nil {
		c.log.close()
		c.log = nil
	}
	if c.provider == nil {
		return nil
	}
	err := c.provider.engine.Close()
	c.provider, c.endpoint = nil, locate.Endpoint{}
	return err
}

// ImageImporter implements cluster.Importer: the importer of the recorded cluster, through the
// request's engine (connected now when neither Preflight nor Ensure did).
func (c *ClusterProvider) ImageImporter(ctx context.Context, req cluster.Request, access cluster.Access) (images.Importer, error) {
	p, err := c.connect(ctx, req)
	if err != nil {
		return nil, err
	}
	return p.Importer(access.Name), nil
}

// nodeGate is the gate of the running Ensure, or of the next one when none runs; fresh replaces
// a gate an earlier Ensure opened or failed.
func (c *ClusterProvider) nodeGate(fresh bool) *nodeGate {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gate == nil || (fresh && c.gate.ended()) {
		c.gate = newNodeGate()
	}
	return c.gate
}

// NodeImporter implements cluster.EarlyImporter: it waits until the Ensure beside it has created
// server-0 (on Podman, whose creation may be retried with a new node, until Ensure has returned)
// and the node's containerd answers, and returns the importer of that node. Images go in while
// k3s and k3d are still finishing the cluster.
func (c *ClusterProvider) NodeImporter(ctx context.Context, req cluster.Request) (images.Importer, error) {
	if err := c.nodeGate(false).wait(ctx); err != nil {
		return nil, err
	}
	p, err := c.connect(ctx, req)
	if err != nil {
		return nil, err
	}
	s, err := settingsOf(req)
	if err != nil {
		return nil, err
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = defaultContainerdWait
	}
	if err := p.waitForContainerd(ctx, serverNode(req.Name), timeout); err != nil {
		return nil, fmt.Errorf("import images into k3d cluster %s: %w", req.Name, err)
	}
	return p.Importer(req.Name), nil
}

// seenRecorder passes records on and keeps the cluster's record once it is durable.
type seenRecorder struct {
	Recorder
	cluster *state.Object
}

func (s *seenRecorder) Record(o state.Object) error {
	if err := s.Recorder.Record(o); err != nil {
		return err
	}
	if o.Type == TypeCluster {
		s.cluster = &o
	}
	return nil
}

// LogFile is the file in the state directory that receives k3d's own log lines.
const LogFile = "k3d.log"

// lazyLog is k3d's log file in the state directory. k3d's logger is process-wide and is set when
// the provider connects (before the state exists), so the file is opened on the first line, and
// lines after the provider closed it (or after a rollback removed the directory) are dropped.
type lazyLog struct {
	path string

	mu     sync.Mutex
	f      *os.File
	closed bool
}

// newLazyLog is the log beside the kubeconfig file; without one (a request before the state
// directory is known) every line is dropped.
func newLazyLog(kubeconfigFile string) *lazyLog {
	if kubeconfigFile == "" {
		return &lazyLog{closed: true}
	}
	return &lazyLog{path: filepath.Join(filepath.Dir(kubeconfigFile), LogFile)}
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
