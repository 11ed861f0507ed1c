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
	"github.com/openclaw/occ/internal/occdev/engine/locate"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/occdev/profile/oce"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/progress"
)

// OCEOptions are the inputs of the OCE control plane (layer 3): where its source is, how its
// images are obtained, the Compose project's name and options, and where the verified bootstrap
// key goes.
type OCEOptions = oce.Options

// OCEPlan is the resolved control plane: the checkout and what the profile will start, decided
// (and the Compose model checked) before anything runs.
type OCEPlan struct {
	*oce.Plan
	// Kubernetes is what the Kubernetes-only profile installs into the cluster (nil for
	// Compose).
	Kubernetes *KubernetesPlan `json:"kubernetes,omitempty"`
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
	co, pending, err := oce.FindOnK3d(p.input(o), o.OCE, "the Compose control plane reaches the cluster across the engine network the k3d cluster occ creates joins")
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
	if len(op.Model.Added) > 0 {
		after = append(after, Step{Name: "Start the services the Compose options add: " + strings.Join(op.Model.Added, ", "), Describe: describeAddedServices, Run: startAddedServices})
	}
	after = append(after,
		Step{Name: "Wait for the API and the worker to be ready", Describe: describeReadiness, Run: waitForAPI},
		oce.CopyKeyStep(describeKey, (*run).session, copyComposeKey),
		oce.NamespaceWaitStep[*Plan](p.StartupTimeout, (*run).session, oce.API[*run]{URL: op.Model.APIURL}),
	)
	return flowProfile{
		preflight:     composePreflight,
		cluster:       cluster.Needs{Network: op.Model.Network.Name},
		beforeCluster: before,
		imports:       composeImports,
		installation:  composeInstallation,
		controlPlane:  after,
		rollback:      func(r *run) error { return r.oce.RemoveWrittenKey() },
		summary:       composeSummary,
	}, nil
}

func describeBasePulls(p *Plan) Description { return oce.DescribeBasePulls(p.OCE.Plan) }

// pullBases pulls the bases of the Compose services' and the Agent runtime's builds by digest
// (oce.PullBases); the builds after it take them from r.bases.
func pullBases(ctx context.Context, r *run, rep progress.Reporter) error {
	var err error
	r.bases, err = oce.PullBases(ctx, r, rep, r.plan.OCE.Plan)
	return err
}

// roleRuntime is the Agent runtime image's role in the plan and the state.
const roleRuntime = oce.RoleRuntime

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
	base, err := oce.NewPlan(p.input(o), o.OCE, co)
	if err != nil {
		return nil, err
	}
	op := &OCEPlan{Plan: base}
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
	op.Model = m
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
		if err := op.PlanBuilds(o.OCE, reqs); err != nil {
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
	if err := oce.CheckBuilder(op.Plan, r.engine, r.plan.EngineKind == string(locate.Podman)); err != nil {
		return err
	}
	plugin, err := compose.FindPlugin(ctx, compose.FindPluginOptions{DockerConfig: os.Getenv("DOCKER_CONFIG")})
	if err != nil {
		return err
	}
	rep.Note(fmt.Sprintf("docker compose %s at %s", plugin.Version, plugin.Path))
	if err := op.Model.EnsureAbsent(ctx, r.engine.API); err != nil {
		return err
	}
	cr := &composeRun{plugin: plugin, stack: compose.Stack{Project: op.Model.Name(), Engine: r.engine.API}}
	if sel := op.SelectedImages; sel != nil {
		imgs, err := controlplane.VerifySelectedImages(ctx, r.engine.API, *sel, op.Commit)
		if err != nil {
			return err
		}
		if cr.runtime, err = oce.SelectedLocal(ctx, r.engine, imgs.Runtime); err != nil {
			return err
		}
	}
	r.compose = cr
	return nil
}

