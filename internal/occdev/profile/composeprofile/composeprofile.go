// Package composeprofile is the Compose control plane of `occ dev up` (--control-plane compose,
// the default): OCE's postgres, migrate, bootstrap, controller and worker-kubernetes run as a
// Compose project beside the k3d cluster, which joins the project's development network and
// publishes the Gateway as NodePort 30051. Its steps, in the order OCE's own launcher takes them:
//
//   - preflight: the plugin found, no resource of the project exists, selected images present;
//   - before the cluster (cluster lane): the snapshot written and the project recorded, the
//     images built, postgres, migrate and bootstrap started and the jobs waited for;
//   - the cluster joins <project>_development; the Agent runtime is imported with the
//     OpenShell images; the Installation names it and the node;
//   - with the routing controllers, before the Installation: the private Agent Gateway route
//     beside the cluster (route.go), whose key and CA the services mount and whose node port
//     and proxies the Installation names;
//   - after the platform: controller and worker-kubernetes started (and admitted to the route),
//     the API and the worker ready, the bootstrap key copied and verified, the bootstrap
//     Namespace ready.
//
// Without an OCE checkout only the sandbox platform comes up, and the summary says how to add
// the control plane. It sees the flow only through the profile contract.
package composeprofile

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/cluster/k3d"
	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/controlplane/compose"
	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/occdev/profile"
	"github.com/openclaw/occ/internal/occdev/profile/oce"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/occdev/step"
	"github.com/openclaw/occ/internal/progress"
)

// Project is what the Compose profile adds to the OCE plan, as the dry run shows it.
type Project struct {
	// Compose is what the Compose project creates: services, volumes, networks, published
	// ports and the API URL.
	Compose *compose.Plan `json:"compose,omitempty"`
	// Builds are the images occ builds from the checkout (none when images are selected).
	Builds []compose.Build `json:"builds,omitempty"`
}

// Plan is the Compose profile's plan: the OCE plan every profile shares, the project it adds,
// and the checked Compose model every later Compose call uses. It is decided before anything
// runs and never changes after.
type Plan struct {
	*oce.Plan
	Project
	// Model is the checked Compose model.
	Model *compose.Model `json:"-"`
	// HostPorts are the host ports occ chose for this environment, by their variable (none for
	// the default environment, or where the variable is set).
	HostPorts map[string]int `json:"hostPorts,omitempty"`
	// Subnet is the development network's subnet occ chose for this environment (empty for the
	// default environment, or where the variable is set).
	Subnet string `json:"subnet,omitempty"`
}

// Profile is the Compose control plane. It plans from its Input: the shared OCE options
// (Input.OCE, whose Compose options after -- it takes), the located engine (on Podman the
// Compose model is loaded with that socket) and the build network of the test seams
// (Input.Deps.BuildNetwork: empty is the network every Compose build of the checkout agrees on,
// else the engine's default).
type Profile struct{}

// Platform is how the platform serves the control plane: beside the cluster, the Gateway a
// NodePort Service, in openshell-system unless another namespace is given.
var Platform = profile.Platform{Gateway: platform.ControlPlaneCompose, Namespace: "openshell-system"}

// Platform is the profile's Platform.
func (Profile) Platform() profile.Platform { return Platform }

// Plan is New as the profile contract asks for it.
func (x Profile) Plan(in profile.Input) (profile.Planned, error) { return profile.Decided(x.New(in)) }

// Planned is the profile decided for one `up`. It is a value: its plan is fixed when it is
// decided, and what its steps produce while the run goes on (the plugin, the Agent runtime, the
// pulled bases, the key) is kept in a run of its own, never in the plan.
type Planned struct {
	profile.Base
	in   profile.Input
	deps profile.Deps
	// Compose is the plan (nil when the control plane is pending), as the dry run shows it.
	Compose *Plan
	pending string
	// refusal is the Compose model's refusal (*compose.ProjectError), planned in full beside it.
	refusal error
	// routePreview are the route's objects rendered with placeholders for the node (none when
	// this `up` sets up no route).
	routePreview []*unstructured.Unstructured
	run          *run
}

// run is what the Compose profile's steps share during one `up`.
type run struct {
	plugin compose.Plugin
	runner compose.Runner
	stack  compose.Stack
	// runtime is the Agent runtime image as the engine holds it (built or selected), and
	// runtimeRef its in-cluster digest reference once imported and verified.
	runtime    images.Local
	runtimeRef string
	// bases are every base image of the builds, by digest, once pulled.
	bases   []controlplane.ResolvedBase
	session oce.Session
	// route is the private Agent Gateway route once it serves (nil when this `up` sets up none).
	route *routeResult
}

