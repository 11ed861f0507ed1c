package k3d

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	k3dconf "github.com/k3d-io/k3d/v5/pkg/config/v1alpha5"

	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/step"
	"github.com/openclaw/occ/internal/progress"
)

// Defaults of a Request.
const (
	DefaultDiskThresholdPercent = 5
	DefaultTimeout              = 10 * time.Minute
	// apiHost is where the API (and every published port) is bound: loopback only.
	apiHost = "127.0.0.1"
)

// Request is what Create needs: inputs only, no flow context.
type Request struct {
	// Name is the cluster name (CheckName; ResolveName makes one).
	Name string
	// Owner is a value unique to the recording state (its directory path): it is written as a
	// label on server-0 and must match for Inspect and Delete to accept the cluster as theirs.
	Owner string
	// NodeImage is the pinned k3s image; its digest is what the node runs. It must already be in
	// the engine (the image step pulls it by digest).
	NodeImage pins.Image
	// StateDir is the private state directory: the admission configuration and both kubeconfigs
	// are written there.
	StateDir string
	// KubeconfigPath and ContainerKubeconfigPath name the two kubeconfigs; empty means
	// StateDir/kubeconfig and StateDir/container-kubeconfig.
	KubeconfigPath          string
	ContainerKubeconfigPath string
	// Needs are what the control plane needs of the cluster: Publish are NodePorts of server-0
	// published on 127.0.0.1 (the Kubernetes-only profile's API proxy); Network is an existing
	// Docker network to join (the Compose profile's <project>_development), and empty gives the
	// cluster a network of its own, which Delete removes with it.
	cluster.Needs
	// Settings are the provider's own settings. The API port is the host port of the
	// Kubernetes API on 127.0.0.1; the caller chooses it (see FreeLoopbackPort) before Create,
	// k3d's library does not pick one.
	Settings
	// Recorder receives the cluster's record (TypeCluster) before creation.
	Recorder Recorder
	// EngineKind is the kind of the engine the cluster runs in (docker or podman), for the
	// description; empty means Docker.
	EngineKind engine.Kind

	// DNSCheckName is the host name the node looks up through its resolver once it runs (the
	// registry of the pinned images, LookupName); empty checks nothing.
	DNSCheckName string
	// Progress receives the creation's notes (the node's resolver, the DNS check's outcome).
	Progress progress.Reporter

	// gate, when set, is opened once the node exists and takes images (ClusterProvider's
	// NodeImporter waits on it).
	gate *nodeGate
	// apiReady, when set, is called with the cluster as soon as a cluster Create makes serves
	// its API (kubeconfigs written, kube-system UID read), while k3d still finishes it; an
	// error fails the creation. Not on Podman, whose creation may be retried with a new node.
	apiReady func(*Cluster) error
}

// PortMapping publishes NodePort of server-0 at 127.0.0.1:HostPort.
type PortMapping = cluster.Port

// RequestError is a bad request field (Option names it, "k3d cluster <field>"); nothing has
// been created when it is returned.
type RequestError = option.Error

func requestError(field, value, rule, fix string) *RequestError {
	return &RequestError{Option: "k3d cluster " + field, Value: value, Rule: rule, Fix: fix}
}

