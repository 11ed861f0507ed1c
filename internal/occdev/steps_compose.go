package occdev

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/controlplane/compose"
	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/progress"
)

// OCEOptions are the inputs of the OCE control plane (layer 3): where its source is, how its
// images are obtained, the Compose project's name and options, and where the verified bootstrap
// key goes.
type OCEOptions struct {
	// Repository is the OCE checkout (--repository, OCC_DEVELOPMENT_REPOSITORY); empty searches
	// from WorkingDir upwards. Without a checkout `up` stops after the sandbox platform.
	Repository string
	// WorkingDir is where that search starts and what relative paths (the checkout, Compose
	// files) are relative to; empty is the process's working directory.
	WorkingDir string
	// ComposeArgs are the Compose options given after `--` (-f/--file, --env-file,
	// --project-directory naming the checkout).
	ComposeArgs []string
	// ComposeProject is the Compose project name (OCC_DEVELOPMENT_COMPOSE_PROJECT); empty is
	// openclaw-enterprise-development-kubernetes.
	ComposeProject string
	// Environment is what Compose interpolation sees, as `docker compose config` would; nil is
	// the process environment.
	Environment map[string]string
	// Images selects prebuilt controller and Agent runtime images by digest
	// (OCC_DEVELOPMENT_CONTROLLER_IMAGE and OCC_KUBERNETES_RUNTIME_IMAGE, both or neither);
	// empty builds both from the checkout.
	Images controlplane.ImageSelection
	// KeyOutput is where the verified bootstrap key is written (--key-output: an absent
	// absolute canonical path in a private directory); empty is
	// <state>/initial-admin-service-key.json.
	KeyOutput string
	// NodeBaseImage and NodeRuntimeBaseImage replace the NODE_BASE_IMAGE and
	// NODE_RUNTIME_BASE_IMAGE build arguments of every image occ builds from the checkout
	// (OCC_DEVELOPMENT_NODE_BASE_IMAGE, OCC_DEVELOPMENT_NODE_RUNTIME_BASE_IMAGE), by digest;
	// empty keeps what the checkout (or occ's pin) gives.
	NodeBaseImage        string
	NodeRuntimeBaseImage string
}

// OCEPlan is the resolved control plane: the checkout and what the profile will start, decided
// (and the Compose model checked) before anything runs.
type OCEPlan struct {
	// Checkout is the OCE checkout's root, Commit its HEAD and CheckoutSource how it was found.
	Checkout       string `json:"checkout"`
	Commit         string `json:"commit"`
	CheckoutSource string `json:"checkoutSource"`
	// Compose is what the Compose project creates: services, volumes, networks, published
	// ports and the API URL.
	Compose *compose.Plan `json:"compose,omitempty"`
	// Builds are the images occ builds from the checkout (none when images are selected).
	Builds []compose.Build `json:"builds,omitempty"`
	// BuildPlans are every image build occ makes from the checkout (the Compose services',
	// the controller's, the Agent runtime's), each with the bases its Dockerfile fetches;
	// BaseImages are those bases, each once, as `up` pulls them by digest before any build.
	BuildPlans []*controlplane.PlannedBuild `json:"buildPlans,omitempty"`
	BaseImages []controlplane.BaseImage     `json:"baseImages,omitempty"`
	// RuntimeImage is the Agent runtime: its build tag, or the selected digest reference.
	RuntimeImage string `json:"runtimeImage"`
	// SelectedImages are the developer's prebuilt images, when selected.
	SelectedImages *controlplane.ImageSelection `json:"selectedImages,omitempty"`
	// KeyFile is where the verified bootstrap key will be written.
	KeyFile string `json:"keyFile"`
	// Kubernetes is what the Kubernetes-only profile installs into the cluster (nil for
	// Compose).
	Kubernetes *KubernetesPlan `json:"kubernetes,omitempty"`

	model   *compose.Model
	keyDest controlplane.KeyDestination
}

