package occdev

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openclaw/occ/internal/occdev/artifacts"
	"github.com/openclaw/occ/internal/occdev/charts"
	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/cluster/existing"
	"github.com/openclaw/occ/internal/occdev/cluster/k3d"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/engine/locate"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/occdev/profile"
	"github.com/openclaw/occ/internal/occdev/profile/oce"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/progress"
)

// OptionError is a bad setting the user fixes on the command line or in the environment. The
// CLI reports it as a usage error (exit 2). Nothing has been created when it is returned.
type OptionError = option.Error

// ControlPlane is where the OCE control plane is meant to run (compose or kubernetes).
type ControlPlane = platform.ControlPlane

// The control planes.
const (
	ControlPlaneCompose    = platform.ControlPlaneCompose
	ControlPlaneKubernetes = platform.ControlPlaneKubernetes
)

// The cluster providers: occ's own k3d cluster (the default of both profiles) or a kubeconfig
// context the user already has.
const (
	ProviderK3d      = k3d.Name
	ProviderExisting = existing.Name
	defaultProvider  = ProviderK3d
)

// providers lists the cluster providers by --cluster-provider value. Adding a provider is one
// line here; the provider itself lives in its own package under cluster/, declares its own
// settings and decides its own plan (cluster.Registration), and the flow only ever sees it as a
// cluster.Provider (and the optional cluster.Importer).
func providers() map[string]cluster.Registration {
	return map[string]cluster.Registration{
		existing.Name: existing.Registration(),
		k3d.Name:      k3d.Registration(),
	}
}

// SupportedProviders names the --cluster-provider values in a stable order.
func SupportedProviders() []string {
	return slices.Sorted(maps.Keys(providers()))
}

// ProviderSettings are the settings the cluster providers declare of their own
// (cluster.Registration.Settings), by --cluster-provider name in order. Each provider's are bound
// to a fresh options value, which becomes its entry of o.ClusterSettings, as ProfileSettings
// does for the profiles: whoever fills the settings' fields fills what the provider resolves
// from, without naming its options type.
func (o *UpOptions) ProviderSettings() []option.Setting {
	table := providers()
	var out []option.Setting
	for _, name := range SupportedProviders() {
		if table[name].Settings == nil {
			continue
		}
		value, settings := table[name].Settings()
		if o.ClusterSettings == nil {
			o.ClusterSettings = map[string]any{}
		}
		o.ClusterSettings[name] = value
		out = append(out, settings...)
	}
	return out
}

