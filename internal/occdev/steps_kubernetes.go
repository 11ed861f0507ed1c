package occdev

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/network"
	"helm.sh/helm/v3/pkg/chart"

	"github.com/openclaw/occ/internal/occdev/cluster/k3d"
	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/controlplane/kubernetes"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/progress"
)

// KubernetesOptions are the settings of the Kubernetes-only control plane, and its test seams.
type KubernetesOptions struct {
	// Images selects prebuilt controller and Agent runtime images by digest
	// (OCC_DEVELOPMENT_CONTROLLER_IMAGE, OCC_KUBERNETES_RUNTIME_IMAGE), both or neither; with
	// neither, both are built from the checkout.
	Images controlplane.ImageSelection
	// NodeBaseImage replaces the pinned Node base image of the controller build
	// (OCC_DEVELOPMENT_NODE_BASE_IMAGE), by digest.
	NodeBaseImage string
	// PostgresImage replaces the pinned PostgreSQL image (OCC_DEVELOPMENT_POSTGRES_IMAGE), by
	// digest.
	PostgresImage string

	// Exec, a test seam, runs the reads in the reader Pod; nil is the API server's exec
	// subresource (a test bed without a kubelet cannot serve it).
	Exec kubernetes.PodExec
	// APIClient, a test seam, is the HTTP client of every OCE API call (the session, the key's
	// verification, the Namespace poll); nil is OCC's client with its per-call timeouts.
	APIClient *http.Client
	// Random, a test seam, is the source of the generated credentials; nil is crypto/rand.
	Random io.Reader
	// BuildNetwork is the network of the image builds' RUN steps; empty is the engine's
	// default ("none" on a test engine without a default bridge network).
	BuildNetwork string
}

// The Kubernetes-only profile's settings names, for messages.
const (
	envDevPort       = "OPENCLAW_DEV_PORT"
	buildLogFile     = "image-build.log"
	defaultDevPort   = 3000
	passwordFileName = kubernetes.PasswordFileName
)

// KubernetesPlan is the Kubernetes-only control plane as `up` will run it, decided before
// anything happens. Without an OCE checkout there is none (NotStarted says why).
type KubernetesPlan struct {
	// Checkout is the OCE checkout the control plane is built from, Commit its HEAD, Source how
	// it was found (--repository, OCC_DEVELOPMENT_REPOSITORY or the working directory).
	Checkout string `json:"checkout,omitempty"`
	Commit   string `json:"commit,omitempty"`
	Source   string `json:"source,omitempty"`
	// APIURL is where the OCE API answers: the development proxy's NodePort 30080, published by
	// k3d on 127.0.0.1 at APIPort (OPENCLAW_DEV_PORT).
	APIPort int    `json:"apiPort,omitempty"`
	APIURL  string `json:"apiURL,omitempty"`
	// KeyFile is where the verified bootstrap service key goes; KeyOwned says it lives in the
	// state directory (and goes with it) rather than at --key-output.
	KeyFile  string `json:"keyFile,omitempty"`
	KeyOwned bool   `json:"keyOwned,omitempty"`
	// Controller and Runtime are the selected digest references, or empty when both are built.
	Controller string `json:"controllerImage,omitempty"`
	Runtime    string `json:"runtimeImage,omitempty"`
	// NodeBaseImage is the controller build's NODE_BASE_IMAGE (built images only);
	// PostgresImage the PostgreSQL image, both by digest.
	NodeBaseImage string `json:"nodeBaseImage,omitempty"`
	PostgresImage string `json:"postgresImage"`
	// NotStarted says why no control plane is started (no checkout was found).
	NotStarted string `json:"notStarted,omitempty"`

	selection controlplane.ImageSelection
	nodeBase  pins.Image
	postgres  pins.Image
	dest      controlplane.KeyDestination
	chart     *chart.Chart
}

