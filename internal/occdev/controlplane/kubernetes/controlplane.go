package kubernetes

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/openclaw/occ/internal/kube"
	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/helmrelease"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/occdev/step"
	"github.com/openclaw/occ/internal/progress"
)

// Config is everything the in-cluster control plane is built from, decided before it starts.
type Config struct {
	// Namespace is the platform namespace; it exists already.
	Namespace string
	// ControllerImage and PostgresImage are in-cluster digest references of imported images.
	ControllerImage string
	PostgresImage   string
	// HostAPIPort is the host's loopback port of the API (OPENCLAW_DEV_PORT, default 3000),
	// which becomes auth.baseUrl.
	HostAPIPort int
	// InstallationFile is the Installation the platform step wrote; its exact bytes go into
	// Secret occ-installation-startup.
	InstallationFile string
	// Chart is the checkout's OCE chart (LoadChart).
	Chart *chart.Chart
	// NodeNetwork and NodeSubnets are the cluster network's name and IPAM subnets as the
	// engine reports them; the restart egress policy admits the one holding the API endpoint.
	NodeNetwork string
	NodeSubnets []string
	// StartupTimeout bounds each wait (OCC_DEVELOPMENT_STARTUP_TIMEOUT_SECONDS, default 600 s).
	StartupTimeout time.Duration
	// Random is the credentials' randomness; nil is crypto/rand.
	Random io.Reader
	// HelmLog receives Helm's progress messages; nil discards them.
	HelmLog func(format string, args ...any)
	// Routing says the platform installed the routing controllers: the chart's gatewayRouting
	// is enabled with their GatewayClass and the API key Secret occ creates.
	Routing bool
}

// DefaultStartupTimeout is the reference's default for this profile.
const DefaultStartupTimeout = 600 * time.Second

// ControlPlane installs the in-cluster OCE control plane in named steps.
type ControlPlane struct {
	cfg  Config
	conn *kubeobj.Conn
	own  Ownership

	credentials *Credentials
	postgresIP  netip.Addr
	apiEndpoint netip.AddrPort
	nodeSubnet  netip.Prefix
	release     *release.Release
}

func (cfg *Config) defaults() {
	if cfg.Namespace == "" {
		cfg.Namespace = DefaultNamespace
	}
	if cfg.StartupTimeout == 0 {
		cfg.StartupTimeout = DefaultStartupTimeout
	}
	if cfg.Random == nil {
		cfg.Random = rand.Reader
	}
}

// New checks cfg completely before anything is created. conn is the recording connection of
// the flow (kubeobj): every object is created through it, recorded in the state before it is
// created, adopted again only on exactly this state's ownership label, and the Helm release is
// recorded in the same state.
func New(conn *kubeobj.Conn, cfg Config) (*ControlPlane, error) {
	cfg.defaults()
	var errs []error
	if msgs := validation.IsDNS1123Label(cfg.Namespace); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("namespace %q must be a DNS label of at most 63 characters (OCC_DEVELOPMENT_KUBERNETES_NAMESPACE): %v", cfg.Namespace, msgs))
	}
	if conn == nil || conn.Recorder() == nil || conn.Owner() == "" {
		errs = append(errs, errors.New("the cluster connection is incomplete: a recording connection acting for a development state is needed (a bug in occ)"))
	}
	for _, img := range []struct{ what, ref string }{{"controller", cfg.ControllerImage}, {"PostgreSQL", cfg.PostgresImage}} {
		if !controlplane.IsDigestReference(img.ref) {
			errs = append(errs, fmt.Errorf("%s image %q is not an in-cluster digest reference (<repository>@sha256:<64 hex>): import it into the cluster first", img.what, img.ref))
		}
	}
	if cfg.HostAPIPort < 1 || cfg.HostAPIPort > 65535 {
		errs = append(errs, fmt.Errorf("development API port %d (OPENCLAW_DEV_PORT) must be between 1 and 65535", cfg.HostAPIPort))
	}
	if !filepath.IsAbs(cfg.InstallationFile) {
		errs = append(errs, fmt.Errorf("Installation file %q must be an absolute path", cfg.InstallationFile))
	}
	if cfg.Chart == nil {
		errs = append(errs, errors.New("no OCE chart: load the checkout's chart with LoadChart"))
	}
	if cfg.StartupTimeout < 0 {
		errs = append(errs, fmt.Errorf("startup timeout %s must be positive", cfg.StartupTimeout))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return &ControlPlane{cfg: cfg, conn: conn, own: OwnershipOf(conn)}, nil
}

// Step is one named, repeatable part of the installation: it describes itself from the Config
// for a dry run (no cluster is needed and nothing is read or checked) and runs on the control
// plane.
type Step = step.Step[Config, *ControlPlane]