// UpOptions are the settings of `occ dev up`. The zero value of each field selects its default.
type UpOptions struct {
	// StateDir is the private state directory (--state-dir, OCC_DEVELOPMENT_STATE_DIRECTORY);
	// it wins over the directory Environment maps to.
	StateDir string
	// Environment names the environment (--name, OCC_DEVELOPMENT_ENVIRONMENT); empty is the
	// default one. Each environment has its own state directory, Compose project and host ports.
	Environment string
	// ClusterProvider selects the cluster (--cluster-provider, OCC_DEVELOPMENT_CLUSTER_PROVIDER);
	// default k3d.
	ClusterProvider string
	// Kubeconfig and Context select the existing cluster (--kubeconfig, --context); the k3d
	// provider refuses them (occ writes the kubeconfig of its own cluster into the state).
	Kubeconfig string
	Context    string
	// ClusterSettings are each cluster provider's own settings by its --cluster-provider name,
	// of the type its package declares (k3d.ClusterOptions, or a pointer to one, for k3d); a
	// provider reads only its own, and refuses those of the others the user set.
	// ProviderSettings sets each to a value the provider's declared settings fill.
	ClusterSettings map[string]any
	// Docker says where to look for the engine (the process environment, the home directory,
	// the system paths); the zero value reads DOCKER_HOST, DOCKER_CONTEXT, the docker CLI
	// configuration and Podman's settings as their CLIs do.
	Docker locate.Env
	// Engine is the container engine to drive (--engine, OCC_DEVELOPMENT_CONTAINER_ENGINE):
	// auto (the default: Docker when Docker answers, else Podman), docker or podman.
	Engine locate.Choice
	// EngineSetting names the setting Engine came from, for messages; empty means --engine.
	EngineSetting string
	// ControlPlane is compose (default) or kubernetes (--control-plane, OCC_DEVELOPMENT_CONTROL_PLANE).
	ControlPlane ControlPlane
	// Namespace is the platform namespace for the Gateway (-n/--namespace,
	// OCC_DEVELOPMENT_KUBERNETES_NAMESPACE); default openshell-system (compose) or oce-system.
	Namespace string
	// PinFile replaces the embedded pins (--pin-file, OCC_DEVELOPMENT_PIN_FILE).
	PinFile string
	// ArchiveFile is a local copy of the pinned OpenShell source archive, still verified
	// (--openshell-archive), for offline use.
	ArchiveFile string
	// Bundle is a file of `occ dev bundle create` every pinned image and download is taken from
	// (--bundle, EnvBundle); Offline refuses any pull or download (--offline, EnvOffline).
	Bundle  string
	Offline bool
	// GatewayChart and WorkspaceChart select local OpenShell charts, each a chart directory or
	// a packaged chart (.tgz), instead of those of the pinned archive, for OpenShell engineers
	// iterating on the charts (--openshell-helm-chart, EnvGatewayChart;
	// --openshell-workspace-helm-chart, EnvWorkspaceChart): both or neither. The archive is then
	// not fetched; the Gateway chart's render is still checked against the pinned images.
	GatewayChart   string
	WorkspaceChart string
	// AgentSandboxManifest is a local Agent Sandbox manifest used instead of the pinned download
	// (--agent-sandbox-manifest, EnvAgentSandboxManifest), for offline use. Its
	// CustomResourceDefinitions are what the Gateway chart's render sees as served.
	AgentSandboxManifest string
	// CertManagerManifest and EnvoyGatewayManifest are local copies of the pinned routing
	// manifests (EnvCertManagerManifest, EnvEnvoyGatewayManifest), for offline use; each must
	// have its pinned sha256.
	CertManagerManifest  string
	EnvoyGatewayManifest string
	// K3sImage replaces the pinned k3s node image of the cluster occ creates (EnvK3sImage):
	// a k3s release image by digest, or by tag (resolved to a digest when it is pulled). It is
	// the flow's setting, not one the k3d provider declares: it changes the pins, which the
	// plan's images, the bundle check and the Gateway chart's render read before any provider
	// resolves.
	K3sImage string
	// CacheDir holds verified downloads; default under the user's cache directory.
	CacheDir string
	// GatewayEndpoint is where the final Health check dials the Gateway (host:port or URL);
	// empty means a port-forward to a Gateway Pod (--gateway-endpoint).
	GatewayEndpoint string
	// StartupTimeout bounds each readiness wait (--startup-timeout,
	// OCC_DEVELOPMENT_STARTUP_TIMEOUT_SECONDS); default 600s.
	StartupTimeout time.Duration
	// OCCCommand is how the user runs occ, for the printed `down` command; default "occ".
	OCCCommand string
	// OCCVersion is occ's version as `occ version` prints it, for the debug bundle.
	OCCVersion string
	// NoDiagnose skips the debug bundle a failed `up` writes before its rollback (--no-diagnose).
	NoDiagnose bool
	// DryRun is set by PlanUp: what the plan says is worded for a run that creates nothing.
	DryRun bool
	// OCE are the inputs of the OCE control plane: its checkout, images, Compose options and
	// key destination.
	OCE OCEOptions
	// Settings are each profile's own settings by its --control-plane name, of the type its
	// package declares (KubernetesOptions, or a pointer to one, for kubernetes); a profile
	// reads only its own. ProfileSettings sets each to a value the profile's declared settings
	// fill.
	Settings map[ControlPlane]any

	// Progress receives step events (steps of concurrent lanes name their lane); nil discards
	// them. It is called from several goroutines while lanes run.
	Progress progress.Sink
	// Log receives notes that are not step lines (adopted objects, rollback detail).
	Log io.Writer
	// HTTPClient downloads artifacts; nil uses a plain client (each download has a timeout).
	HTTPClient *http.Client

	// lookup, set by Up and PlanUp, is the context locating the engine runs under, so
	// Ctrl-C stops it too; nil is a plain bounded lookup.
	lookup context.Context

	deps deps
}

// OCEOptions are the inputs of the OCE control plane (layer 3): where its source is, how its
// images are obtained, the Compose project's name and options, and where the verified bootstrap
// key goes.
type OCEOptions = oce.Options