// composeRun is what the Compose profile's steps share during one `up`.
type composeRun struct {
	plugin compose.Plugin
	runner compose.Runner
	stack  compose.Stack
	// runtime is the Agent runtime image as the engine holds it (built or selected), and
	// runtimeRef its in-cluster digest reference once imported and verified.
	runtime    images.Local
	runtimeRef string
}

// composeProfile is the Compose control plane: OCE's postgres, migrate, bootstrap, controller
// and worker-kubernetes run as a Compose project beside the k3d cluster, which joins the
// project's development network and publishes the Gateway as NodePort 30051. Its steps, in the
// order OCE's own launcher takes them:
//
//   - preflight: the plugin found, no resource of the project exists, selected images present;
//   - before the cluster (cluster lane): the snapshot written and the project recorded, the
//     images built, postgres, migrate and bootstrap started and the jobs waited for;
//   - the cluster joins <project>_development; the Agent runtime is imported with the
//     OpenShell images; the Installation names it and the node;
//   - after the platform: controller and worker-kubernetes started, the API and the worker
//     ready, the bootstrap key copied and verified, the bootstrap Namespace ready.
//
// Without an OCE checkout only the sandbox platform comes up, and the summary says how to add
// the control plane.
func composeProfile(p *Plan, o UpOptions) (flowProfile, error) {
	if len(o.OCE.ComposeArgs) > 0 && p.ClusterProvider != ProviderK3d {
		return flowProfile{}, &OptionError{Option: "Compose options after --", Value: strings.Join(o.OCE.ComposeArgs, " "),
			Rule: "apply to the Compose control plane, which runs beside the k3d cluster occ creates", Fix: "use --cluster-provider k3d, or drop them"}
	}
	co, pending, err := findOCEOnK3d(p, o, "the Compose control plane reaches the cluster across the engine network the k3d cluster occ creates joins")
	if err != nil {
		return flowProfile{}, err
	}
	if pending != "" {
		return flowProfile{pending: pending}, nil
	}
	op, err := planCompose(p, o, co)
	if err != nil {
		return flowProfile{}, err
	}
	p.OCE = op
	before := []Step{{Name: "Write the Compose snapshot and record the project", Describe: describeSnapshot, Run: writeSnapshot}}
	if op.SelectedImages == nil {
		before = append(before, Step{Name: "Pull the base images of the control-plane builds", Describe: describeBasePulls, Run: pullBases})
	}
	before = append(before,
		Step{Name: "Build the control-plane images from the checkout", Describe: describeBuilds, Run: buildImages},
		Step{Name: "Start postgres, migrate and bootstrap", Describe: describeDataServices, Run: startDataServices},
	)
	after := []Step{{Name: "Start the controller and worker-kubernetes", Describe: describeAPIServices, Run: startAPIServices}}
	if len(op.model.Added) > 0 {
		after = append(after, Step{Name: "Start the services the Compose options add: " + strings.Join(op.model.Added, ", "), Describe: describeAddedServices, Run: startAddedServices})
	}
	after = append(after,
		Step{Name: "Wait for the API and the worker to be ready", Describe: describeReadiness, Run: waitForAPI},
		copyKeyStep(describeKey, copyComposeKey),
		namespaceWaitStep(oceAPI{url: op.model.APIURL}),
	)
	return flowProfile{
		preflight:     composePreflight,
		cluster:       cluster.Needs{Network: op.model.Network.Name},
		beforeCluster: before,
		imports:       composeImports,
		installation:  composeInstallation,
		controlPlane:  after,
		rollback:      removeWrittenKey,
		summary:       composeSummary,
	}, nil
}

// roleRuntime is the Agent runtime image's role in the plan and the state.
const roleRuntime = "runtime"