// on makes a step's Run of a control-plane method.
func on(fn func(*ControlPlane, context.Context) error) func(context.Context, *ControlPlane, progress.Reporter) error {
	return func(ctx context.Context, cp *ControlPlane, _ progress.Reporter) error { return fn(cp, ctx) }
}

// reporting makes a step's Run of a method that reports on the step's progress line.
func reporting(fn func(*ControlPlane, context.Context, progress.Reporter) error) func(context.Context, *ControlPlane, progress.Reporter) error {
	return func(ctx context.Context, cp *ControlPlane, rep progress.Reporter) error { return fn(cp, ctx, rep) }
}

// describe makes a step's Describe of the manifests its Run applies (build, on the control
// plane a dry run describes from) with the step's own words about some of them (extra, by "Kind name").
func describe(build func(*ControlPlane) []runtime.Object, extra map[string]string) func(Config) step.Description {
	return func(cfg Config) step.Description {
		return step.Objects(kubeobj.Describe(build(describing(cfg)), extra)...)
	}
}

// The workloads the control plane's steps wait for by waitReady, by kind and name.
var (
	postgresWorkload = workload{kind: "StatefulSet", name: Postgres}
	proxyWorkload    = workload{kind: "Deployment", name: ProxyDeployment}
)

type workload struct{ kind, name string }

// waiting makes a step's Describe of d that also waits for w in the control plane's namespace,
// as waitReady waits for it.
func waiting(d func(Config) step.Description, w workload) func(Config) step.Description {
	return func(cfg Config) step.Description {
		cfg.defaults()
		return d(cfg).Waiting(step.Wait{Kind: w.kind, Namespace: cfg.Namespace, Name: w.name, Ready: "every replica is ready"})
	}
}

// describeNote makes a step's Describe of a step that creates nothing.
func describeNote(fn func(cfg Config) string) func(Config) step.Description {
	return func(cfg Config) step.Description {
		cfg.defaults()
		return step.Note(fn(cfg))
	}
}

// Steps is the installation in order, the order OCE's own launcher installs it in.
func Steps() []Step {
	return []Step{
		{Name: "Generate the control-plane credentials", Run: on((*ControlPlane).loadCredentials), Describe: describeNote(func(Config) string {
			return "nothing; four 48-hex credentials, reused from this state's Secrets on a repeated run, never printed or stored in the state"
		})},
		{Name: "Create the PostgreSQL bootstrap Secret", Run: on((*ControlPlane).ensureBootstrapSecret),
			Describe: describe((*ControlPlane).bootstrapSecretManifests, nil)},
		{Name: "Create the PostgreSQL and bootstrap volumes", Run: on((*ControlPlane).ensureVolumes),
			Describe: describe((*ControlPlane).volumeManifests, nil)},
		{Name: "Prepare the bootstrap volume", Run: on((*ControlPlane).prepareBootstrapVolume),
			Describe: describePrepare},
		{Name: "Start PostgreSQL", Run: reporting((*ControlPlane).startPostgres),
			Describe: waiting(describe((*ControlPlane).postgresManifests, nil), postgresWorkload)},
		{Name: "Resolve the PostgreSQL and Kubernetes API addresses", Run: on((*ControlPlane).resolveAddresses), Describe: describeNote(func(cfg Config) string {
			return "nothing; reads Pod " + cfg.Namespace + "/" + PostgresPod + " and the EndpointSlice of Service default/kubernetes"
		})},
		{Name: "Apply the restart egress NetworkPolicies", Run: on((*ControlPlane).ensureRestartEgress),
			Describe: describe((*ControlPlane).restartEgressManifests, map[string]string{"NetworkPolicy " + KubernetesEgressPolicy: "the node network's subnet on the API port"})},
		{Name: "Create the control-plane Secrets", Run: on((*ControlPlane).ensureControlPlaneSecrets),
			Describe: describe(func(cp *ControlPlane) []runtime.Object { return cp.controlPlaneSecretManifests(nil) }, map[string]string{"Secret " + InstallationSecret: "holds the Installation's exact bytes"})},
		{Name: "Install the OCE chart", Run: on((*ControlPlane).installChart), Describe: func(cfg Config) step.Description {
			cfg.defaults()
			rec := helmrelease.Record(cfg.Namespace, ReleaseName)
			note := fmt.Sprintf("from the checkout's %s, waiting up to %s for the initialization Job and the API and worker Deployments", ChartPath, cfg.StartupTimeout)
			if cfg.Routing {
				r := platform.Route{Namespace: cfg.Namespace}
				note += fmt.Sprintf(", then for the private Agent Gateway route: Certificate %s Ready, Gateway %s Programmed, its Envoy proxies in %s Ready", r.Certificate(), platform.RoutingGatewayName, platform.RoutingEnvoyNamespace)
			}
			return step.Objects(step.Object{Kind: "Helm release", Namespace: rec.Namespace, Name: rec.Name, Note: note})
		}},
		{Name: "Bind the development tenant roles", Run: on((*ControlPlane).ensureTenantBindings),
			Describe: describe((*ControlPlane).tenantBindingManifests, nil)},
		{Name: "Start the development API proxy", Run: reporting((*ControlPlane).startProxy),
			Describe: waiting(describe((*ControlPlane).proxyManifests, nil), proxyWorkload)},
	}
}