// kubernetesRun is the Kubernetes-only control plane's part of one `up`: the images of its
// image steps (written by the images lane only), the control plane, and what its last steps
// produced.
type kubernetesRun struct {
	controller, runtime, postgres images.Local
	cp                            *kubernetes.ControlPlane
	key                           kubernetes.KeyResult
	serviceKey                    *controlplane.ServiceKey
	namespace                     controlplane.BootstrapNamespace
	// keyWritten is a key this run wrote at --key-output (outside the state directory), which
	// a failed run removes again.
	keyWritten string
}

// kubernetesProfile is the Kubernetes-only control plane (reference §3.2): OCE's PostgreSQL,
// API and worker installed into the k3d cluster from the checkout's production chart, reached
// only through the development API proxy, whose NodePort 30080 k3d publishes on 127.0.0.1. The
// controller and Agent runtime are built from the checkout (or selected by digest), PostgreSQL
// pulled by its pinned digest, and all three imported with the OpenShell images and verified in
// the node. Everything it creates lives in the cluster, so `down` deleting the recorded cluster
// removes it; no Compose is involved.
func kubernetesProfile(p *Plan, o UpOptions) (profile, error) {
	kp, err := resolveKubernetes(p, o)
	if err != nil {
		return profile{}, err
	}
	p.Kubernetes = kp
	if kp.NotStarted != "" {
		return profile{pending: kp.NotStarted}, nil
	}
	ko := o.Kubernetes
	prof := profile{
		k3d: func(s *k3d.Settings) {
			s.Ports = append(s.Ports, k3d.PortMapping{HostPort: kp.APIPort, NodePort: kubernetes.ProxyNodePort})
		},
		preflight:    kubernetesPreflight,
		installation: kubernetesInstallation,
		undo:         undoKubernetes,
		summary:      kubernetesSummary,
	}
	if kp.selection.Selected() {
		prof.images = append(prof.images, Step{Name: "Use the selected controller and Agent runtime images", Describe: describeSelectedImages, Run: useSelectedImages})
		prof.imageNames = append(prof.imageNames, kp.Controller, kp.Runtime)
	} else {
		prof.images = append(prof.images,
			Step{Name: "Pull the Node base image", Describe: describeNodeBase, Run: pullNodeBase},
			Step{Name: "Build the controller and Agent runtime images from the checkout", Describe: describeBuild, Run: buildImages(ko.BuildNetwork)},
		)
		prof.imageNames = append(prof.imageNames, "the built controller and Agent runtime (by their config digests)")
	}
	prof.images = append(prof.images, Step{Name: "Pull the PostgreSQL image", Describe: describePostgres, Run: pullPostgres})
	prof.imageNames = append(prof.imageNames, kp.postgres.DigestReference())

	described := kubernetes.DescribeSteps(kubernetes.Config{Namespace: p.Namespace, StartupTimeout: p.StartupTimeout, HostAPIPort: kp.APIPort})
	for i, s := range described {
		d := creates(s.Creates...)
		if len(s.Creates) == 1 && strings.HasPrefix(s.Creates[0], "nothing") {
			d = note(s.Creates[0])
		}
		prof.controlPlane = append(prof.controlPlane, Step{
			Name:     s.Name,
			Describe: func(*Plan) Description { return d },
			Run: func(ctx context.Context, r *run, _ progress.Reporter) error {
				cp, err := r.controlPlane(ctx)
				if err != nil {
					return err
				}
				return cp.Steps()[i].Run(ctx)
			},
		})
	}
	prof.controlPlane = append(prof.controlPlane,
		Step{Name: "Wait for the OCE API through the development proxy", Describe: describeAPIWait, Run: waitForAPI},
		Step{Name: "Copy and verify the bootstrap service key", Describe: describeKeyCopy, Run: copyKey},
		Step{Name: "Wait for the bootstrap Namespace to be ready", Describe: describeNamespaceWait, Run: waitForNamespace},
	)
	return prof, nil
}