// planCompose loads and checks the Compose model and decides the images: everything `up` could
// refuse about the project is refused here, before anything runs.
func planCompose(p *Plan, o UpOptions, co controlplane.Checkout) (*OCEPlan, error) {
	wd := o.OCE.WorkingDir
	if wd == "" {
		var err error
		if wd, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("working directory: %w", err)
		}
	}
	user, err := compose.ParseArgs(o.OCE.ComposeArgs, co.Root, wd)
	if err != nil {
		var ae *compose.ArgsError
		if errors.As(err, &ae) {
			return nil, &OptionError{Option: "the Compose option after --", Value: ae.Arg, Rule: "is refused: " + ae.Message, Fix: ae.Fix}
		}
		return nil, err
	}
	op, err := newOCEPlan(p, o, co)
	if err != nil {
		return nil, err
	}
	env := o.OCE.Environment
	if env == nil {
		env = processEnvironment()
	}
	lo := compose.LoadOptions{Checkout: co.Root, Project: o.OCE.ComposeProject, StateDir: p.StateDir, User: user, Environment: env}
	if engineKind(p) == state.EnginePodman {
		// The socket occ reaches Podman through. On a Podman machine this is the host's
		// forwarded socket, not the path inside the machine; the only service of OCE's
		// compose.podman.yaml that mounts it is the Docker Compute worker, which this profile
		// never starts.
		ep, err := docker.ParseEndpoint(p.Engine, p.EngineSource)
		if err != nil {
			return nil, err
		}
		lo.PodmanSocket = ep.Socket
	}
	m, err := compose.Load(context.Background(), lo)
	if err != nil {
		return nil, err
	}
	op.model = m
	if sel := op.SelectedImages; sel != nil {
		if err := m.UseControllerImage(sel.Controller); err != nil {
			return nil, err
		}
	} else {
		if op.Builds, err = m.UseBuiltImages(); err != nil {
			return nil, err
		}
		var reqs []controlplane.BuildPlanRequest
		for _, b := range op.Builds {
			args := map[string]controlplane.BuildArg{}
			for k, v := range b.Args {
				args[k] = controlplane.BuildArg{Value: v, Source: "the Compose build argument " + k + " of " + strings.Join(b.Services, ", ")}
			}
			reqs = append(reqs, controlplane.BuildPlanRequest{Role: b.Tag, ContextDir: b.Context, Dockerfile: b.Dockerfile, Target: b.Target, Args: args})
		}
		reqs = append(reqs, controlplane.BuildPlanRequest{Role: roleRuntime, ContextDir: co.Root, Dockerfile: controlplane.RuntimeDockerfile})
		if err := planBuilds(op, o, reqs); err != nil {
			return nil, err
		}
	}
	plan := m.Plan()
	op.Compose = &plan
	return op, nil
}

// processEnvironment is the process environment as a map, what Compose interpolation reads.
func processEnvironment() map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

// composePreflight makes the live checks of the project before anything exists: the plugin is
// installed and new enough, nothing of the project (labelled or by its names) is on the engine,
// and selected images are present with this checkout's revision.
func composePreflight(ctx context.Context, r *run, rep progress.Reporter) error {
	op := r.plan.OCE
	if err := checkBuilder(r); err != nil {
		return err
	}
	plugin, err := compose.FindPlugin(ctx, compose.FindPluginOptions{DockerConfig: os.Getenv("DOCKER_CONFIG")})
	if err != nil {
		return err
	}
	rep.Note(fmt.Sprintf("docker compose %s at %s", plugin.Version, plugin.Path))
	if err := op.model.EnsureAbsent(ctx, r.engine.API); err != nil {
		return err
	}
	cr := &composeRun{plugin: plugin, stack: compose.Stack{Project: op.model.Name(), Engine: r.engine.API}}
	if sel := op.SelectedImages; sel != nil {
		imgs, err := controlplane.VerifySelectedImages(ctx, r.engine.API, *sel, op.Commit)
		if err != nil {
			return err
		}
		if cr.runtime, err = selectedLocal(ctx, r, imgs.Runtime); err != nil {
			return err
		}
	}
	r.compose = cr
	return nil
}

// selectedLocal is a selected runtime image as the import takes it: its digest reference, which
// the engine's RepoDigests must carry (it came from a registry, by that digest).
func selectedLocal(ctx context.Context, r *run, img controlplane.LocalImage) (images.Local, error) {
	ins, err := r.engine.API.ImageInspect(ctx, img.Reference)
	if err != nil {
		return images.Local{}, fmt.Errorf("inspect selected runtime image %s: %w", img.Reference, err)
	}
	pin, err := pins.ParseImage(img.Reference)
	if err != nil {
		return images.Local{}, err
	}
	return images.Local{Pin: pin, ID: ins.ID, RepoDigests: ins.RepoDigests, Size: ins.Size}, nil
}