// Check applies the rules of every field that can be judged without I/O, for the dry run and
// before anything is touched. An APIPort of 0 passes (the caller chooses one before Create).
func (r Request) Check() error {
	var errs []error
	bad := func(field, value, rule, fix string) {
		errs = append(errs, requestError(field, value, rule, fix))
	}
	if err := CheckName(r.Name); err != nil {
		errs = append(errs, err)
	}
	if !filepath.IsAbs(r.StateDir) {
		bad("state directory", r.StateDir, "must be an absolute path", "pass the claimed state directory")
	} else if strings.ContainsAny(r.StateDir, ":,") {
		// The admission file is bind-mounted with k3d's SRC:DEST:OPTIONS syntax.
		bad("state directory", r.StateDir, "must not contain ':' or ','", "choose a state directory path without them")
	}
	for _, kc := range []struct{ field, path string }{{"kubeconfig path", r.KubeconfigPath}, {"container kubeconfig path", r.ContainerKubeconfigPath}} {
		if kc.path != "" && !filepath.IsAbs(kc.path) {
			bad(kc.field, kc.path, "must be an absolute path", "")
		}
	}
	seen := map[int]string{}
	checkPort := func(field string, p int) {
		if p < 1 || p > 65535 {
			bad(field, strconv.Itoa(p), "must be between 1 and 65535", "choose a free port on 127.0.0.1")
			return
		}
		if other, dup := seen[p]; dup {
			bad(field, strconv.Itoa(p), "is also used as "+other, "give every published port its own host port")
			return
		}
		seen[p] = field
	}
	if r.APIPort != 0 {
		checkPort("API port", r.APIPort)
	}
	for i, m := range r.Publish {
		checkPort(fmt.Sprintf("ports[%d].hostPort", i), m.HostPort)
		if m.NodePort < 30000 || m.NodePort > 32767 {
			bad(fmt.Sprintf("ports[%d].nodePort", i), strconv.Itoa(m.NodePort), "must be in the NodePort range 30000-32767", "")
		}
	}
	if r.Network != "" && r.Network == ownNetwork(r.Name) {
		bad("network", r.Network, "is the name k3d gives a cluster's own network", "leave the network empty for a network of the cluster's own, or join another network")
	}
	if r.Network == "host" || r.Network == "bridge" || r.Network == "none" {
		bad("network", r.Network, "is a Docker built-in network", "join a user-defined network, or leave it empty")
	}
	if r.DiskThresholdPercent != 0 && (r.DiskThresholdPercent < 1 || r.DiskThresholdPercent > 20) {
		bad("disk threshold percent", strconv.Itoa(r.DiskThresholdPercent), "must be between 1 and 20", "")
	}
	if r.Timeout < 0 {
		bad("timeout", r.Timeout.String(), "must be positive", "")
	}
	if err := r.DNS.check(); err != nil {
		errs = append(errs, err)
	}
	if r.DNSCheckName != "" && !lookupNamePattern.MatchString(r.DNSCheckName) {
		bad("DNS check name", r.DNSCheckName, "is not a host name", "name a registry host the pinned images come from, or leave it empty for no check")
	}
	for _, rc := range r.PodSecurityExemptRuntimeClasses {
		if strings.TrimSpace(rc) == "" {
			bad("PodSecurity exempt RuntimeClass", rc, "is empty", "name the RuntimeClass, for example openshell-sandbox")
		}
	}
	return errors.Join(errs...)
}

// validate is Check plus what Create needs at run time (an owner, a recorder, a chosen API port,
// the claimed state directory), and fills in defaults.
func (r *Request) validate() error {
	errs := []error{r.Check()}
	bad := func(field, value, rule, fix string) {
		errs = append(errs, requestError(field, value, rule, fix))
	}
	if strings.TrimSpace(r.Owner) == "" {
		bad("owner", r.Owner, "is empty", "pass the state's owner value, which identifies the environment that owns the cluster")
	}
	if r.Recorder == nil {
		errs = append(errs, errors.New("k3d cluster: no Recorder; the cluster must be recorded before it is created"))
	}
	if r.APIPort == 0 {
		bad("API port", "0", "must be between 1 and 65535", "choose a free port on 127.0.0.1 (FreeLoopbackPort)")
	}
	// A node image selected by tag (EnvK3sImage) is planned without a digest; its pull resolves
	// one before the cluster is created, and the node runs only that.
	if r.NodeImage.Digest == "" {
		bad("node image", r.NodeImage.String(), "has no digest", "pin the k3s image as <reference>@sha256:<64 hex> (pins k3s.image), or let up resolve "+EnvK3sImage+"'s tag before it creates the cluster")
	}
	if filepath.IsAbs(r.StateDir) {
		if fi, err := os.Stat(r.StateDir); err != nil || !fi.IsDir() {
			bad("state directory", r.StateDir, "must be an existing directory", "claim the state directory before creating the cluster")
		}
	}
	if r.DiskThresholdPercent == 0 {
		r.DiskThresholdPercent = DefaultDiskThresholdPercent
	}
	if r.Timeout == 0 {
		r.Timeout = DefaultTimeout
	}
	if r.KubeconfigPath == "" {
		r.KubeconfigPath = filepath.Join(r.StateDir, KubeconfigFile)
	}
	if r.ContainerKubeconfigPath == "" {
		r.ContainerKubeconfigPath = filepath.Join(r.StateDir, ContainerKubeconfigFile)
	}
	return errors.Join(errs...)
}