// Plan is UpOptions resolved and validated: every name `up` will use is decided here, and every
// flag and path checked, before the first mutation and before any download (k3d's "validate
// the whole plan first"). Resolving reads local files (the pin file, the archive's presence)
// but contacts nothing.
type Plan struct {
	Environment     string             `json:"environment"`
	StateDir        string             `json:"stateDirectory"`
	ClusterProvider string             `json:"clusterProvider"`
	Kubeconfig      string             `json:"kubeconfig,omitempty"`
	Context         string             `json:"context,omitempty"`
	ControlPlane    ControlPlane       `json:"controlPlane"`
	Namespace       string             `json:"namespace"`
	ServiceType     corev1.ServiceType `json:"gatewayServiceType"`
	NodePort        int32              `json:"gatewayNodePort,omitempty"`
	PinFile         string             `json:"pinFile,omitempty"`
	Pins            string             `json:"pins"`
	ArchiveFile     string             `json:"openshellArchive,omitempty"`
	// Bundle is the bundle's absolute path; Offline refuses every pull and download.
	Bundle  string `json:"bundle,omitempty"`
	Offline bool   `json:"offline,omitempty"`
	// GatewayChart and WorkspaceChart are the selected local charts (absolute paths), and
	// AgentSandboxManifest the selected local manifest; empty when the pinned downloads are used.
	GatewayChart         string `json:"openshellHelmChart,omitempty"`
	WorkspaceChart       string `json:"openshellWorkspaceHelmChart,omitempty"`
	AgentSandboxManifest string `json:"agentSandboxManifest,omitempty"`
	// Routing says which routing controllers `up` installs, or why none.
	Routing platform.RoutingPlan `json:"routing"`
	// NodeDNS is the k3d node's DNS resolver and where it came from; nil for a cluster occ does
	// not create.
	NodeDNS *k3d.NodeDNS `json:"k3dNodeDNS,omitempty"`
	// GatewayRender is what the offline render of the Gateway chart assumes of the cluster's
	// Kubernetes version, and where that version comes from.
	GatewayRender platform.GatewayRenderPlan `json:"gatewayRender"`
	// NodeImage is the node image OCC_DEVELOPMENT_K3S_IMAGE selects instead of the pin; nil
	// when the pin stands.
	NodeImage       *k3d.NodeImageSelection `json:"nodeImage,omitempty"`
	CacheDir        string                  `json:"cacheDirectory"`
	GatewayEndpoint string                  `json:"gatewayHealthEndpoint,omitempty"`
	StartupTimeout  time.Duration           `json:"-"`
	// ClusterName, APIPort (0: a free port chosen at creation) and DiskThresholdPercent are the
	// k3d cluster's; Engine is the located Docker engine (unix:///…) and EngineSource the rule
	// that chose it (DOCKER_HOST, a docker context, the default socket).
	ClusterName          string          `json:"clusterName,omitempty"`
	APIPort              int             `json:"apiPort,omitempty"`
	DiskThresholdPercent int             `json:"diskThresholdPercent,omitempty"`
	Engine               locate.Endpoint `json:"dockerEngine,omitzero"`
	EngineSource         string          `json:"dockerEngineSource,omitempty"`
	// EngineKind is what the engine at Engine said it is (docker or podman); empty when no engine
	// answered while planning, in which case the dry run and the preflight report every place
	// looked at (engineNotFound) unless an engine answers at Docker's place by then.
	EngineKind engine.Kind `json:"engineKind,omitempty"`
	// engineNotFound is the automatic choice's search when no place had a usable engine.
	engineNotFound *locate.NotFoundError
	// EngineVersion is the version the engine reported while planning, and EnginePlatform the
	// product it said it is part of ("Docker Desktop 4.37.1 (178610)").
	EngineVersion  string `json:"engineVersion,omitempty"`
	EnginePlatform string `json:"enginePlatform,omitempty"`
	// PullPolicy is the Gateway chart's image pull policy: Never where occ imported the
	// verified images itself (k3d), IfNotPresent on a cluster that pulls them by digest.
	PullPolicy corev1.PullPolicy `json:"imagePullPolicy"`
	// Images are the pinned images `up` uses, by role, as digest references.
	Images map[string]string `json:"images"`
	// OCE is the control plane `up` starts as its profile documents it (profile.Documented),
	// decided and checked before anything runs; nil when it starts none (no checkout was found).
	// Read back from JSON it is a RawDocument.
	OCE profile.Document `json:"oce,omitempty"`

	// clusterSettings are the cluster provider's own settings (cluster.Request.Settings), and
	// openProvider makes its live provider. The plan holds only values: the live provider is
	// the run's, opened when the run starts and closed when it ends.
	clusterSettings any
	openProvider    func() cluster.Provider
	// selectedCharts are the loaded local charts when both are selected.
	selectedCharts *charts.Charts
	// agentSandboxObjects are the Agent Sandbox manifest's objects when a dry run could read
	// them without a download (selected, or the pinned one cached), which it then names.
	agentSandboxObjects []*unstructured.Unstructured
	// routingControllers are the admitted routing manifests when a dry run could read them
	// without a download (platform.RoutingPlan.Local), which it then names.
	routingControllers []*platform.RoutingController
	profile            profile.Planned
	// gateway is how the platform serves the control plane (platform.ControlPlane): the
	// profile's Platform, whatever its name.
	gateway ControlPlane
	pins    *pins.Set
}