func describeSnapshot(p *Plan) Description {
	m := p.OCE.Model
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
	snap, err := op.Model.WriteSnapshot(r.state.Path())
	if err != nil {
		return err
	}
	if err := writeComposeSources(r.state, op.Model.Sources()); err != nil {
		return err
	}
	r.compose.runner = compose.Runner{Plugin: r.compose.plugin, Endpoint: r.engine.Endpoint.String(), Snapshot: snap}
	cp := &state.ControlPlane{
		Checkout: op.Checkout, Commit: op.Commit, APIURL: op.Model.APIURL,
		Compose: &state.ComposeProject{Project: snap.Project, Snapshot: snap.Path, Checkout: snap.Checkout, Started: op.Model.StartedServices()},
	}
	if err := r.state.Update(func(s *state.State) { s.ControlPlane = cp }); err != nil {
		return fmt.Errorf("record the control plane: %w", err)
	}
	for _, o := range op.Model.Records() {
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
		return oce.RecordImages(r.state,
			state.ControlPlaneImage{Role: "controller", Reference: sel.Controller, Selected: true},
			state.ControlPlaneImage{Role: "runtime", Reference: sel.Runtime, ID: r.compose.runtime.ID, Selected: true})
	}
	// Every base comes in by the digest the pull step recorded, whatever the arguments said.
	var builds []oce.RecordedBuild
	for _, b := range op.Builds {
		if pb := op.PlannedBuild(b.Tag); pb != nil {
			b.Args = pb.WithResolved(r.bases)
		}
		role := b.Target
		if role == "" {
			role = b.Services[0]
		}
		builds = append(builds, oce.RecordedBuild{Role: role, Services: b.Services, ContextDir: b.Context, Dockerfile: b.Dockerfile, Target: b.Target, Args: b.Args, Tag: b.Tag, Network: b.Network})
	}
	builds = append(builds, oce.RecordedBuild{Role: roleRuntime, Imported: true, ContextDir: op.Checkout, Dockerfile: controlplane.RuntimeDockerfile, Tag: controlplane.DefaultRuntimeTag,
		Args: op.PlannedBuild(roleRuntime).WithResolved(r.bases), Network: runtimeBuildNetwork(r.opts.deps.BuildNetwork, op.Builds)})
	built, err := oce.BuildImages(ctx, r, builds, func(line string) { rep.Note(line) })
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
// jobs to exit 0 (a failed job's last log lines are in the error), then detaches the exited jobs
// the engine lists on the network without an address (Podman does) and records the network's
// engine ID.
func startDataServices(ctx context.Context, r *run, _ progress.Reporter) error {
	wctx, cancel := context.WithTimeout(ctx, r.plan.StartupTimeout)
	defer cancel()
	if err := compose.StartData(wctx, compose.StartOptions{Runner: r.compose.runner, Stack: r.compose.stack}); err != nil {
		return err
	}
	if err := r.compose.stack.DetachExitedJobs(ctx, r.plan.OCE.Model.Network.Name); err != nil {
		return err
	}
	return compose.RecordIDs(ctx, r.engine.API, r.state, r.plan.OCE.Model.Records())
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
	if err := r.state.Record(compose.ServicesRecord(r.plan.OCE.Model.Name())); err != nil {
		return fmt.Errorf("record the API services: %w", err)
	}
	return compose.StartAPI(ctx, compose.StartOptions{Runner: r.compose.runner, Stack: r.compose.stack})
}

func describeAddedServices(p *Plan) Description {
	m := p.OCE.Model
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
	return compose.StartAdded(ctx, compose.StartOptions{Runner: r.compose.runner, Stack: r.compose.stack}, r.plan.OCE.Model.Added)
}

func describeReadiness(p *Plan) Description {
	return note(fmt.Sprintf("nothing created; polls GET %s/api/auth/session for a 2xx together with the worker's readiness probe (exec), up to %s", p.OCE.Compose.APIURL, p.StartupTimeout))
}

func waitForAPI(ctx context.Context, r *run, _ progress.Reporter) error {
	wctx, cancel := context.WithTimeout(ctx, r.plan.StartupTimeout)
	defer cancel()
	return controlplane.WaitReady(wctx, controlplane.ReadinessOptions{
		APIURL: r.plan.OCE.Model.APIURL, Checks: []controlplane.ReadinessCheck{r.compose.stack.ReadinessCheck()},
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
		StateDir: r.state.Path(), Destination: op.KeyDest, APIURL: op.Model.APIURL, Read: r.compose.stack.BootstrapKeySource(),
	})
}

// composeSummary is the control plane's part of the summary.
func composeSummary(r *run) *OCESummary {
	op := r.plan.OCE
	return &OCESummary{
		ControlPlane:   "Compose (project " + op.Model.Name() + ", from " + op.Checkout + " at " + oce.ShortCommit(op.Commit) + ")",
		Drivers:        "compute kubernetes, sandbox openshell",
		APIURL:         op.Model.APIURL,
		InstallationID: r.oce.InstallationID,
		KeyFile:        r.oce.KeyPath,
		Namespace:      r.oce.Namespace.ID,
		RuntimeImage:   r.compose.runtimeRef,
		BaseImages:     oce.BaseSummary(r.bases),
		Services:       op.Model.Services(),
	}
}