// resolveKubernetes checks the profile's settings (no I/O but local files: the checkout's HEAD
// and chart, the key destination's parent).
func resolveKubernetes(p *Plan, o UpOptions) (*KubernetesPlan, error) {
	ko := o.Kubernetes
	kp := &KubernetesPlan{selection: ko.Images}
	const selOption = controlplane.EnvControllerImage + " and " + controlplane.EnvRuntimeImage
	if err := ko.Images.Validate(); err != nil {
		return nil, &OptionError{Option: selOption, Value: ko.Images.Controller + ", " + ko.Images.Runtime, Rule: "break the selection rule: " + err.Error()}
	}
	var err error
	if kp.postgres, err = digestImage(controlplane.EnvPostgresImage, ko.PostgresImage, p.pins.OCE.PostgresImage, controlplane.PostgresImage); err != nil {
		return nil, err
	}
	kp.PostgresImage = kp.postgres.DigestReference()
	if ko.Images.Selected() {
		kp.Controller, kp.Runtime = ko.Images.Controller, ko.Images.Runtime
	} else {
		if kp.nodeBase, err = digestImage(controlplane.EnvNodeBaseImage, ko.NodeBaseImage, p.pins.OCE.NodeBaseImage, controlplane.NodeBaseImage); err != nil {
			return nil, err
		}
		kp.NodeBaseImage = kp.nodeBase.DigestReference()
	}

	kp.APIPort = o.DevPort
	if kp.APIPort == 0 {
		kp.APIPort = defaultDevPort
	}
	if kp.APIPort < 1 || kp.APIPort > 65535 {
		return nil, &OptionError{Option: "--dev-port (" + envDevPort + ")", Value: strconv.Itoa(kp.APIPort), Rule: "must be between 1 and 65535", Fix: "choose a free port on 127.0.0.1 (default 3000)"}
	}
	if kp.APIPort == p.APIPort {
		return nil, &OptionError{Option: "--dev-port (" + envDevPort + ")", Value: strconv.Itoa(kp.APIPort), Rule: "is also the Kubernetes API port: development API and Kubernetes API ports must differ",
			Fix: "choose another " + envDevPort + " or --api-port"}
	}
	kp.APIURL = "http://127.0.0.1:" + strconv.Itoa(kp.APIPort)

	checkout, err := controlplane.FindCheckout(controlplane.FindCheckoutOptions{Flag: o.Repository, Env: o.RepositoryEnv})
	if errors.Is(err, controlplane.ErrNoCheckout) {
		kp.NotStarted = "not started: " + err.Error() + "; only the sandbox platform is up (the Gateway as a ClusterIP Service, and the Installation that names it)"
		return kp, nil
	}
	if err != nil {
		var nc *controlplane.NotCheckoutError
		if errors.As(err, &nc) {
			return nil, &OptionError{Option: nc.Option, Value: nc.Value, Rule: "is not an OpenClaw Enterprise checkout (" + err.Error() + ")", Fix: "point it at an OCE checkout"}
		}
		return nil, err
	}
	if p.ClusterProvider != ProviderK3d {
		return nil, &OptionError{Option: "--cluster-provider (OCC_DEVELOPMENT_CLUSTER_PROVIDER)", Value: p.ClusterProvider,
			Rule: "cannot run the Kubernetes-only control plane: its images are imported into the node of the k3d cluster occ creates",
			Fix:  "use --cluster-provider k3d with --control-plane kubernetes, or the Compose control plane"}
	}
	kp.Checkout, kp.Commit, kp.Source = checkout.Root, checkout.Commit, checkout.Source
	if kp.chart, err = kubernetes.LoadChart(checkout.Root); err != nil {
		return nil, err
	}
	if kp.dest, err = controlplane.ResolveKeyDestination(o.KeyOutput, p.StateDir); err != nil {
		return nil, err
	}
	kp.KeyFile, kp.KeyOwned = kp.dest.Path, kp.dest.Owned
	return kp, nil
}