// controllerManagerArgs raise kube-controller-manager's client rate limit. With
// --use-service-account-credentials (k3s sets it) the controller manager creates a service
// account and requests a token for each of its controllers, one after another, before it starts
// any of them; at its default limit (20 requests per second, bursts of 30) that keeps the
// Deployment and StatefulSet controllers from starting for about five seconds after the API
// answers, and every Pod of the platform waits for them. A one-node development cluster has
// no other clients to protect, so the whole start fits in one burst.
var controllerManagerArgs = []string{
	"--kube-controller-manager-arg=kube-api-qps=200",
	"--kube-controller-manager-arg=kube-api-burst=400",
}

// onServer0 is the k3d node filter of the only server.
var onServer0 = []string{"server:0"}

// simpleConfig is the k3d configuration of the request, the same document `k3d cluster create
// --config` reads. admissionPath is the admission file on the host, resolvPath the node's
// resolv.conf on the host (empty without a chosen resolver).
func (r *Request) simpleConfig(admissionPath, resolvPath string) k3dconf.SimpleConfig {
	threshold := strconv.Itoa(r.DiskThresholdPercent)
	args := []string{
		// The container kubeconfig reaches the API at server-0's name on the Docker network; the
		// serving certificate must name it.
		"--tls-san=" + serverNode(r.Name),
		"--kubelet-arg=eviction-hard=imagefs.available<" + threshold + "%,nodefs.available<" + threshold + "%",
		"--kubelet-arg=eviction-minimum-reclaim=imagefs.available=1%,nodefs.available=1%",
		// Imported images are used with pullPolicy Never and cannot be pulled again: the kubelet
		// must never garbage-collect them.
		"--kubelet-arg=image-gc-high-threshold=100",
		"--kubelet-arg=image-gc-low-threshold=99",
		"--kube-apiserver-arg=admission-control-config-file=" + admissionNodePath,
	}
	args = append(args, controllerManagerArgs...)
	cfg := k3dconf.SimpleConfig{
		Servers: 1,
		Agents:  0,
		Image:   r.NodeImage.DigestReference(),
		Network: r.Network,
		ExposeAPI: k3dconf.SimpleExposureOpts{
			Host:     apiHost,
			HostIP:   apiHost,
			HostPort: strconv.Itoa(r.APIPort),
		},
		Volumes: []k3dconf.VolumeWithNodeFilters{{
			Volume:      admissionPath + ":" + admissionNodePath + ":ro",
			NodeFilters: onServer0,
		}},
		Env: []k3dconf.EnvVarWithNodeFilters{{EnvVar: "IPTABLES_MODE=legacy", NodeFilters: onServer0}},
		Options: k3dconf.SimpleConfigOptions{
			K3dOptions: k3dconf.SimpleConfigOptionsK3d{
				Wait:                true,
				Timeout:             r.Timeout,
				DisableLoadbalancer: true,
				// k3d's tools node reaches the images it imports through the image volume.
				DisableImageVolume: false,
				// occ rolls back itself, after checking what it deletes is its own.
				NoRollback: true,
			},
			// The default kubeconfig and current context are never touched: occ writes its own
			// kubeconfig into the state directory.
			KubeconfigOptions: k3dconf.SimpleConfigOptionsKubeconfig{UpdateDefaultKubeconfig: false, SwitchCurrentContext: false},
			Runtime: k3dconf.SimpleConfigOptionsRuntime{
				Labels: []k3dconf.LabelWithNodeFilters{{Label: OwnerLabel + "=" + r.Owner, NodeFilters: onServer0}},
			},
		},
	}
	if resolvPath != "" {
		cfg.Volumes = append(cfg.Volumes, k3dconf.VolumeWithNodeFilters{
			Volume:      resolvPath + ":/etc/resolv.conf:ro",
			NodeFilters: onServer0,
		})
	}
	cfg.Name = r.Name
	for _, a := range args {
		cfg.Options.K3sOptions.ExtraArgs = append(cfg.Options.K3sOptions.ExtraArgs, k3dconf.K3sArgWithNodeFilters{Arg: a, NodeFilters: onServer0})
	}
	for _, m := range r.Publish {
		cfg.Ports = append(cfg.Ports, k3dconf.PortWithNodeFilters{
			Port: fmt.Sprintf("%s:%d:%d/tcp", apiHost, m.HostPort, m.NodePort),
			// With the load balancer disabled, ports are published by server-0 directly.
			NodeFilters: []string{"server:0:direct"},
		})
	}
	return cfg
}