// planJSON is Plan as documents show it: the startup timeout as a duration ("10m0s"), not as
// nanoseconds.
type planJSON struct {
	plan
	StartupTimeout string `json:"startupTimeout"`
}

type plan Plan

// MarshalJSON writes the startup timeout as a duration string.
func (p Plan) MarshalJSON() ([]byte, error) {
	return json.Marshal(planJSON{plan: plan(p), StartupTimeout: p.StartupTimeout.String()})
}

// UnmarshalJSON reads what MarshalJSON wrote; the profile's document as a RawDocument.
func (p *Plan) UnmarshalJSON(data []byte) error {
	var v struct {
		planJSON
		OCE json.RawMessage `json:"oce,omitempty"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	d, err := time.ParseDuration(v.StartupTimeout)
	if err != nil {
		return fmt.Errorf("startupTimeout %q: %w", v.StartupTimeout, err)
	}
	*p = Plan(v.plan)
	p.StartupTimeout = d
	if len(v.OCE) > 0 && string(v.OCE) != "null" {
		p.OCE = RawDocument(v.OCE)
	}
	return nil
}

// RawDocument is a profile's plan document read back from JSON (profile.RawDocument).
type RawDocument = profile.RawDocument

// resolvePlan checks every option and fills the defaults. It reads the environment for default
// directories and the pin file, and contacts nothing.
func resolvePlan(o UpOptions) (*Plan, error) { return resolvePlanWith(providers(), o) }

// resolvePlanWith is resolvePlan choosing the cluster provider from table.
func resolvePlanWith(table map[string]cluster.Registration, o UpOptions) (*Plan, error) {
	p := &Plan{
		Kubeconfig:  o.Kubeconfig,
		Context:     o.Context,
		PinFile:     o.PinFile,
		ArchiveFile: o.ArchiveFile,
		Offline:     o.Offline,
	}
	provider, err := resolveProvider(p, o, table)
	if err != nil {
		return nil, err
	}
	if err := resolveControlPlane(p, o); err != nil {
		return nil, err
	}
	if p.StartupTimeout, err = option.StartupTimeout(o.StartupTimeout); err != nil {
		return nil, err
	}
	if p.GatewayEndpoint, err = platform.CheckHealthEndpoint(o.GatewayEndpoint, "--gateway-endpoint ("+EnvGatewayEndpoint+")"); err != nil {
		return nil, err
	}
	loc, err := state.LocateNew(o.StateDir, o.Environment)
	if err != nil {
		return nil, err
	}
	p.Environment, p.StateDir = loc.Name, loc.Dir
	if p.CacheDir, err = artifacts.CacheDir(o.CacheDir); err != nil {
		return nil, err
	}
	if err := resolveImages(p, o); err != nil {
		return nil, err
	}
	if o.ArchiveFile != "" {
		if err := option.RegularFile(o.ArchiveFile); err != nil {
			return nil, &OptionError{Option: "--openshell-archive (" + EnvArchive + ")", Value: o.ArchiveFile,
				Rule: err.Error(), Fix: "name a local copy of the pinned archive, or leave it unset to download it"}
		}
	}
	if err := resolveBundle(p, o); err != nil {
		return nil, err
	}
	if err := resolveRouting(p, o); err != nil {
		return nil, err
	}
	if err := resolveSelections(p, o); err != nil {
		return nil, err
	}
	if err := resolveCluster(p, o, table, provider); err != nil {
		return nil, err
	}
	if p.profile, err = profileOf(p, o); err != nil {
		return nil, err
	}
	p.Routing.Route = p.profile.Route()
	return p, nil
}

// resolveProvider chooses the cluster provider from table (defaultProvider unless one is given)
// and returns its registration.
func resolveProvider(p *Plan, o UpOptions, table map[string]cluster.Registration) (cluster.Registration, error) {
	name := o.ClusterProvider
	if name == "" {
		name = defaultProvider
	}
	provider, ok := table[name]
	if !ok {
		return cluster.Registration{}, &OptionError{Option: "--cluster-provider (" + EnvClusterProvider + ")", Value: name,
			Rule: "is not a supported cluster provider", Fix: "use one of: " + strings.Join(SupportedProviders(), ", ")}
	}
	p.ClusterProvider = name
	return provider, nil
}

// resolveControlPlane chooses the control plane (ControlPlaneCompose unless one is given) and
// how the platform serves it, in its namespace unless another is given.
func resolveControlPlane(p *Plan, o UpOptions) error {
	cps := controlPlanes(o)
	p.ControlPlane = o.ControlPlane
	if p.ControlPlane == "" {
		p.ControlPlane = ControlPlaneCompose
	}
	cp, ok := cps[p.ControlPlane]
	if !ok {
		names := make([]string, 0, len(cps))
		for n := range cps {
			names = append(names, string(n))
		}
		slices.Sort(names)
		return &OptionError{Option: "--control-plane (" + EnvControlPlane + ")", Value: string(o.ControlPlane),
			Rule: "is not supported", Fix: "use " + strings.Join(names, " or ")}
	}
	pf := cp.Platform()
	p.gateway, p.Namespace = pf.Gateway, pf.Namespace
	p.ServiceType, p.NodePort = p.gateway.Service()
	if o.Namespace != "" {
		if err := platform.CheckNamespace(o.Namespace, "-n/--namespace ("+EnvNamespace+")"); err != nil {
			return err
		}
		p.Namespace = o.Namespace
	}
	return nil
}

// resolveImages reads the pins, applies the node image selected instead of the pinned one, and
// lists the plan's images by role: by digest, or as given when they have none (images.ByRole).
func resolveImages(p *Plan, o UpOptions) error {
	var err error
	if p.pins, err = pins.FromSetting(o.PinFile, "--pin-file ("+EnvPinFile+")"); err != nil {
		return err
	}
	p.Pins = p.pins.Source
	if p.pins, p.NodeImage, err = k3d.SelectNodeImage(p.ClusterProvider, o.K3sImage, p.pins); err != nil {
		return err
	}
	p.Images = images.ByRole(p.images())
	return nil
}

// resolveCluster lets the chosen provider check its own settings and refuse those of the others,
// and decide its plan; the plan document keeps showing the k3d cluster's settings where it
// always has. The chart's pull policy follows from what the provider can do: Never for a cluster
// that runs only images occ imports, IfNotPresent for one that pulls them by digest.
func resolveCluster(p *Plan, o UpOptions, table map[string]cluster.Registration, reg cluster.Registration) error {
	opts := cluster.Options{
		Kubeconfig: o.Kubeconfig, Context: o.Context, Settings: o.ClusterSettings,
		Timeout: p.StartupTimeout, ExemptRuntimeClasses: []string{platform.RuntimeClassName},
		// The engine is located and identified now (GET /version, which changes nothing), so
		// the dry run names it and the state records its kind and endpoint before anything is
		// created.
		Engine: func() (cluster.Engine, error) {
			loc, err := locate.ForPlan(o.lookup, string(o.Engine), o.EngineSetting, o.Docker)
			p.Engine, p.EngineSource, p.EngineKind, p.EngineVersion, p.EnginePlatform = loc.Endpoint, loc.Source, loc.Kind, loc.Version, loc.Platform
			p.engineNotFound = loc.NotFound
			return cluster.Engine{Kind: p.EngineKind, Platform: p.EnginePlatform}, err
		},
	}
	cp, err := reg.Resolve(opts, cluster.Foreign(table, reg.Name, opts))
	if err != nil {
		return err
	}
	p.ClusterName, p.APIPort, p.clusterSettings, p.openProvider = cp.Name, cp.APIPort, cp.Settings, reg.Open
	p.DiskThresholdPercent, p.NodeDNS = k3d.Shown(cp.Settings)
	p.PullPolicy = corev1.PullIfNotPresent
	if p.importsImages() {
		p.PullPolicy = corev1.PullNever
	}
	return nil
}