// digestImage resolves an image the profile pulls by digest: the override (named by env) or
// the pin, through the control-plane layer's rule for it.
func digestImage(env, override string, pinned pins.Image, rule func(string, pins.Image) (string, error)) (pins.Image, error) {
	ref, err := rule(override, pinned)
	if err != nil {
		return pins.Image{}, &OptionError{Option: env, Value: override, Rule: "is refused: " + err.Error()}
	}
	img, err := pins.ParseImage(ref)
	if err != nil {
		return pins.Image{}, &OptionError{Option: env, Value: override, Rule: "is not an image reference: " + err.Error()}
	}
	return img, nil
}

// kubernetesPreflight refuses, before the state is claimed, an API port something already
// listens on, and selected images that are not in the engine or whose revision label is not
// the checkout's commit.
func kubernetesPreflight(ctx context.Context, r *run) error {
	kp := r.plan.Kubernetes
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(kp.APIPort)))
	if err != nil {
		return &OptionError{Option: "--dev-port (" + envDevPort + ")", Value: strconv.Itoa(kp.APIPort),
			Rule: "is already in use on 127.0.0.1 (" + err.Error() + "); the OCE API is published there", Fix: "choose a free port"}
	}
	_ = l.Close()
	if !kp.selection.Selected() {
		return nil
	}
	if _, err := controlplane.VerifySelectedImages(ctx, r.engine.API, kp.selection, kp.Commit); err != nil {
		return &OptionError{Option: controlplane.EnvControllerImage + " and " + controlplane.EnvRuntimeImage, Value: kp.Controller + ", " + kp.Runtime,
			Rule: "are refused for checkout " + kp.Checkout + ": " + err.Error()}
	}
	return nil
}

func describeSelectedImages(p *Plan) Description {
	return note("nothing created; uses the selected " + p.Kubernetes.Controller + " and " + p.Kubernetes.Runtime + " (checked before the state was claimed: present in the engine, revision label " + p.Kubernetes.Commit + ")")
}

// useSelectedImages takes the selected images for the import: they are in the engine under
// their digests (the preflight checked), so nothing is pulled.
func useSelectedImages(ctx context.Context, r *run, _ progress.Reporter) error {
	kp := r.plan.Kubernetes
	var err error
	for _, s := range []struct {
		ref string
		out *images.Local
	}{{kp.Controller, &r.kube.controller}, {kp.Runtime, &r.kube.runtime}} {
		pin, perr := pins.ParseImage(s.ref)
		if perr != nil {
			return perr
		}
		if *s.out, err = images.Present(ctx, images.PresentOptions{API: r.engine.API, Image: pin, Recorder: r.state}); err != nil {
			return err
		}
	}
	r.extra = append(r.extra, r.kube.controller, r.kube.runtime)
	return nil
}

func describeNodeBase(p *Plan) Description {
	return creates("image " + p.Kubernetes.NodeBaseImage + " in the Docker engine, pulled by digest unless the engine has it (NODE_BASE_IMAGE of the controller build)")
}

// pullNodeBase makes the controller build's base image present by its digest, so the build
// uses exactly the pinned (or overridden) Node 24.
func pullNodeBase(ctx context.Context, r *run, rep progress.Reporter) error {
	_, err := images.Present(ctx, images.PresentOptions{API: r.engine.API, Image: r.plan.Kubernetes.nodeBase, Recorder: r.state, Progress: pullProgress(rep)})
	return err
}

func describeBuild(p *Plan) Description {
	return creates(
		"file "+filepath.Join(p.StateDir, buildLogFile)+" (the build output)",
		"image "+controlplane.DefaultControllerTag+" built through the engine's BuildKit from "+p.Kubernetes.Checkout+"/"+controlplane.ControllerDockerfile+" (target "+controlplane.ControllerTarget+", "+controlplane.NodeBaseImageArg+"="+p.Kubernetes.NodeBaseImage+")",
		"image "+controlplane.DefaultRuntimeTag+" built from "+p.Kubernetes.Checkout+"/"+controlplane.RuntimeDockerfile,
	)
}

