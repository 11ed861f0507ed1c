package k3d

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/docker"
)

// Name is the --cluster-provider value of the k3d provider.
const Name = "k3d"

// Settings are the k3d provider's inputs that cluster.Request does not carry, because they are
// the profile's (ports, the network to join) or the sandbox platform's (exempt RuntimeClasses).
// The flow fills them per profile.
type Settings struct {
	// APIPort is the API's host port on 127.0.0.1; 0 picks a free one when the cluster is made.
	APIPort int
	// Ports publish NodePorts of server-0 (the Kubernetes-only profile's API proxy).
	Ports []PortMapping
	// Network is an existing network to join (the Compose profile's <project>_development).
	Network string
	// PodSecurityExemptRuntimeClasses are exempt from PodSecurity admission.
	PodSecurityExemptRuntimeClasses []string
	// DiskThresholdPercent and Timeout: see Request (0 selects the defaults).
	DiskThresholdPercent int
	Timeout              time.Duration
	// DNSResolver is the node's DNS server (ParseDNSResolver's result); empty keeps k3d's own.
	DNSResolver string
	// ToolsImage replaces pins k3d.toolsImage (a test bed's stand-in); empty uses the pin.
	ToolsImage string
	// Log receives k3d's own log lines; nil discards them.
	Log io.Writer
}

// ClusterProvider is the k3d provider behind cluster.Provider: a thin adapter that maps a
// cluster.Request and the Settings onto Request, New and Create. It connects to the engine the
// request names (the state's recorded endpoint) at Preflight or Ensure.
type ClusterProvider struct {
	Settings Settings

	mu       sync.Mutex
	provider *Provider
	endpoint string
}

var _ cluster.Provider = (*ClusterProvider)(nil)

// Name implements cluster.Provider.
func (*ClusterProvider) Name() string { return Name }

// request builds the provider's Request; the API port stays 0 until Ensure chooses one.
func (c *ClusterProvider) request(req cluster.Request) (Request, error) {
	r := Request{
		Name:                            req.Name,
		Owner:                           req.Owner,
		StateDir:                        filepath.Dir(req.KubeconfigFile),
		KubeconfigPath:                  req.KubeconfigFile,
		ContainerKubeconfigPath:         req.ContainerKubeconfigFile,
		APIPort:                         c.Settings.APIPort,
		Ports:                           c.Settings.Ports,
		Network:                         c.Settings.Network,
		PodSecurityExemptRuntimeClasses: c.Settings.PodSecurityExemptRuntimeClasses,
		DiskThresholdPercent:            c.Settings.DiskThresholdPercent,
		Timeout:                         c.Settings.Timeout,
		DNSResolver:                     c.Settings.DNSResolver,
	}
	if req.Recorder != nil {
		r.Recorder = req.Recorder
	}
	if req.Pins == nil {
		return r, errors.New("k3d provider: no pins (the k3s node image and k3d tools image are pinned)")
	}
	r.NodeImage = req.Pins.K3s.Image
	return r, nil
}

func (c *ClusterProvider) toolsImage(req cluster.Request) string {
	if c.Settings.ToolsImage != "" {
		return c.Settings.ToolsImage
	}
	if req.Pins == nil {
		return ""
	}
	return req.Pins.K3d.ToolsImage.DigestReference()
}

// Describe implements cluster.Provider.
func (c *ClusterProvider) Describe(req cluster.Request) cluster.Description {
	r, err := c.request(req)
	if err != nil {
		return cluster.Description{Note: err.Error()}
	}
	return cluster.Description{
		Creates: r.Describe(),
		Note:    fmt.Sprintf("in the Docker engine at %s; the user's kubeconfig is never written", req.Engine),
	}
}

// Check implements cluster.Provider: the name rule, the request's fields and the recorded
// engine endpoint, without contacting anything.
func (c *ClusterProvider) Check(req cluster.Request) error {
	r, err := c.request(req)
	if err != nil {
		return err
	}
	errs := []error{r.Check()}
	if _, err := docker.ParseEndpoint(req.Engine, "the located Docker engine"); err != nil {
		errs = append(errs, err)
	}
	if c.toolsImage(req) == "" {
		errs = append(errs, errors.New("k3d provider: no tools image (pins k3d.toolsImage)"))
	}
	return errors.Join(errs...)
}

// Preflight implements cluster.Provider: the engine answers (a missing or stopped engine is
// reported with what to start before anything is downloaded or created), nothing of a cluster of
// that name exists yet (Preflight runs before the state is claimed, so an existing one cannot be
// this environment's), and a chosen API port is free.
func (c *ClusterProvider) Preflight(ctx context.Context, req cluster.Request) error {
	p, err := c.connect(ctx, req)
	if err != nil {
		return err
	}
	f, err := p.find(ctx, req.Name)
	if err != nil {
		return err
	}
	if !f.empty() {
		return &NameError{Option: EnvClusterName, Value: req.Name,
			Rule: "names a k3d cluster that already exists in the Docker engine (" + f.describe() + ")",
			Fix:  "choose another name, or unset " + EnvClusterName + " for a random one; remove the old cluster with occ dev down (if occ made it) or k3d cluster delete " + req.Name}
	}
	if port := c.Settings.APIPort; port != 0 {
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
	ep, err := docker.ParseEndpoint(req.Engine, "the located Docker engine")
	if err != nil {
		return nil, err
	}
	eng, err := docker.Connect(ctx, ep, "the located Docker engine")
	if err != nil {
		return nil, err
	}
	p, err := New(Options{Engine: eng, ToolsImage: c.toolsImage(req), Log: c.Settings.Log})
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
		if r.APIPort, err = FreeLoopbackPort(); err != nil {
			return cluster.Access{}, err
		}
	}
	req.Progress.Note(fmt.Sprintf("creating k3d cluster %s (API on 127.0.0.1:%d)", r.Name, r.APIPort))
	created, err := p.Create(ctx, r)
	if err != nil {
		return cluster.Access{}, err
	}
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
	}, nil
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

// Close releases the engine connection Preflight or Ensure made; the provider may connect
// again afterwards.
func (c *ClusterProvider) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.provider == nil {
		return nil
	}
	err := c.provider.engine.Close()
	c.provider, c.endpoint = nil, ""
	return err
}

// Importer returns the image importer of the cluster Ensure made, for the image layer.
func (c *ClusterProvider) Importer(access cluster.Access) (*Importer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.provider == nil {
		return nil, errors.New("k3d provider: not connected (Ensure first)")
	}
	return c.provider.Importer(access.Name), nil
}
