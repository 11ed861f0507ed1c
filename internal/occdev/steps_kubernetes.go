package occdev

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/network"
	"helm.sh/helm/v3/pkg/chart"

	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/controlplane/kubernetes"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/occdev/step"
	"github.com/openclaw/occ/internal/progress"
)

// KubernetesOptions are the Kubernetes-only control plane's own settings (the checkout, the
// selected images and the key destination are the shared OCEOptions).
type KubernetesOptions struct {
	// DevPort is the OCE API's port on 127.0.0.1 (OPENCLAW_DEV_PORT); 0 is 3000.
	DevPort int
	// PostgresImage replaces the pinned PostgreSQL image (OCC_DEVELOPMENT_POSTGRES_IMAGE), by
	// digest.
	PostgresImage string
}

// The Kubernetes-only profile's settings names and files, for messages.
const (
	// EnvDevPort is the OCE API's port on 127.0.0.1.
	EnvDevPort       = "OPENCLAW_DEV_PORT"
	buildLogFile     = "image-build.log"
	defaultDevPort   = 3000
	passwordFileName = kubernetes.PasswordFileName
)

// KubernetesPlan is what the Kubernetes-only profile adds to the OCE plan: where the API is
// published and which images it pulls by digest, decided before anything happens.
type KubernetesPlan struct {
	// APIURL is where the OCE API answers: the development proxy's NodePort 30080, published by
	// k3d on 127.0.0.1 at APIPort (OPENCLAW_DEV_PORT).
	APIPort int    `json:"apiPort"`
	APIURL  string `json:"apiURL"`
	// ControllerImage is the controller as built (its tag) or selected (its digest reference).
	ControllerImage string `json:"controllerImage"`
	// PostgresImage is the PostgreSQL image, by digest.
	PostgresImage string `json:"postgresImage"`

	postgres pins.Image
	chart    *chart.Chart
}

// kubernetesRun is the Kubernetes-only control plane's part of one `up`: the images of its
// image steps, the control plane, and what its last steps produced.
type kubernetesRun struct {
	controller, runtime, postgres images.Local
	cp                            *kubernetes.ControlPlane
	// key is what the bootstrap key copy read besides the key (the administrator's e-mail and
	// password file).
	key kubernetes.KeyResult
}