// buildImages builds the controller and the Agent runtime from the checkout; the build output
// goes to image-build.log in the state directory, a failure carries the failing step's last
// lines (the log goes with the state directory when the run is rolled back), and the images
// travel on by the IDs their builds reported.
func buildImages(networkMode string) func(context.Context, *run, progress.Reporter) error {
	return func(ctx context.Context, r *run, rep progress.Reporter) error {
		kp := r.plan.Kubernetes
		logPath := r.state.File(buildLogFile)
		out, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return fmt.Errorf("open the build log: %w", err)
		}
		defer out.Close()
		rep.Note("build output in " + logPath)
		built, err := controlplane.PrepareControlPlaneImages(ctx, r.engine.API, controlplane.ImageOptions{
			Checkout: kp.Checkout, Commit: kp.Commit, NodeBaseImage: kp.NodeBaseImage, NetworkMode: networkMode,
			Progress: func(line string) { fmt.Fprintln(out, line) },
		})
		if err != nil {
			return err // it carries the failing step's last lines; the log goes with a rolled-back state
		}
		if r.kube.controller, err = images.Built(ctx, r.engine.API, built.Controller.Reference, built.Controller.ID); err != nil {
			return err
		}
		if r.kube.runtime, err = images.Built(ctx, r.engine.API, built.Runtime.Reference, built.Runtime.ID); err != nil {
			return err
		}
		rep.Note(fmt.Sprintf("controller %s, Agent runtime %s", built.Controller.ID, built.Runtime.ID))
		r.extra = append(r.extra, r.kube.controller, r.kube.runtime)
		return nil
	}
}

func describePostgres(p *Plan) Description {
	return creates("image " + p.Kubernetes.PostgresImage + " in the Docker engine, pulled by digest unless the engine has it (an image that was there is left alone by down)")
}

func pullPostgres(ctx context.Context, r *run, rep progress.Reporter) error {
	l, err := images.Present(ctx, images.PresentOptions{API: r.engine.API, Image: r.plan.Kubernetes.postgres, Recorder: r.state, Progress: pullProgress(rep)})
	if err != nil {
		return err
	}
	r.kube.postgres = l
	r.extra = append(r.extra, l)
	return nil
}

// inCluster is the verified in-cluster reference of an imported image.
func (r *run) inCluster(l images.Local) (string, error) {
	for _, v := range r.verified {
		if v.Pin.Name() == l.Pin.Name() && v.Pin.Digest == l.Pin.Digest {
			return v.Reference, nil
		}
	}
	return "", fmt.Errorf("image %s was not verified in the node (a bug in occ: the import step skipped it)", l.Pin)
}

// kubernetesInstallation adds Kubernetes Compute's in-cluster part to the Installation: the
// Agent runtime by its in-cluster digest, and the node and Gateway Service as the cluster
// reports them (the Gateway's ClusterIP Service checked to serve its port).
func kubernetesInstallation(ctx context.Context, r *run, in *platform.InstallationInput) error {
	runtime, err := r.inCluster(r.kube.runtime)
	if err != nil {
		return err
	}
	got, err := kubernetes.BuildInstallationInput(ctx, r.conn.Kube, kubernetes.InstallationRequest{
		Namespace: r.plan.Namespace, GatewayService: platform.GatewayServiceName, GatewayPort: platform.GatewayPort, RuntimeImage: runtime,
	})
	if err != nil {
		return err
	}
	if got.GatewayEndpoint != in.GatewayEndpoint || got.GatewayClusterIP != in.GatewayClusterIP {
		return fmt.Errorf("the Gateway Service answers as %s (ClusterIP %s), but the platform names %s (ClusterIP %s): refusing to write an Installation that points elsewhere",
			got.GatewayEndpoint, got.GatewayClusterIP, in.GatewayEndpoint, in.GatewayClusterIP)
	}
	in.InCluster = &platform.InClusterCompute{
		RuntimeImage:                 got.Images.Agent,
		GatewayStorageClassName:      got.Runtime.GatewayStorageClassName,
		TransportSecretPrefix:        got.Runtime.TransportSecretPrefix,
		GatewayNodeSelector:          got.Runtime.GatewayNodeSelector,
		PluginStatusProxySourceCIDRs: got.PluginStatusProxySourceCIDRs,
		GatewayTrustedProxyCIDRs:     got.GatewayTrustedProxyCIDRs,
	}
	return nil
}

