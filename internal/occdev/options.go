package occdev

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/openclaw/occ/internal/occdev/artifacts"
	"github.com/openclaw/occ/internal/occdev/charts"
	"github.com/openclaw/occ/internal/occdev/state"
)

// OptionError is a bad setting the user fixes on the command line or in the environment. The
// CLI reports it as a usage error (exit 2). Nothing has been created when it is returned.
type OptionError struct {
	// Option names the flag (and, where one exists, the environment variable).
	Option string
	Value  string
	Rule   string
	Fix    string
}

func (e *OptionError) Error() string {
	msg := fmt.Sprintf("%s %q %s", e.Option, e.Value, e.Rule)
	if e.Fix != "" {
		msg += ": " + e.Fix
	}
	return msg
}

// ControlPlane is where the OCE control plane is meant to run, which decides how the Gateway is
// published and how the Installation reaches the cluster (reference §3.2 / §3.3).
type ControlPlane string

const (
	// ControlPlaneCompose runs OCE in Compose next to the cluster: the Gateway is a NodePort
	// (30051) on the node, and the drivers authenticate with a mounted kubeconfig.
	ControlPlaneCompose ControlPlane = "compose"
	// ControlPlaneKubernetes runs OCE inside the cluster: the Gateway is a ClusterIP Service and
	// the drivers use in-cluster authentication.
	ControlPlaneKubernetes ControlPlane = "kubernetes"
)

// Fixed names of the pinned OpenShell (reference §4) and of the development profile.
const (
	GatewayRelease          = charts.GatewayRelease
	GatewayServiceName      = charts.GatewayRelease
	GatewayPort             = 8080
	GatewayNodePort         = charts.DevelopmentNodePort
	RuntimeClassName        = charts.RuntimeClassName
	RuntimeClassHandler     = "runc"
	GatewayJWTSecretName    = "openshell-gateway-jwt-keys"
	OperatorNamespaceLabel  = "openshell.ai/openclaw-workspace"
	OperatorNamespaceValue  = "true"
	SupervisorManagedBy     = "openshell.ai/managed-by"
	SupervisorManagedByVal  = "openshell"
	SupervisorBoundaryRole  = "openshell.ai/boundary-role"
	SupervisorBoundaryValue = "supervisor"
	WorkspaceSandboxRole    = "openshell-workspace-sandbox"
	OCENamespaceLabel       = "openclaw.dev/namespace"

	defaultStartupTimeout = 600 * time.Second
	maxStartupTimeout     = 86400 * time.Second
)

// UpOptions are the settings of `occ dev up`. The zero value of each field selects its default.
type UpOptions struct {
	// StateDir is the private state directory (--state-dir, OCC_DEVELOPMENT_STATE_DIRECTORY).
	StateDir string
	// ClusterProvider selects the cluster (--cluster-provider); default existing.
	ClusterProvider string
	// Kubeconfig and Context select the existing cluster (--kubeconfig, --context).
	Kubeconfig string
	Context    string
	// ControlPlane is compose (default) or kubernetes (--control-plane, OCC_DEVELOPMENT_CONTROL_PLANE).
	ControlPlane ControlPlane
	// Namespace is the platform namespace for the Gateway (--namespace,
	// OCC_DEVELOPMENT_KUBERNETES_NAMESPACE); default openshell-system (compose) or oce-system.
	Namespace string
	// PinFile replaces the embedded pins (--pin-file, OCC_DEVELOPMENT_PIN_FILE).
	PinFile string
	// ArchiveFile is a local copy of the pinned OpenShell source archive, still verified
	// (--openshell-archive), for offline use.
	ArchiveFile string
	// CacheDir holds verified downloads; default under the user's cache directory.
	CacheDir string
	// GatewayEndpoint is where the final Health check dials the Gateway (host:port or URL);
	// empty means a port-forward to a Gateway Pod (--gateway-endpoint).
	GatewayEndpoint string
	// StartupTimeout bounds each readiness wait (--startup-timeout,
	// OCC_DEVELOPMENT_STARTUP_TIMEOUT_SECONDS); default 600s.
	StartupTimeout time.Duration
	// DryRun prints the steps and what each would create, and touches nothing.
	DryRun bool
	// OCCCommand is how the user runs occ, for the printed `down` command; default "occ".
	OCCCommand string

	// Progress receives step events; nil discards them.
	Progress Progress
	// Log receives notes that are not step lines (adopted objects, rollback detail).
	Log io.Writer
	// HTTPClient downloads artifacts; nil uses a plain client (each download has a timeout).
	HTTPClient *http.Client
	// DownloadProgress receives download progress reports, for a progress bar.
	DownloadProgress func(artifacts.Progress)

	// AfterStep is a test seam: called after each successful step, an error fails `up` there.
	AfterStep func(index int, name string) error
}