// kubernetesProfile is the Kubernetes-only control plane: OCE's PostgreSQL,
// API and worker installed into the k3d cluster from the checkout's production chart, reached
// only through the development API proxy, whose NodePort 30080 k3d publishes on 127.0.0.1. The
// controller and Agent runtime are built from the checkout (or selected by digest), PostgreSQL
// pulled by its pinned digest, and all three imported into the node in one pass and verified
// there with the OpenShell images. Everything it creates lives in the cluster, so `down`
// deleting the recorded cluster removes it; no Compose is involved. The checkout, the image
// selection and the key destination are decided as for Compose (findOCE, newOCEPlan).
func kubernetesProfile(p *Plan, o UpOptions) (flowProfile, error) {
	if len(o.OCE.ComposeArgs) > 0 {
		return flowProfile{}, &OptionError{Option: "Compose options after --", Value: strings.Join(o.OCE.ComposeArgs, " "),
			Rule: "the Kubernetes-only profile does not accept Compose options", Fix: "drop them, or use --control-plane compose"}
	}
	kp, err := resolveKubernetes(p, o)
	if err != nil {
		return flowProfile{}, err
	}
	co, pending, err := findOCEOnK3d(p, o, "the Kubernetes-only control plane runs images occ imports into the node of the k3d cluster it creates")
	if err != nil {
		return flowProfile{}, err
	}
	if pending != "" {
		return flowProfile{pending: pending}, nil
	}
	op, err := newOCEPlan(p, o, co)
	if err != nil {
		return flowProfile{}, err
	}
	if kp.chart, err = kubernetes.LoadChart(co.Root); err != nil {
		return flowProfile{}, err
	}
	if sel := op.SelectedImages; sel != nil {
		kp.ControllerImage = sel.Controller
	} else {
		kp.ControllerImage = controlplane.DefaultControllerTag
		nodeBase, err := controlplane.NodeBaseImage("", p.pins.OCE.NodeBaseImage)
		if err != nil {
			return flowProfile{}, err
		}
		if err := planBuilds(op, o, []controlplane.BuildPlanRequest{
			{Role: roleController, ContextDir: co.Root, Dockerfile: controlplane.ControllerDockerfile, Target: controlplane.ControllerTarget,
				Args: map[string]controlplane.BuildArg{controlplane.NodeBaseImageArg: {Value: nodeBase, Source: "occ's pin oce.nodeBaseImage (" + p.pins.Source + ")"}}},
			{Role: roleRuntime, ContextDir: co.Root, Dockerfile: controlplane.RuntimeDockerfile},
		}); err != nil {
			return flowProfile{}, err
		}
	}
	// The chart is rendered now with the values the install will pass, so a chart that refuses
	// them stops `up` and the dry run before anything exists.
	in, err := kubernetes.PlaceholderValuesInput(p.Namespace, kp.ControllerImage, kp.APIPort)
	if err != nil {
		return flowProfile{}, err
	}
	values, err := kubernetes.BuildValues(in)
	if err != nil {
		return flowProfile{}, err
	}
	if err := kubernetes.CheckChart(kp.chart, p.Namespace, values); err != nil {
		return flowProfile{}, err
	}
	op.Kubernetes = kp
	p.OCE = op

	prof := flowProfile{
		cluster:       cluster.Needs{Publish: []cluster.Port{{HostPort: kp.APIPort, NodePort: kubernetes.ProxyNodePort}}},
		preflight:     kubernetesPreflight,
		beforeCluster: []Step{{Name: "Record the OCE control plane", Describe: describeKubeRecord, Run: recordKubeControlPlane}},
		imports:       func(r *run) []images.Local { return []images.Local{r.kube.controller, r.kube.runtime, r.kube.postgres} },
		importNames:   kubernetesImportNames,
		installation:  kubernetesInstallation,
		rollback:      removeWrittenKey,
		summary:       kubernetesSummary,
	}
	if op.SelectedImages == nil {
		prof.beforeCluster = append(prof.beforeCluster,
			Step{Name: "Pull the base images of the control-plane builds", Describe: describeBasePulls, Run: pullBases},
			Step{Name: "Build the controller and Agent runtime images from the checkout", Describe: describeKubeBuild, Run: buildKubeImages(o.deps.BuildNetwork)},
		)
	} else {
		prof.beforeCluster = append(prof.beforeCluster, Step{Name: "Use the selected controller and Agent runtime images", Describe: describeSelectedImages, Run: useSelectedImages})
	}
	prof.beforeCluster = append(prof.beforeCluster, Step{Name: "Pull the PostgreSQL image", Describe: describePostgres, Run: pullPostgres})

	prof.controlPlane = step.Adapt(kubernetes.Steps(), func(p *Plan) kubernetes.Config {
		return kubernetes.Config{Namespace: p.Namespace, StartupTimeout: p.StartupTimeout, HostAPIPort: p.OCE.Kubernetes.APIPort}
	}, func(ctx context.Context, r *run) (*kubernetes.ControlPlane, error) { return r.controlPlane(ctx) })
	prof.controlPlane = append(prof.controlPlane,
		Step{Name: "Wait for the OCE API through the development proxy", Describe: describeKubeAPIWait, Run: waitForKubeAPI},
		copyKeyStep(describeKubeKey, copyKubeKey),
		namespaceWaitStep(oceAPI{url: kp.APIURL, client: (*run).apiClient}),
	)
	return prof, nil
}