// controlPlane builds the in-cluster control plane on first use, from the verified images, the
// written Installation, the checkout's chart and the cluster's network.
func (r *run) controlPlane(ctx context.Context) (*kubernetes.ControlPlane, error) {
	if r.kube.cp != nil {
		return r.kube.cp, nil
	}
	controller, err := r.inCluster(r.kube.controller)
	if err != nil {
		return nil, err
	}
	postgres, err := r.inCluster(r.kube.postgres)
	if err != nil {
		return nil, err
	}
	net, err := r.engine.API.NetworkInspect(ctx, r.conn.Access.Network, network.InspectOptions{})
	if err != nil {
		return nil, fmt.Errorf("inspect the cluster's network %s: %w", r.conn.Access.Network, err)
	}
	var subnets []string
	for _, c := range net.IPAM.Config {
		subnets = append(subnets, c.Subnet)
	}
	cp, err := kubernetes.New(r.conn, kubernetes.Config{
		Namespace: r.plan.Namespace, ControllerImage: controller, PostgresImage: postgres, HostAPIPort: r.plan.Kubernetes.APIPort,
		InstallationFile: r.installationPath, Chart: r.plan.Kubernetes.chart, NodeNetwork: r.conn.Access.Network, NodeSubnets: subnets,
		StartupTimeout: r.plan.StartupTimeout, Random: r.opts.Kubernetes.Random,
		HelmLog: func(format string, args ...any) { fmt.Fprintf(r.log, "helm: "+format+"\n", args...) },
	})
	if err != nil {
		return nil, err
	}
	r.kube.cp = cp
	return cp, nil
}

// apiClient is the client of the OCE API calls (timeout is OCC's per-call bound).
func (r *run) apiClient() *http.Client {
	if c := r.opts.Kubernetes.APIClient; c != nil {
		return c
	}
	return controlplane.NewAPIClient(controlplane.APITimeout)
}

func describeAPIWait(p *Plan) Description {
	return note(fmt.Sprintf("nothing created; polls GET %s%s until it answers 2xx, up to %s", p.Kubernetes.APIURL, controlplane.SessionPath, p.StartupTimeout))
}

// waitForAPI polls the API's anonymous session endpoint through the development proxy (the
// NodePort k3d publishes on loopback), as the reference does before it reads the key.
func waitForAPI(ctx context.Context, r *run, _ progress.Reporter) error {
	ctx, cancel := context.WithTimeout(ctx, r.plan.StartupTimeout)
	defer cancel()
	client := r.opts.Kubernetes.APIClient
	return controlplane.WaitReady(ctx, controlplane.ReadinessOptions{APIURL: r.plan.Kubernetes.APIURL, Client: client})
}

func describeKeyCopy(p *Plan) Description {
	return creates(
		"Pod "+p.Namespace+"/"+kubernetes.ReaderPod+" (temporary: mounts the bootstrap volume read-only, removed again even on failure)",
		"file "+filepath.Join(p.StateDir, passwordFileName)+" (0600, the administrator password)",
		"file "+p.Kubernetes.KeyFile+" (0600, written once, only after GET /installation with the key in x-api-key answered its Installation)",
	)
}