// New decides the profile for one `up`. The checkout, the image selection and the key
// destination are decided as for every OCE profile (package oce); the Compose model is loaded
// and checked, and a model or Dockerfile `up` would refuse stops `up` and the dry run before
// anything exists.
func (x Profile) New(in profile.Input) (Planned, error) {
	if len(in.OCE.ComposeArgs) > 0 && in.ClusterProvider != k3d.Name {
		return Planned{}, &option.Error{Option: "Compose options after --", Value: strings.Join(in.OCE.ComposeArgs, " "),
			Rule: "apply to the Compose control plane, which runs beside the k3d cluster occ creates", Fix: "use --cluster-provider k3d, or drop them"}
	}
	co, pending, err := oce.FindOnK3d(in, in.OCE, "the Compose control plane reaches the cluster across the engine network the k3d cluster occ creates joins")
	if err != nil {
		return Planned{}, err
	}
	c := Planned{in: in, deps: in.Deps, run: &run{}}
	if pending != "" {
		c.pending = pending
		return c, nil
	}
	if c.Compose, c.refusal, err = x.plan(in, co); err != nil {
		return Planned{}, err
	}
	if c.routes() {
		// The route's objects as the checkout's chart renders them, with placeholders for the
		// node: a chart that cannot render the route stops `up` before anything exists, and
		// the dry run names each object the route's step applies.
		if c.routePreview, err = c.routeObjects(routePlaceholderNode, []string{routePlaceholderCIDR}); err != nil {
			return Planned{}, err
		}
	}
	return c, nil
}

// plan loads and checks the Compose model and decides the images: everything `up` could refuse
// about the project is refused here, before anything runs. A model that breaks the profile's
// rules is planned in full and returned with its refusal (a *compose.ProjectError), which the
// dry run lists among its problems and `up` stops at.
func (x Profile) plan(in profile.Input, co controlplane.Checkout) (_ *Plan, refusal error, _ error) {
	user, err := userComposeOptions(in, co)
	if err != nil {
		return nil, nil, err
	}
	base, err := oce.NewPlan(in, in.OCE, co)
	if err != nil {
		return nil, nil, err
	}
	op := &Plan{Plan: base}
	env := maps.Clone(in.OCE.Environment)
	if env == nil {
		env = processEnvironment()
	}
	if op.HostPorts, err = chooseHostPorts(in, env); err != nil {
		return nil, nil, err
	}
	if op.Subnet, err = x.chooseSubnet(in, env); err != nil {
		return nil, nil, err
	}
	lo, err := x.loadOptions(in, co, user, env)
	if err != nil {
		return nil, nil, err
	}
	m, err := compose.Load(context.Background(), lo)
	var pe *compose.ProjectError
	switch {
	case errors.As(err, &pe) && m != nil:
		refusal = err
	case err != nil:
		return nil, nil, err
	}
	op.Model = m
	if err := decideImages(in, op, co); err != nil {
		return nil, nil, errors.Join(refusal, err)
	}
	plan := m.Plan()
	op.Compose = &plan
	return op, refusal, nil
}

// userComposeOptions parses the Compose options given after --, relative to the working
// directory; one occ refuses is a bad option.
func userComposeOptions(in profile.Input, co controlplane.Checkout) (compose.UserOptions, error) {
	wd := in.OCE.WorkingDir
	if wd == "" {
		var err error
		if wd, err = os.Getwd(); err != nil {
			return compose.UserOptions{}, fmt.Errorf("working directory: %w", err)
		}
	}
	user, err := compose.ParseArgs(in.OCE.ComposeArgs, co.Root, wd)
	if err != nil {
		var ae *compose.ArgsError
		if errors.As(err, &ae) {
			return compose.UserOptions{}, &option.Error{Option: "the Compose option after --", Value: ae.Arg, Rule: "is refused: " + ae.Message, Fix: ae.Fix}
		}
		return compose.UserOptions{}, err
	}
	return user, nil
}