// resolveKubernetes checks the profile's own settings (no I/O): the API's host port and the
// images pulled by digest.
func resolveKubernetes(p *Plan, o UpOptions) (*KubernetesPlan, error) {
	ko := o.Kubernetes
	kp := &KubernetesPlan{}
	var err error
	if kp.postgres, err = digestImage(controlplane.EnvPostgresImage, ko.PostgresImage, p.pins.OCE.PostgresImage, controlplane.PostgresImage); err != nil {
		return nil, err
	}
	kp.PostgresImage = kp.postgres.DigestReference()
	kp.APIPort = ko.DevPort
	if kp.APIPort == 0 {
		kp.APIPort = defaultDevPort
	}
	if kp.APIPort < 1 || kp.APIPort > 65535 {
		return nil, &OptionError{Option: EnvDevPort, Value: strconv.Itoa(kp.APIPort), Rule: "must be between 1 and 65535", Fix: "choose a free port on 127.0.0.1 (default 3000)"}
	}
	if kp.APIPort == p.APIPort {
		return nil, &OptionError{Option: EnvDevPort, Value: strconv.Itoa(kp.APIPort), Rule: "is also the Kubernetes API port: development API and Kubernetes API ports must differ",
			Fix: "choose another " + EnvDevPort + " or --api-port"}
	}
	kp.APIURL = "http://127.0.0.1:" + strconv.Itoa(kp.APIPort)
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
// the checkout's commit (the shared check of the Compose profile).
func kubernetesPreflight(ctx context.Context, r *run, _ progress.Reporter) error {
	op, kp := r.plan.OCE, r.plan.OCE.Kubernetes
	if err := checkBuilder(r); err != nil {
		return err
	}
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(kp.APIPort)))
	if err != nil {
		return &OptionError{Option: EnvDevPort, Value: strconv.Itoa(kp.APIPort),
			Rule: "is already in use on 127.0.0.1 (" + err.Error() + "); the OCE API is published there", Fix: "choose a free port"}
	}
	_ = l.Close()
	sel := op.SelectedImages
	if sel == nil {
		return nil
	}
	imgs, err := controlplane.VerifySelectedImages(ctx, r.engine.API, *sel, op.Commit)
	if err != nil {
		return err
	}
	if r.kube.controller, err = selectedLocal(ctx, r, imgs.Controller); err != nil {
		return err
	}
	r.kube.runtime, err = selectedLocal(ctx, r, imgs.Runtime)
	return err
}

func describeKubeRecord(p *Plan) Description {
	op := p.OCE
	return creates("record of the OCE control plane: checkout " + op.Checkout + " at " + op.Commit + ", API " + op.Kubernetes.APIURL + " (no Compose project: everything it creates is in the cluster)")
}

// recordKubeControlPlane records the control plane before any of it exists, so `status` and
// `down` know it; the cluster's record holds everything it will create.
func recordKubeControlPlane(_ context.Context, r *run, _ progress.Reporter) error {
	op := r.plan.OCE
	cp := &state.ControlPlane{Checkout: op.Checkout, Commit: op.Commit, APIURL: op.Kubernetes.APIURL}
	if err := r.state.Update(func(s *state.State) { s.ControlPlane = cp }); err != nil {
		return fmt.Errorf("record the control plane: %w", err)
	}
	return nil
}

func describeSelectedImages(p *Plan) Description {
	sel := p.OCE.SelectedImages
	return note("nothing built; imports the selected " + sel.Controller + " and " + sel.Runtime + " with the OpenShell images (checked in the preflight: present in the engine, revision label " + p.OCE.Commit + ")")
}

// useSelectedImages records the selected images the preflight found; nothing is pulled.
func useSelectedImages(_ context.Context, r *run, _ progress.Reporter) error {
	sel := r.plan.OCE.SelectedImages
	return r.recordImages(
		state.ControlPlaneImage{Role: "controller", Reference: sel.Controller, ID: r.kube.controller.ID, Selected: true},
		state.ControlPlaneImage{Role: "runtime", Reference: sel.Runtime, ID: r.kube.runtime.ID, Selected: true})
}

func describeKubeBuild(p *Plan) Description {
	op := p.OCE
	return creates(
		"file "+filepath.Join(p.StateDir, buildLogFile)+" (the build output)",
		"image "+controlplane.DefaultControllerTag+" built through the engine's BuildKit from "+op.Checkout+"/"+controlplane.ControllerDockerfile+" (target "+controlplane.ControllerTarget+", "+buildArgs(op.plannedBuild(roleController))+"), imported into the node by its config digest",
		"image "+controlplane.DefaultRuntimeTag+" built from "+op.Checkout+"/"+controlplane.RuntimeDockerfile+" ("+buildArgs(op.plannedBuild(roleRuntime))+"), imported into the node by its config digest",
	)
}

// buildArgs says which build arguments occ passes, for the dry run; each base comes in by the
// digest the pull step records.
func buildArgs(b *controlplane.PlannedBuild) string {
	if b == nil || len(b.Args) == 0 {
		return "no build arguments but the digests of the bases pulled before"
	}
	keys := make([]string, 0, len(b.Args))
	for k, v := range b.Args {
		keys = append(keys, k+"="+v)
	}
	slices.Sort(keys)
	return strings.Join(keys, " ")
}