func describeSnapshot(p *Plan) Description {
	m := p.OCE.model
	items := []string{"file " + filepath.Join(p.StateDir, compose.SnapshotName) + " (0600): the checked Compose model of project " + m.Name() + ", every $ escaped; every later Compose call uses only it",
		"file " + filepath.Join(p.StateDir, composeSourcesFile) + " (0600): the sha256 of every file the model was read from, which occ dev reload compares before repeating the snapshot"}
	for _, o := range m.Records() {
		items = append(items, "record of "+o.String())
	}
	return creates(items...)
}

// writeSnapshot writes the checked model into the state directory and records the control
// plane and the project's network, volumes and project, before `compose up` creates them.
func writeSnapshot(_ context.Context, r *run, _ progress.Reporter) error {
	op := r.plan.OCE
	snap, err := op.model.WriteSnapshot(r.state.Path())
	if err != nil {
		return err
	}
	if err := writeComposeSources(r.state, op.model.Sources()); err != nil {
		return err
	}
	r.compose.runner = compose.Runner{Plugin: r.compose.plugin, Endpoint: r.engine.Endpoint.String(), Snapshot: snap}
	cp := &state.ControlPlane{
		Checkout: op.Checkout, Commit: op.Commit, APIURL: op.model.APIURL,
		Compose: &state.ComposeProject{Project: snap.Project, Snapshot: snap.Path, Checkout: snap.Checkout, Started: op.model.StartedServices()},
	}
	if err := r.state.Update(func(s *state.State) { s.ControlPlane = cp }); err != nil {
		return fmt.Errorf("record the control plane: %w", err)
	}
	for _, o := range op.model.Records() {
		if err := r.state.Record(o); err != nil {
			return fmt.Errorf("record %s: %w", o, err)
		}
	}
	return nil
}

func describeBuilds(p *Plan) Description {
	op := p.OCE
	if op.SelectedImages != nil {
		return note("nothing built; runs the selected controller image " + op.SelectedImages.Controller + " and imports the selected runtime image " + op.SelectedImages.Runtime + " (checked in the preflight: present locally, revision " + op.Commit + ")")
	}
	var items []string
	for _, b := range op.Builds {
		items = append(items, b.Describe())
	}
	items = append(items, "image "+controlplane.DefaultRuntimeTag+" built by the engine's BuildKit from "+op.Checkout+" ("+controlplane.RuntimeDockerfile+"), the Agent runtime imported into the cluster")
	return Description{Creates: items, Note: "built through the Docker engine's BuildKit API, not compose --build (whose classic-builder fallback refuses OCE's RUN --mount); the images are left in the engine for the next run's cache"}
}

// buildImages builds the services' images and the Agent runtime from the checkout (or records
// the selected ones), and records them in the state.
func buildImages(ctx context.Context, r *run, rep progress.Reporter) error {
	op := r.plan.OCE
	if sel := op.SelectedImages; sel != nil {
		return r.recordImages(
			state.ControlPlaneImage{Role: "controller", Reference: sel.Controller, Selected: true},
			state.ControlPlaneImage{Role: "runtime", Reference: sel.Runtime, ID: r.compose.runtime.ID, Selected: true})
	}
	// Every base comes in by the digest the pull step recorded, whatever the arguments said.
	var builds []recordedBuild
	for _, b := range op.Builds {
		if pb := op.plannedBuild(b.Tag); pb != nil {
			b.Args = pb.WithResolved(r.bases)
		}
		role := b.Target
		if role == "" {
			role = b.Services[0]
		}
		builds = append(builds, recordedBuild{Role: role, Services: b.Services, ContextDir: b.Context, Dockerfile: b.Dockerfile, Target: b.Target, Args: b.Args, Tag: b.Tag, Network: b.Network})
	}
	builds = append(builds, recordedBuild{Role: roleRuntime, Imported: true, ContextDir: op.Checkout, Dockerfile: controlplane.RuntimeDockerfile, Tag: controlplane.DefaultRuntimeTag,
		Args: op.plannedBuild(roleRuntime).WithResolved(r.bases), Network: runtimeBuildNetwork(r.opts.deps.BuildNetwork, op.Builds)})
	built, err := buildControlPlaneImages(ctx, r, builds, func(line string) { rep.Note(line) })
	if err != nil {
		return err
	}
	r.compose.runtime = built[roleRuntime]
	return nil
}