// chooseHostPorts chooses the host ports the checkout's Compose files publish, when env does
// not give them, for an environment beside others, and hands them to Compose's interpolation in
// env: the snapshot, and so every later Compose call, publishes exactly these. It returns the
// ports it chose other than the defaults, by their variable.
func chooseHostPorts(in profile.Input, env map[string]string) (map[string]int, error) {
	hostPorts := map[string]int{}
	for _, hp := range []struct {
		name string
		def  int
	}{{devPortVariable, defaultDevPort}, {postgresPortVariable, defaultPostgresPort}} {
		if env[hp.name] != "" {
			continue
		}
		port, err := profile.HostPort(in, hp.def, slices.Collect(maps.Values(hostPorts))...)
		if err != nil {
			return nil, err
		}
		if port != hp.def {
			env[hp.name], hostPorts[hp.name] = strconv.Itoa(port), port
		}
	}
	// Compose interpolates OPENCLAW_DEV_PORT itself, but its range is occ's rule in both profiles:
	// refused here with the Kubernetes-only profile's words, not by Compose as an invalid hostPort.
	if v := env[devPortVariable]; v != "" {
		if n, err := strconv.Atoi(v); err != nil || n < 1 || n > 65535 {
			return nil, &option.Error{Option: devPortVariable, Value: v, Rule: "must be between 1 and 65535", Fix: "choose a free port on 127.0.0.1 (default 3000)"}
		}
	}
	return hostPorts, nil
}

// chooseSubnet chooses the development network's subnet, when env does not give it, the way
// chooseHostPorts chooses the ports: the default environment keeps compose.yaml's, another takes
// one that no network of the engine uses, so its network can be created beside theirs. It
// returns the subnet it set in env, or "" for the default.
func (x Profile) chooseSubnet(in profile.Input, env map[string]string) (string, error) {
	if env[subnetVariable] != "" {
		return "", nil
	}
	subnet, err := profile.Subnet(in, defaultSubnet, func() ([]netip.Prefix, error) { return x.takenSubnets(in) })
	if err != nil {
		return "", err
	}
	if subnet == defaultSubnet {
		return "", nil
	}
	env[subnetVariable] = subnet.String()
	return subnet.String(), nil
}

// loadOptions are the options the Compose model of this `up` is loaded with.
func (x Profile) loadOptions(in profile.Input, co controlplane.Checkout, user compose.UserOptions, env map[string]string) (compose.LoadOptions, error) {
	project := in.OCE.ComposeProject
	if project == "" {
		project = compose.ProjectOf(in.Environment)
	}
	// The socket is the one occ reaches the engine through. On a Podman machine this is the
	// host's forwarded socket, not the path inside the machine; the only service of OCE's
	// compose.podman.yaml that mounts it is the Docker Compute worker, which this profile never
	// starts.
	return compose.LoadOptions{Checkout: co.Root, Project: project, StateDir: in.StateDir, User: user, Environment: env, Routing: in.Routing,
		Engine: in.EngineKind, EngineSocket: in.Engine.Socket}, nil
}

// decideImages points the model at the selected controller image, or, without a selection,
// plans the builds of the Compose services' images and of the Agent runtime.
func decideImages(in profile.Input, op *Plan, co controlplane.Checkout) error {
	m := op.Model
	if sel := op.SelectedImages; sel != nil {
		return m.UseControllerImage(sel.Controller)
	}
	var err error
	if op.Builds, err = m.UseBuiltImages(); err != nil {
		return err
	}
	var reqs []controlplane.BuildPlanRequest
	for _, b := range op.Builds {
		args := map[string]controlplane.BuildArg{}
		for k, v := range b.Args {
			args[k] = controlplane.BuildArg{Value: v, Source: "the Compose build argument " + k + " of " + strings.Join(b.Services, ", ")}
		}
		reqs = append(reqs, controlplane.BuildPlanRequest{Role: b.Role, ContextDir: b.Context, Dockerfile: b.Dockerfile, Target: b.Target, Args: args})
	}
	reqs = append(reqs, controlplane.BuildPlanRequest{Role: oce.RoleRuntime, ContextDir: co.Root, Dockerfile: controlplane.RuntimeDockerfile})
	return op.PlanBuilds(in.OCE, reqs)
}

// processEnvironment is the process environment as a map, what Compose interpolation reads.
// devPortVariable is the OCE API's host port, as compose.yaml publishes it, and
// postgresPortVariable PostgreSQL's, as compose.postgres.yaml does; each with the default the
// checkout's files give it.
const (
	devPortVariable      = "OPENCLAW_DEV_PORT"
	defaultDevPort       = 3000
	postgresPortVariable = "OCC_POSTGRES_PORT"
	defaultPostgresPort  = 55432
	// subnetVariable is the development network's subnet (and the range OCE trusts as the
	// bridge), as compose.yaml sets it, with its default.
	subnetVariable = "OCC_DEVELOPMENT_TRUSTED_BRIDGE_CIDR"
)