// buildKubeImages builds the controller and the Agent runtime from the checkout; the build
// output goes to image-build.log in the state directory, a failure carries the failing step's
// last lines, and the images travel on by the IDs their builds reported.
func buildKubeImages(networkMode string) func(context.Context, *run, progress.Reporter) error {
	return func(ctx context.Context, r *run, rep progress.Reporter) error {
		op := r.plan.OCE
		logPath := r.state.File(buildLogFile)
		out, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return fmt.Errorf("open the build log: %w", err)
		}
		defer out.Close()
		rep.Note("build output in " + logPath)
		opts := controlplane.ImageOptions{
			Checkout: op.Checkout, Commit: op.Commit, NetworkMode: networkMode,
			ControllerArgs: op.plannedBuild(roleController).WithResolved(r.bases),
			RuntimeArgs:    op.plannedBuild(roleRuntime).WithResolved(r.bases),
		}
		if err := opts.CheckBuilds(); err != nil {
			return err
		}
		creq, rreq := controlplane.BuildRequests(opts)
		built, err := buildControlPlaneImages(ctx, r, []recordedBuild{recordBuild(roleController, creq), recordBuild(roleRuntime, rreq)},
			func(line string) { fmt.Fprintln(out, line) })
		if err != nil {
			return err
		}
		r.kube.controller, r.kube.runtime = built[roleController], built[roleRuntime]
		rep.Note(fmt.Sprintf("controller %s, Agent runtime %s", r.kube.controller.ID, r.kube.runtime.ID))
		return nil
	}
}

func describePostgres(p *Plan) Description {
	return creates("image " + p.OCE.Kubernetes.PostgresImage + " in the " + engineName(p) + " engine, pulled by digest unless the engine has it (an image that was there is left alone by down), imported into the node with the control plane's other images")
}

func pullPostgres(ctx context.Context, r *run, rep progress.Reporter) error {
	kp := r.plan.OCE.Kubernetes
	l, err := images.Present(ctx, images.PresentOptions{API: r.engine.API, EngineName: r.engine.Name(), Image: kp.postgres, Recorder: r.state, Progress: pullProgress(rep)})
	if err != nil {
		return err
	}
	r.kube.postgres = l
	return r.recordImages(state.ControlPlaneImage{Role: "postgres", Reference: kp.PostgresImage, ID: l.ID})
}