// runtimeBuildNetwork is the network of the Agent runtime build's RUN steps: the seam's, else
// the build.network every Compose build of the checkout agrees on (the Agent runtime is built
// from the same checkout, on the same engine), else the engine's default.
func runtimeBuildNetwork(setting string, builds []compose.Build) string {
	if setting != "" || len(builds) == 0 {
		return setting
	}
	for _, b := range builds[1:] {
		if b.Network != builds[0].Network {
			return ""
		}
	}
	return builds[0].Network
}

func describeDataServices(p *Plan) Description {
	cp := p.OCE.Compose
	items := []string{fmt.Sprintf("Compose project %s through the docker compose plugin: services %s (up --detach, then migrate and bootstrap must exit 0)", cp.Project, strings.Join(compose.DataServices, ", "))}
	for _, n := range cp.Networks {
		items = append(items, fmt.Sprintf("network %s (subnet %s, gateway %s), which the k3d cluster joins", n.Name, n.Subnet, n.Gateway))
	}
	for _, v := range cp.Volumes {
		items = append(items, "volume "+v)
	}
	for _, port := range cp.Ports {
		if slices.Contains(compose.DataServices, port.Service) {
			items = append(items, fmt.Sprintf("published port %s -> %s of %s", port.Host, port.Target, port.Service))
		}
	}
	d := creates(items...)
	if engineKind(p) == state.EnginePodman {
		d.Note = "on Podman the exited " + strings.Join(compose.JobServices, " and ") + " containers are then disconnected from the development network: Podman lists them as members without an address, which k3d's lookup of the network it joins refuses"
	}
	return d
}

// startDataServices starts postgres, migrate and bootstrap from the snapshot and waits for the
// jobs to exit 0 (a failed job's last log lines are in the error), then records the network's
// engine ID.
func startDataServices(ctx context.Context, r *run, _ progress.Reporter) error {
	wctx, cancel := context.WithTimeout(ctx, r.plan.StartupTimeout)
	defer cancel()
	if err := compose.StartData(wctx, compose.StartOptions{Runner: r.compose.runner, Stack: r.compose.stack}); err != nil {
		return err
	}
	if engineKind(r.plan) == state.EnginePodman {
		if err := r.compose.stack.DetachExitedJobs(ctx, r.plan.OCE.model.Network.Name); err != nil {
			return err
		}
	}
	return compose.RecordIDs(ctx, r.engine.API, r.state, r.plan.OCE.model.Records())
}

// composeImports adds the Agent runtime to the cluster's one import pass.
func composeImports(r *run) []images.Local { return []images.Local{r.compose.runtime} }

// composeInstallation adds the Compose profile's part of Kubernetes Compute: the runtime's
// in-cluster digest reference and the node, read from the cluster.
func composeInstallation(ctx context.Context, r *run, in *platform.InstallationInput) error {
	ref := ""
	for _, v := range r.verified {
		if v.Pin == r.compose.runtime.Pin {
			ref = v.Reference
		}
	}
	if ref == "" {
		return errors.New("the Agent runtime image was not verified in the node; it cannot be named in the Installation")
	}
	extras, err := controlplane.ComputeExtras(ctx, r.conn.Kube, ref)
	if err != nil {
		return err
	}
	in.Compute = extras
	r.compose.runtimeRef = ref
	return r.state.Update(func(s *state.State) {
		for i := range s.ControlPlane.Images {
			if s.ControlPlane.Images[i].Role == "runtime" {
				s.ControlPlane.Images[i].InCluster = ref
			}
		}
	})
}