// Describe is the dry run's account of Create of r: the node and tools containers, the network
// and volume, and the files in the state directory (with the modes Create writes them with) as
// typed items named as Create names them; the cluster's settings and the DNS check in prose. It
// performs no I/O and needs no valid request (a dry run describes whatever it was given, and
// reports validation separately).
func (r Request) Describe() step.Description {
	api, apiNote := apiHost, "a free port chosen at creation, "
	if r.APIPort > 0 {
		api, apiNote = apiHost+":"+strconv.Itoa(r.APIPort), ""
	}
	image := r.NodeImage.DigestReference()
	if r.NodeImage.Digest == "" {
		image = r.NodeImage.String() + " (by the digest its tag resolves to when it is pulled)"
	}
	kind, node := r.EngineKind.Name(), serverNode(r.Name)
	items := []step.Item{
		step.EngineObject{Kind: kind + " container", Name: node, Note: fmt.Sprintf("the one server of k3d cluster %s, from %s; no agents, no load balancer", r.Name, image)},
		step.EngineObject{Kind: "published port", Name: api, Note: apiNote + "to the Kubernetes API (https) of " + node},
		step.Prose("PodSecurity privileged by default with RuntimeClasses " + strings.Join(r.PodSecurityExemptRuntimeClasses, ", ") + " exempt"),
	}
	for _, m := range r.Publish {
		items = append(items, step.EngineObject{Kind: "published port", Name: fmt.Sprintf("%s:%d", apiHost, m.HostPort), Note: fmt.Sprintf("to NodePort %d of %s", m.NodePort, node)})
	}
	if r.Network == "" {
		items = append(items, step.EngineObject{Kind: kind + " network", Name: ownNetwork(r.Name), Note: "removed with the cluster"})
	} else {
		items = append(items, step.EngineObject{Kind: kind + " network", Name: r.Network, Note: "joined by the node; left in place by down"})
	}
	kubeconfig, containerKubeconfig := r.KubeconfigPath, r.ContainerKubeconfigPath
	if kubeconfig == "" {
		kubeconfig = filepath.Join(r.StateDir, KubeconfigFile)
	}
	if containerKubeconfig == "" {
		containerKubeconfig = filepath.Join(r.StateDir, ContainerKubeconfigFile)
	}
	items = append(items,
		step.EngineObject{Kind: kind + " volume", Name: imageVolume(r.Name)},
		step.EngineObject{Kind: kind + " container", Name: toolsNode(r.Name), Note: "k3d's tools container"},
		step.FileAt(filepath.Join(r.StateDir, AdmissionFile), admissionFileMode, "the PodSecurity admission configuration the node's apiserver reads"),
		step.FileAt(kubeconfig, kubeconfigMode, "the cluster's kubeconfig"),
		step.FileAt(containerKubeconfig, containerKubeconfigMode, "the kubeconfig for containers on the cluster's network"),
	)
	resolver := filepath.Join(r.StateDir, ResolverFile)
	switch {
	case r.DNS.Address != "":
		items = append(items, step.FileAt(resolver, resolverFileMode, fmt.Sprintf("the node's resolv.conf with nameserver %s, mounted read-only over its /etc/resolv.conf (k3d's DNS fix off)", r.DNS)))
	case r.DNS.Choice == DNSDesktopBridge:
		items = append(items, step.FileAt(resolver, resolverFileMode, fmt.Sprintf("the node's resolv.conf with %s, mounted read-only over its /etc/resolv.conf (k3d's DNS fix off); the container removes itself when it exits", r.DNS)))
	default:
		items = append(items, step.Prose("the node's DNS as k3d sets it up: "+r.DNS.String()))
	}
	if r.DNSCheckName != "" {
		items = append(items, step.Prose(fmt.Sprintf("once the node runs, it looks up %s through its resolver: a refusal stops up with the fix, no answer only warns", r.DNSCheckName)))
	}
	return step.Describe(items...)
}