// kubernetesImportNames are the control plane's images as the import names them: a built image
// by its config digest, known only once built.
func kubernetesImportNames(p *Plan) []string {
	op := p.OCE
	if sel := op.SelectedImages; sel != nil {
		return []string{sel.Controller, sel.Runtime, op.Kubernetes.PostgresImage}
	}
	return []string{controlplane.DefaultControllerTag + " (built, by its config digest)", controlplane.DefaultRuntimeTag + " (built, by its config digest)", op.Kubernetes.PostgresImage}
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
// Agent runtime by its in-cluster digest (every image required to be digest-pinned), and the
// node and Gateway Service as the cluster reports them (the Gateway's ClusterIP Service
// checked to serve its port, and to be the one the platform names).
func kubernetesInstallation(ctx context.Context, r *run, in *platform.InstallationInput) error {
	refs := map[string]string{}
	for role, l := range map[string]images.Local{"controller": r.kube.controller, "runtime": r.kube.runtime, "postgres": r.kube.postgres} {
		ref, err := r.inCluster(l)
		if err != nil {
			return err
		}
		refs[role] = ref
	}
	got, err := kubernetes.BuildInstallationInput(ctx, r.conn.Kube, kubernetes.InstallationRequest{
		Namespace: r.plan.Namespace, GatewayService: platform.GatewayServiceName, GatewayPort: platform.GatewayPort, RuntimeImage: refs["runtime"],
	})
	if err != nil {
		return err
	}
	if got.GatewayEndpoint != in.GatewayEndpoint || got.GatewayClusterIP != in.GatewayClusterIP {
		return fmt.Errorf("the Gateway Service answers as %s (ClusterIP %s), but the platform names %s (ClusterIP %s): refusing to write an Installation that points elsewhere",
			got.GatewayEndpoint, got.GatewayClusterIP, in.GatewayEndpoint, in.GatewayClusterIP)
	}
	in.Compute = got.Compute
	return r.state.Update(func(s *state.State) {
		for i := range s.ControlPlane.Images {
			s.ControlPlane.Images[i].InCluster = refs[s.ControlPlane.Images[i].Role]
		}
	})
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
	kp := r.plan.OCE.Kubernetes
	cp, err := kubernetes.New(r.conn, kubernetes.Config{
		Namespace: r.plan.Namespace, ControllerImage: controller, PostgresImage: postgres, HostAPIPort: kp.APIPort,
		InstallationFile: r.installationPath, Chart: kp.chart, NodeNetwork: r.conn.Access.Network, NodeSubnets: subnets,
		StartupTimeout: r.plan.StartupTimeout, Random: r.opts.deps.Random,
		HelmLog: func(format string, args ...any) { fmt.Fprintf(r.log, "helm: "+format+"\n", args...) },
	})
	if err != nil {
		return nil, err
	}
	r.kube.cp = cp
	return cp, nil
}

// apiClient is the client of the OCE API calls (nil: each call's own default).
func (r *run) apiClient() *http.Client { return r.opts.deps.APIClient }

func describeKubeAPIWait(p *Plan) Description {
	return note(fmt.Sprintf("nothing created; polls GET %s%s through the development proxy until it answers 2xx, up to %s", p.OCE.Kubernetes.APIURL, controlplane.SessionPath, p.StartupTimeout))
}

// waitForKubeAPI polls the API's anonymous session endpoint through the development proxy
// (the NodePort k3d publishes on loopback), as the reference does before it reads the key.
func waitForKubeAPI(ctx context.Context, r *run, _ progress.Reporter) error {
	ctx, cancel := context.WithTimeout(ctx, r.plan.StartupTimeout)
	defer cancel()
	return controlplane.WaitReady(ctx, controlplane.ReadinessOptions{APIURL: r.plan.OCE.Kubernetes.APIURL, Client: r.apiClient()})
}

func describeKubeKey(p *Plan) Description {
	return creates(
		"Pod "+p.Namespace+"/"+kubernetes.ReaderPod+" (temporary: mounts the bootstrap volume read-only, its files read through the API's exec; removed again even on failure)",
		"file "+filepath.Join(p.StateDir, passwordFileName)+" (0600, the administrator password)",
		"file "+p.OCE.KeyFile+" (O_EXCL, 0600, written only after GET /installation with the key in x-api-key through the proxy answered its Installation)",
	)
}

// copyKubeKey reads the bootstrap output through the reader Pod, verifies the service key
// against the live Installation through the proxy, and writes the key and the password.
func copyKubeKey(ctx context.Context, r *run) (controlplane.InstalledKey, error) {
	op := r.plan.OCE
	controller, err := r.inCluster(r.kube.controller)
	if err != nil {
		return controlplane.InstalledKey{}, err
	}
	exec := r.opts.deps.Exec
	if exec == nil {
		exec = kubernetes.APIExec{Config: r.conn.Config, Client: r.conn.Kube}
	}
	res, err := kubernetes.CopyBootstrapKey(ctx, r.conn, exec,
		controlplane.KeyInstaller{StateDir: r.state.Path(), Destination: op.keyDest, APIURL: op.Kubernetes.APIURL, Client: r.apiClient()},
		kubernetes.KeyCopy{Namespace: r.plan.Namespace, ControllerImage: controller, PasswordFile: r.state.File(passwordFileName), Timeout: r.plan.StartupTimeout})
	if err != nil {
		return controlplane.InstalledKey{}, err
	}
	r.kube.key = res
	return controlplane.InstalledKey{Path: op.keyDest.Path, Owned: op.keyDest.Owned, InstallationID: res.InstallationID}, nil
}

// kubernetesSummary is the control plane's part of the summary: the API URL, the verified key
// and its Installation, the bootstrap Namespace, the Agent runtime and the base images.
func kubernetesSummary(r *run) *OCESummary {
	op := r.plan.OCE
	runtime, _ := r.inCluster(r.kube.runtime)
	return &OCESummary{
		ControlPlane:   "Kubernetes (namespace " + r.plan.Namespace + ", chart from " + op.Checkout + " at " + shortCommit(op.Commit) + ")",
		Drivers:        "compute kubernetes, sandbox openshell",
		APIURL:         op.Kubernetes.APIURL,
		InstallationID: r.kube.key.InstallationID,
		KeyFile:        op.KeyFile,
		Namespace:      r.oce.namespace.ID,
		RuntimeImage:   runtime,
		AdminEmail:     r.kube.key.AdminEmail,
		PasswordFile:   r.kube.key.PasswordFile,
		BaseImages:     baseSummary(r),
	}
}

// roleController is the controller image's role in the plan and the state.
const roleController = "controller"