func describeAPIServices(p *Plan) Description {
	cp := p.OCE.Compose
	items := []string{fmt.Sprintf("services %s of project %s (up --detach --no-deps), with the Installation and the container kubeconfig mounted read-only", strings.Join(compose.APIServices, ", "), cp.Project)}
	for _, port := range cp.Ports {
		if slices.Contains(compose.APIServices, port.Service) {
			items = append(items, fmt.Sprintf("published port %s -> %s of %s", port.Host, port.Target, port.Service))
		}
	}
	return creates(items...)
}

// startAPIServices records the API services (so `down` stops them first) and starts them.
func startAPIServices(ctx context.Context, r *run, _ progress.Reporter) error {
	if err := r.state.Record(compose.ServicesRecord(r.plan.OCE.model.Name())); err != nil {
		return fmt.Errorf("record the API services: %w", err)
	}
	return compose.StartAPI(ctx, compose.StartOptions{Runner: r.compose.runner, Stack: r.compose.stack})
}

func describeAddedServices(p *Plan) Description {
	m := p.OCE.model
	items := []string{fmt.Sprintf("services %s of project %s (up --detach --no-deps), added by the Compose options after --", strings.Join(m.Added, ", "), m.Name())}
	for _, port := range p.OCE.Compose.Ports {
		if slices.Contains(m.Added, port.Service) {
			items = append(items, fmt.Sprintf("published port %s -> %s of %s", port.Host, port.Target, port.Service))
		}
	}
	return creates(items...)
}

// startAddedServices starts what the user's Compose files add, once everything of the profile
// they can depend on runs; `down` removes them with the project.
func startAddedServices(ctx context.Context, r *run, _ progress.Reporter) error {
	return compose.StartAdded(ctx, compose.StartOptions{Runner: r.compose.runner, Stack: r.compose.stack}, r.plan.OCE.model.Added)
}

func describeReadiness(p *Plan) Description {
	return note(fmt.Sprintf("nothing created; polls GET %s/api/auth/session for a 2xx together with the worker's readiness probe (exec), up to %s", p.OCE.Compose.APIURL, p.StartupTimeout))
}

func waitForAPI(ctx context.Context, r *run, _ progress.Reporter) error {
	wctx, cancel := context.WithTimeout(ctx, r.plan.StartupTimeout)
	defer cancel()
	return controlplane.WaitReady(wctx, controlplane.ReadinessOptions{
		APIURL: r.plan.OCE.model.APIURL, Checks: []controlplane.ReadinessCheck{r.compose.stack.ReadinessCheck()},
	})
}

func describeKey(p *Plan) Description {
	return creates("file " + p.OCE.KeyFile + " (O_EXCL, 0600): the bootstrap service key, read from the bootstrap volume through the engine's archive API and written only after GET /installation with it names the key's Installation")
}

// copyComposeKey copies the bootstrap key out of the bootstrap container through the Docker
// archive API, verifies it against the live Installation and writes it.
func copyComposeKey(ctx context.Context, r *run) (controlplane.InstalledKey, error) {
	op := r.plan.OCE
	return controlplane.InstallServiceKey(ctx, controlplane.InstallKeyOptions{
		StateDir: r.state.Path(), Destination: op.keyDest, APIURL: op.model.APIURL, Read: r.compose.stack.BootstrapKeySource(),
	})
}

// composeSummary is the control plane's part of the summary.
func composeSummary(r *run) *OCESummary {
	op := r.plan.OCE
	return &OCESummary{
		ControlPlane:   "Compose (project " + op.model.Name() + ", from " + op.Checkout + " at " + shortCommit(op.Commit) + ")",
		Drivers:        "compute kubernetes, sandbox openshell",
		APIURL:         op.model.APIURL,
		InstallationID: r.oce.installationID,
		KeyFile:        r.oce.keyPath,
		Namespace:      r.oce.namespace.ID,
		RuntimeImage:   r.compose.runtimeRef,
		BaseImages:     baseSummary(r),
		Services:       op.model.Services(),
	}
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