// copyKey reads the bootstrap output through the reader Pod, verifies the service key against
// the live Installation through the proxy, and writes the key and the password.
func copyKey(ctx context.Context, r *run, _ progress.Reporter) error {
	kp := r.plan.Kubernetes
	controller, err := r.inCluster(r.kube.controller)
	if err != nil {
		return err
	}
	exec := r.opts.Kubernetes.Exec
	if exec == nil {
		exec = kubernetes.APIExec{Config: r.conn.Config, Client: r.conn.Kube}
	}
	res, err := kubernetes.CopyBootstrapKey(ctx, r.conn, exec,
		controlplane.KeyInstaller{StateDir: r.state.Path(), Destination: kp.dest, APIURL: kp.APIURL, Client: r.apiClient()},
		kubernetes.KeyCopy{Namespace: r.plan.Namespace, ControllerImage: controller, PasswordFile: r.state.File(passwordFileName), Timeout: r.plan.StartupTimeout})
	if err != nil {
		return err
	}
	if !kp.dest.Owned {
		r.kube.keyWritten = kp.dest.Path
	}
	data, err := os.ReadFile(kp.dest.Path)
	if err != nil {
		return fmt.Errorf("read back the written service key %s: %w", kp.dest.Path, err)
	}
	if r.kube.serviceKey, err = controlplane.ParseServiceKey(data); err != nil {
		return err
	}
	r.kube.key = res
	return nil
}

func describeNamespaceWait(p *Plan) Description {
	return note("nothing created; waits for the one Kubernetes namespace labelled " + controlplane.NamespaceLabel + " the worker provisions, then polls GET /namespaces/<id> until OCC reports it ready")
}

func waitForNamespace(ctx context.Context, r *run, _ progress.Reporter) error {
	ctx, cancel := context.WithTimeout(ctx, r.plan.StartupTimeout)
	defer cancel()
	ns, err := controlplane.WaitBootstrapNamespace(ctx, controlplane.NamespaceWaitOptions{
		Kubernetes: r.conn.Kube, APIURL: r.plan.Kubernetes.APIURL, Key: r.kube.serviceKey, Client: r.apiClient(),
	})
	if err != nil {
		return err
	}
	r.kube.namespace = ns
	return nil
}

// undoKubernetes removes a key this failed run wrote at --key-output: no record holds it and
// `down` never deletes the user's file, so only the run that wrote it may.
func undoKubernetes(r *run) error {
	if r.kube.keyWritten == "" {
		return nil
	}
	if err := os.Remove(r.kube.keyWritten); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove copied service key: %w", err)
	}
	r.kube.keyWritten = ""
	return nil
}

// OCESummary is what a started OCE control plane adds to the summary (reference §3.2 step 23).
type OCESummary struct {
	// Drivers are the Compute and Sandbox drivers of the Installation.
	Drivers string `json:"drivers"`
	// Checkout and Commit are where the control plane was built from.
	Checkout string `json:"checkout"`
	Commit   string `json:"commit"`
	// APIURL is the OCE API (through the development proxy).
	APIURL         string `json:"apiURL"`
	InstallationID string `json:"installationID"`
	// KeyFile is the verified bootstrap service key (0600); never its content.
	KeyFile string `json:"keyFile"`
	// AdminEmail and PasswordFile are the first administrator's sign-in.
	AdminEmail   string `json:"adminEmail"`
	PasswordFile string `json:"passwordFile"`
	// Namespace is the bootstrap Namespace, ready.
	Namespace string `json:"namespace"`
}

func kubernetesSummary(r *run, s *Summary) {
	kp := r.plan.Kubernetes
	s.OCE = &OCESummary{
		Drivers: "compute kubernetes, sandbox openshell", Checkout: kp.Checkout, Commit: kp.Commit,
		APIURL: kp.APIURL, InstallationID: r.kube.key.InstallationID, KeyFile: kp.KeyFile,
		AdminEmail: r.kube.key.AdminEmail, PasswordFile: r.kube.key.PasswordFile,
		Namespace: r.kube.namespace.ID + " (Kubernetes namespace " + r.kube.namespace.KubernetesName + ")",
	}
}