// Up runs every step in order; each error names its step.
func (cp *ControlPlane) Up(ctx context.Context) error {
	x := step.Runner[Config, *ControlPlane]{}
	return x.Run(ctx, cp, Steps(), "")
}

// Release is the installed Helm release, once the chart step ran.
func (cp *ControlPlane) Release() *release.Release { return cp.release }

// ensure creates or converges objs through the recording connection.
func (cp *ControlPlane) ensure(ctx context.Context, objs ...runtime.Object) error {
	for _, o := range objs {
		if _, err := cp.conn.Ensure(ctx, o, kubeobj.Converge); err != nil {
			return err
		}
	}
	return nil
}

func (cp *ControlPlane) loadCredentials(ctx context.Context) error {
	if cp.credentials != nil {
		return nil
	}
	c, err := LoadOrGenerateCredentials(ctx, cp.conn.Kube, cp.cfg.Namespace, cp.own, cp.cfg.Random)
	if err != nil {
		return err
	}
	if err := c.check(); err != nil {
		return err
	}
	cp.credentials = c
	return nil
}

func (cp *ControlPlane) ensureBootstrapSecret(ctx context.Context) error {
	if err := cp.loadCredentials(ctx); err != nil {
		return err
	}
	return cp.ensure(ctx, cp.bootstrapSecretManifests()...)
}

func (cp *ControlPlane) ensureVolumes(ctx context.Context) error {
	return cp.ensure(ctx, cp.volumeManifests()...)
}

// describePrepare is the dry run's account of prepareBootstrapVolume: the Pod, and its wait for
// the Pod's Succeeded phase.
func describePrepare(cfg Config) step.Description {
	cfg.defaults()
	d := describe((*ControlPlane).preparePodManifests, map[string]string{"Pod " + PreparePod: "chowns the bootstrap volume to 1000:1000, mode 0700"})(cfg)
	return d.Waiting(step.Wait{Kind: "Pod", Namespace: cfg.Namespace, Name: PreparePod, Ready: "it has " + string(corev1.PodSucceeded) + " (" + string(corev1.PodFailed) + " is final)"})
}

func (cp *ControlPlane) prepareBootstrapVolume(ctx context.Context) error {
	if err := cp.ensure(ctx, cp.preparePodManifests()...); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, cp.cfg.StartupTimeout)
	defer cancel()
	return waitPod(wctx, cp.conn.Kube, cp.cfg.Namespace, PreparePod, func(p *corev1.Pod) (bool, error) {
		if e := kube.PodStuck(p); e != nil {
			return false, e
		}
		switch p.Status.Phase {
		case corev1.PodSucceeded:
			return true, nil
		case corev1.PodFailed:
			return false, fmt.Errorf("Pod %s failed%s; see its events and log in namespace %s", PreparePod, terminationDetail(p), cp.cfg.Namespace)
		}
		return false, nil
	})
}

// terminationDetail names why a Pod's containers ended (reason and exit code, never logs).
func terminationDetail(p *corev1.Pod) string {
	for _, s := range p.Status.ContainerStatuses {
		if t := s.State.Terminated; t != nil {
			return fmt.Sprintf(" (container %s: %s, exit code %d)", s.Name, t.Reason, t.ExitCode)
		}
	}
	return ""
}

func (cp *ControlPlane) startPostgres(ctx context.Context, rep progress.Reporter) error {
	if err := cp.ensure(ctx, cp.postgresManifests()...); err != nil {
		return err
	}
	return cp.waitReady(ctx, postgresWorkload, rep)
}