var defaultSubnet = netip.MustParsePrefix("172.30.41.0/24")

// takenSubnets are the subnets of the engine's networks and the host's addresses. An engine that
// does not answer adds none: the preflight stops `up` at it before anything is created.
func (x Profile) takenSubnets(in profile.Input) ([]netip.Prefix, error) {
	var out []netip.Prefix
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("list the host's addresses: %w", err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			if p, err := netip.ParsePrefix(ipn.String()); err == nil {
				out = append(out, p.Masked())
			}
		}
	}
	if in.Engine.IsZero() {
		return out, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	eng, err := docker.ConnectAs(ctx, in.Engine, in.EngineSource, in.EngineKind)
	if err != nil {
		return out, nil
	}
	defer eng.Close()
	nets, err := eng.Verbs().List(ctx, engine.Networks, nil)
	if err != nil {
		return nil, fmt.Errorf("list the networks of the engine at %s: %w", in.Engine, err)
	}
	for _, n := range nets {
		for _, subnet := range n.Subnets {
			if p, err := netip.ParsePrefix(subnet); err == nil {
				out = append(out, p.Masked())
			}
		}
	}
	return out, nil
}

func processEnvironment() map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

// Pending says what of the control plane occ does not start.
func (c Planned) Pending() string { return c.pending }

// Refusal is the Compose model's refusal, if any.
func (c Planned) Refusal() error { return c.refusal }

// Needs is the project's development network, which the k3d cluster joins.
func (c Planned) Needs() cluster.Needs {
	return cluster.Needs{Network: c.Compose.Model.Network.Name, HostPorts: c.Compose.Model.HostPorts()}
}

// BeforeCluster writes the snapshot and records the project, builds (or takes the selected)
// images, and starts postgres, migrate and bootstrap, all before the cluster exists.
func (c Planned) BeforeCluster() []profile.Step {
	steps := []profile.Step{{Name: "Write the Compose snapshot and record the project", Describe: c.describeSnapshot, Run: c.writeSnapshot}}
	if c.Compose.SelectedImages == nil {
		steps = append(steps, profile.Step{Name: "Pull the base images of the control-plane builds", Describe: c.describeBasePulls, Run: c.pullBases})
	}
	return append(steps,
		profile.Step{Name: "Build the control-plane images from the checkout", Describe: c.describeBuilds, Run: c.buildImages},
		profile.Step{Name: "Start postgres, migrate and bootstrap", Describe: c.describeDataServices, Run: c.startDataServices},
	)
}

// ControlPlane starts the API services (and those the Compose options add), waits for the API
// and the worker, then copies the key out and waits for the bootstrap Namespace.
func (c Planned) ControlPlane() []profile.Step {
	m := c.Compose.Model
	steps := []profile.Step{{Name: "Start the controller and worker-kubernetes", Describe: c.describeAPIServices, Run: c.startAPIServices}}
	if c.routes() {
		steps = append(steps, profile.Step{Name: admitStep, Describe: c.describeAdmit, Run: c.admitServices})
	}
	if len(m.Added) > 0 {
		steps = append(steps, profile.Step{Name: "Start the services the Compose options add: " + strings.Join(m.Added, ", "), Describe: c.describeAddedServices, Run: c.startAddedServices})
	}
	session := func(profile.Env) *oce.Session { return &c.run.session }
	return append(steps,
		profile.Step{Name: "Wait for the API and the worker to be ready", Describe: c.describeReadiness, Run: c.waitForAPI},
		oce.CopyKeyStep(c.describeKey, session, c.copyKey),
		oce.NamespaceWaitStep[profile.View](c.in.StartupTimeout, session, oce.API[profile.Env]{URL: m.APIURL}),
	)
}