// Plan is UpOptions resolved and validated: every name `up` will use is decided here, before
// the first mutation (k3d's "validate the whole plan first").
type Plan struct {
	StateDir        string        `json:"stateDirectory"`
	ClusterProvider string        `json:"clusterProvider"`
	Kubeconfig      string        `json:"kubeconfig,omitempty"`
	Context         string        `json:"context,omitempty"`
	ControlPlane    ControlPlane  `json:"controlPlane"`
	Namespace       string        `json:"namespace"`
	ServiceType     string        `json:"gatewayServiceType"`
	NodePort        int32         `json:"gatewayNodePort,omitempty"`
	PinFile         string        `json:"pinFile,omitempty"`
	ArchiveFile     string        `json:"openshellArchive,omitempty"`
	CacheDir        string        `json:"cacheDirectory"`
	GatewayEndpoint string        `json:"gatewayHealthEndpoint,omitempty"`
	StartupTimeout  time.Duration `json:"startupTimeout"`

	provider ClusterProvider
}

// resolvePlan checks every option and fills the defaults. It performs no I/O beyond reading
// the environment for default directories.
func resolvePlan(o UpOptions) (*Plan, error) {
	p := &Plan{
		Kubeconfig:      o.Kubeconfig,
		Context:         o.Context,
		PinFile:         o.PinFile,
		ArchiveFile:     o.ArchiveFile,
		GatewayEndpoint: o.GatewayEndpoint,
	}
	prov, err := lookupProvider(o.ClusterProvider)
	if err != nil {
		return nil, err
	}
	p.provider, p.ClusterProvider = prov, prov.Name()

	switch o.ControlPlane {
	case "", ControlPlaneCompose:
		p.ControlPlane, p.ServiceType, p.NodePort, p.Namespace = ControlPlaneCompose, "NodePort", GatewayNodePort, "openshell-system"
	case ControlPlaneKubernetes:
		p.ControlPlane, p.ServiceType, p.Namespace = ControlPlaneKubernetes, "ClusterIP", "oce-system"
	default:
		return nil, &OptionError{Option: "--control-plane (OCC_DEVELOPMENT_CONTROL_PLANE)", Value: string(o.ControlPlane),
			Rule: "is not supported", Fix: "use compose or kubernetes"}
	}
	if o.Namespace != "" {
		if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
			return nil, &OptionError{Option: "--namespace (OCC_DEVELOPMENT_KUBERNETES_NAMESPACE)", Value: o.Namespace,
				Rule: "is not a valid namespace name (" + strings.Join(errs, "; ") + ")", Fix: "use lower-case letters, digits and '-', at most 63 characters"}
		}
		p.Namespace = o.Namespace
	}

	switch {
	case o.StartupTimeout == 0:
		p.StartupTimeout = defaultStartupTimeout
	case o.StartupTimeout < time.Second || o.StartupTimeout > maxStartupTimeout:
		return nil, &OptionError{Option: "--startup-timeout (OCC_DEVELOPMENT_STARTUP_TIMEOUT_SECONDS)", Value: o.StartupTimeout.String(),
			Rule: "must be between 1s and 24h", Fix: "pass a duration such as 10m"}
	default:
		p.StartupTimeout = o.StartupTimeout
	}

	if p.StateDir, err = resolveStateDir(o.StateDir); err != nil {
		return nil, err
	}
	if p.CacheDir, err = resolveCacheDir(o.CacheDir); err != nil {
		return nil, err
	}
	return p, nil
}

func resolveStateDir(flag string) (string, error) {
	return state.ResolveDir(flag)
}

func resolveCacheDir(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	return artifacts.DefaultCacheDir()
}