// waitReady waits for the control plane's workload; it ends early, naming the Pod, the reason
// and the fix, when a Pod of it cannot come up by itself (kube.WaitForWorkload), and reports
// what it sees on the step's progress line.
func (cp *ControlPlane) waitReady(ctx context.Context, wl workload, rep progress.Reporter) error {
	wctx, cancel := context.WithTimeout(ctx, cp.cfg.StartupTimeout)
	defer cancel()
	w := kube.Workload{Kind: wl.kind, Namespace: cp.cfg.Namespace, Name: wl.name}
	if err := kube.WaitForWorkload(wctx, cp.conn.Kube, w, kube.WaitOptions{Status: rep.Note}); err != nil {
		if ctx.Err() == nil && errors.Is(err, kube.ErrWaitTimeout) {
			return fmt.Errorf("%s did not become ready within %s: check its Pods' events, or raise OCC_DEVELOPMENT_STARTUP_TIMEOUT_SECONDS: %w",
				w, cp.cfg.StartupTimeout, err)
		}
		return err
	}
	return nil
}

func (cp *ControlPlane) resolveAddresses(ctx context.Context) error {
	ip, err := PostgresPodIP(ctx, cp.conn.Kube, cp.cfg.Namespace)
	if err != nil {
		return err
	}
	api, err := KubernetesAPIEndpoint(ctx, cp.conn.Kube)
	if err != nil {
		return err
	}
	subnet, err := SelectNodeSubnet(cp.cfg.NodeNetwork, cp.cfg.NodeSubnets, api.Addr())
	if err != nil {
		return err
	}
	cp.postgresIP, cp.apiEndpoint, cp.nodeSubnet = ip, api, subnet
	return nil
}

func (cp *ControlPlane) addresses(ctx context.Context) error {
	if cp.postgresIP.IsValid() {
		return nil
	}
	return cp.resolveAddresses(ctx)
}

func (cp *ControlPlane) ensureRestartEgress(ctx context.Context) error {
	if err := cp.addresses(ctx); err != nil {
		return err
	}
	return cp.ensure(ctx, cp.restartEgressManifests()...)
}

func (cp *ControlPlane) ensureControlPlaneSecrets(ctx context.Context) error {
	if err := cp.loadCredentials(ctx); err != nil {
		return err
	}
	installation, err := os.ReadFile(cp.cfg.InstallationFile)
	if err != nil {
		return fmt.Errorf("read the Installation %s: %w (the platform step writes it first)", cp.cfg.InstallationFile, err)
	}
	return cp.ensure(ctx, cp.controlPlaneSecretManifests(installation)...)
}

// Values are the chart values this run installs with (after the addresses are resolved).
func (cp *ControlPlane) Values(ctx context.Context) (Values, error) {
	if err := cp.addresses(ctx); err != nil {
		return Values{}, err
	}
	return BuildValues(ValuesInput{
		Namespace: cp.cfg.Namespace, ControllerImage: cp.cfg.ControllerImage, HostAPIPort: cp.cfg.HostAPIPort,
		PostgresIP: cp.postgresIP, APIEndpoint: cp.apiEndpoint, Routing: cp.cfg.Routing,
	})
}

func (cp *ControlPlane) installChart(ctx context.Context) error {
	values, err := cp.Values(ctx)
	if err != nil {
		return err
	}
	rel, err := InstallChart(ctx, cp.conn, ChartInstall{
		Chart: cp.cfg.Chart, Namespace: cp.cfg.Namespace, Values: values, Timeout: cp.cfg.StartupTimeout, Log: cp.cfg.HelmLog,
	})
	if err != nil {
		return err
	}
	cp.release = rel
	if cp.cfg.Routing {
		return cp.waitRoute(ctx)
	}
	return nil
}

// waitRoute waits for the private route the chart's gatewayRouting renders: its Certificate
// issued, its Gateway programmed and its Envoy proxies Ready on the node's Pod ranges. The
// Installation trusts those whole ranges as proxies (the proxies' own addresses change with
// every restart, and OCE's reference does the same in this profile), so the addresses are
// only checked, not recorded.
func (cp *ControlPlane) waitRoute(ctx context.Context) error {
	nodes, err := cp.conn.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("read the cluster's nodes for the route's proxy ranges: %w", err)
	}
	cidrs, err := platform.NodePodCIDRs(nodes.Items)
	if err != nil {
		return err
	}
	_, err = platform.WaitRoute(ctx, cp.conn, platform.Route{Namespace: cp.cfg.Namespace}, cidrs, cp.cfg.StartupTimeout)
	return err
}

func (cp *ControlPlane) ensureTenantBindings(ctx context.Context) error {
	return cp.ensure(ctx, cp.tenantBindingManifests()...)
}

func (cp *ControlPlane) startProxy(ctx context.Context, rep progress.Reporter) error {
	if err := cp.ensure(ctx, cp.proxyManifests()...); err != nil {
		return err
	}
	return cp.waitReady(ctx, proxyWorkload, rep)
}