// Preflight makes the live checks of the project before anything exists: the plugin is
// installed and new enough, nothing of the project (labelled or by its names) is on the engine,
// and selected images are present with this checkout's revision.
func (c Planned) Preflight(ctx context.Context, env profile.Env, rep progress.Reporter) error {
	op := c.Compose
	engine := env.Engine()
	if err := oce.CheckBuilder(op.Plan, engine); err != nil {
		return err
	}
	plugin, err := findPlugin(ctx)
	if err != nil {
		return err
	}
	rep.Note(fmt.Sprintf("docker compose %s at %s", plugin.Version, plugin.Path))
	if err := op.Model.EnsureAbsent(ctx, engine.Verbs()); err != nil {
		return err
	}
	var runtime images.Local
	if sel := op.SelectedImages; sel != nil {
		imgs, err := controlplane.VerifySelectedImages(ctx, engine.Verbs(), *sel, op.Commit)
		if err != nil {
			return err
		}
		if runtime, err = oce.SelectedLocal(ctx, engine, imgs.Runtime); err != nil {
			return err
		}
	}
	c.run.plugin, c.run.stack, c.run.runtime = plugin, compose.Stack{Project: op.Model.Name(), Engine: engine.Verbs(), Redact: compose.Secrets(op.Model.Project)}, runtime
	return nil
}

// ImportImages is the Agent runtime, the one image of the project the cluster runs: built (and
// then imported by its image ID), or selected.
func (c Planned) ImportImages() []step.Image {
	if sel := c.Compose.SelectedImages; sel != nil {
		return []step.Image{{Reference: sel.Runtime, Note: "the selected Agent runtime"}}
	}
	return []step.Image{{Reference: controlplane.DefaultRuntimeTag, Note: "the Agent runtime, built, by its image ID"}}
}

// Imports adds the Agent runtime to the cluster's one import pass.
func (c Planned) Imports(profile.Env) []images.Local { return []images.Local{c.run.runtime} }

// Installation adds the Compose profile's part of Kubernetes Compute: the runtime's in-cluster
// digest reference and the node, read from the cluster.
func (c Planned) Installation(ctx context.Context, env profile.Env, in *platform.InstallationInput) error {
	ref, err := env.InCluster(c.run.runtime)
	if err != nil {
		return errors.New("the Agent runtime image was not verified in the node; it cannot be named in the Installation")
	}
	extras, err := controlplane.ComputeExtras(ctx, env.Conn().Kube, ref)
	if err != nil {
		return err
	}
	in.Compute = extras
	if r := c.run.route; r != nil {
		// Beside the cluster the services reach the route on the node, by its name and the
		// NodePort, through the proxies that served it; Agent Gateways trust exactly those.
		in.Routing = &platform.InstallationRouting{
			GatewayName: platform.RoutingGatewayName, GatewayNamespace: RouteNamespace, EnvoyNamespace: platform.RoutingEnvoyNamespace,
			Hostname: r.node, EndpointPort: r.port, TrustedProxyCIDRs: r.proxies,
		}
	}
	c.run.runtimeRef = ref
	return env.State().Update(func(s *state.State) {
		for i := range s.ControlPlane.Images {
			if s.ControlPlane.Images[i].Role == oce.RoleRuntime {
				s.ControlPlane.Images[i].InCluster = ref
			}
		}
	})
}

// Rollback removes a key this failed run wrote at --key-output.
func (c Planned) Rollback(profile.Env) error { return c.run.session.RemoveWrittenKey() }

// Summary is the control plane's part of the summary: the project, the API URL, the verified
// key and its Installation, the bootstrap Namespace, the Agent runtime, the base images and
// every service of the model, started or not.
func (c Planned) Summary(env profile.Env) *profile.Summary {
	op, r := c.Compose, c.run
	return &profile.Summary{
		ControlPlane:   "Compose (project " + op.Model.Name() + ", from " + op.Checkout + " at " + oce.ShortCommit(op.Commit) + ")",
		Drivers:        "compute kubernetes, sandbox openshell",
		APIURL:         op.Model.APIURL,
		InstallationID: r.session.InstallationID,
		KeyFile:        r.session.KeyPath,
		Namespace:      r.session.Namespace.ID,
		RuntimeImage:   r.runtimeRef,
		BaseImages:     oce.BaseSummary(r.bases),
		Services:       op.Model.Services(),
		Route:          c.routeSummary(env.State().Path()),
	}
}

func (c Planned) describeBasePulls(profile.View) step.Description {
	return oce.DescribeBasePulls(c.Compose.Plan)
}

// pullBases pulls the bases of the Compose services' and the Agent runtime's builds by digest
// (oce.PullBases); the builds after it take them from the run.
func (c Planned) pullBases(ctx context.Context, env profile.Env, rep progress.Reporter) error {
	var err error
	c.run.bases, err = oce.PullBases(ctx, env, rep, c.Compose.Plan)
	return err
}
