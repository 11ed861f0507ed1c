package compose

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/state"
)

// Names of the OCE Compose files, services, network and state files this profile relies on, as
// OCE's checkout names them.
const (
	FileBase       = "compose.yaml"
	FileKubernetes = "compose.kubernetes.yaml"
	// FilePodman is the checkout's overlay for Podman engines, layered after the two above when
	// the project runs on an engine Compose treats as Podman (engine.Registration.ComposePodman)
	// and the file exists.
	FilePodman = "compose.podman.yaml"

	ServicePostgres   = "postgres"
	ServiceMigrate    = "migrate"
	ServiceBootstrap  = "bootstrap"
	ServiceController = "controller"
	ServiceWorker     = "worker-kubernetes"

	// NetworkKey is the network every service shares and k3d joins.
	NetworkKey = "development"
	// APIPort is the controller's container port; its publication is the API URL.
	APIPort = 3000

	// SnapshotName is the rendered model in the state directory (written SnapshotMode).
	SnapshotName = "compose.yaml"
	// InstallationConfigName and ContainerKubeconfigName are the state files compose.kubernetes.yaml
	// bind-mounts into the controller and the worker; KubeconfigName is the host kubeconfig.
	InstallationConfigName  = "installation.yaml"
	ContainerKubeconfigName = "container-kubeconfig"
	KubeconfigName          = "kubeconfig"

	// EnvProject selects the Compose project name; DefaultProject is its default.
	EnvProject     = "OCC_DEVELOPMENT_COMPOSE_PROJECT"
	DefaultProject = "openclaw-enterprise-development-kubernetes"
)

// ProjectOf is the default project name of an environment: DefaultProject for the default
// environment (the name every earlier occ used), DefaultProject-<environment> for the others, so
// the projects of environments side by side (their containers, network and volumes) never
// share a name.
func ProjectOf(environment string) string {
	if environment == "" || environment == state.DefaultEnvironment {
		return DefaultProject
	}
	return DefaultProject + "-" + environment
}

// The variables occ sets before rendering. compose.kubernetes.yaml
// uses the `:?` form for the first three, so a render without them fails inside Compose.
const (
	VarInstallationConfig = "OCC_DEVELOPMENT_INSTALLATION_CONFIG"
	VarKubeconfig         = "OCC_DEVELOPMENT_KUBECONFIG"
	VarNetworkName        = "OCC_DEVELOPMENT_NETWORK_NAME"
	VarHostKubeconfig     = "KUBECONFIG"
	// VarEngineSocket is the Podman API socket path compose.podman.yaml mounts (with the `:?`
	// form); occ sets it only where it layers that file.
	VarEngineSocket = "OCC_CONTAINER_ENGINE_SOCKET"
)

// DataServices start first and the jobs among them must complete; APIServices start once the
// cluster and the Installation exist, as in OCE's own launcher.
var (
	DataServices = []string{ServicePostgres, ServiceMigrate, ServiceBootstrap}
	JobServices  = []string{ServiceMigrate, ServiceBootstrap}
	APIServices  = []string{ServiceController, ServiceWorker}
	// RequiredServices must all be in the model: the flow starts, waits for or execs into each.
	RequiredServices = []string{ServicePostgres, ServiceMigrate, ServiceBootstrap, ServiceController, ServiceWorker}
)

// projectName is the reference's rule for the Compose project name, which is also the prefix
// of every volume and network.
var projectName = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

// LoadOptions are the inputs of Load.
type LoadOptions struct {
	// Checkout is the OCE checkout root; its compose files are loaded from there and it is the
	// project directory.
	Checkout string
	// Project is the Compose project name (DefaultProject when empty).
	Project string
	// StateDir is the state directory; the installation, kubeconfig and container kubeconfig
	// variables point into it.
	StateDir string
	// User are the user's -f/--file and --env-file options (ParseArgs).
	User UserOptions
	// Environment is the environment interpolation sees, as `docker compose config` would (the
	// process environment; the checkout's .env and the user's env files are read as well). The
	// variables occ sets win over it.
	Environment map[string]string
	// Engine is the kind of the engine the project runs on (empty is Docker), which its records
	// name. On a kind Compose treats as Podman (engine.Registration.ComposePodman) the
	// checkout's compose.podman.yaml, when it exists, is layered after compose.kubernetes.yaml
	// (and before the user's files, so theirs still win), with OCC_CONTAINER_ENGINE_SOCKET set
	// to EngineSocket; on any other kind the file is never read.
	Engine engine.Kind
	// EngineSocket is the path of the engine's API socket occ reaches it through.
	EngineSocket string
	// Routing is set when the private Agent Gateway route is set up beside the cluster: the
	// controller and worker-kubernetes then mount its key and CA files of StateDir (addRouting).
	Routing bool
}

// Model is a loaded, checked Compose project, ready to be snapshotted.
type Model struct {
	// Project is the compose-go model, with the bridge gateway filled in.
	Project *types.Project
	// Checkout is the project directory.
	Checkout string
	// APIURL is the controller's loopback publication of 3000/tcp.
	APIURL string
	// Network is the development network.
	Network Network
	// Added are the services the user's Compose files add to the checkout's that `up` starts
	// after the profile's own, in start order (those the profile's services need start with
	// them: DataStage, APIStage).
	Added []string

	status map[string]ServiceStatus
	// stages are the started services of each `compose up` (stageData, stageAPI, stageAdded),
	// each in start order.
	stages   [3][]string
	envFiles []string
	// engine is the kind of the engine the project runs on, which its records name.
	engine engine.Kind
}

// Sources are the files the model was read from: the Compose files, the env files given with
// them, and the checkout's .env (read when it exists). A reload of the recorded snapshot is only
// right while they are unchanged.
func (m *Model) Sources() []string {
	out := append([]string{}, m.Project.ComposeFiles...)
	out = append(out, m.envFiles...)
	return append(out, filepath.Join(m.Checkout, ".env"))
}

// Network describes the development network.
type Network struct {
	// Name is the engine-side name (<project>_development).
	Name string
	// Subnet and Gateway of its IPAM config; Gateway is the subnet's first address unless the
	// files set one.
	Subnet, Gateway string
}

// ProjectError is a model that breaks one or more of the profile's rules. Nothing has run.
type ProjectError struct {
	Violations []Violation
}

func (e *ProjectError) Error() string {
	msg := "the Compose model breaks the development rules; nothing was started:"
	for _, v := range e.Violations {
		msg += "\n  - " + v.String()
	}
	return msg
}

// Unwrap is the bad setting behind e: the Compose files (the checkout's and those given after
// --) are the user's to fix, so the CLI reports e as it reports every bad setting.
func (e *ProjectError) Unwrap() error {
	values := make([]string, 0, len(e.Violations))
	for _, v := range e.Violations {
		values = append(values, v.String())
	}
	return &option.Error{Option: "the Compose model", Value: strings.Join(values, "; "), Rule: "breaks the development rules",
		Fix: "change the Compose files or the options after -- so that every rule holds"}
}

// Violation is one broken rule: where (service or top-level resource, key, value), which rule,
// and how to fix it.
type Violation struct {
	// Service is the service concerned, or "" for a top-level volume or network.
	Service string
	// Key locates the value ("ports[0]", "volumes.occ_bootstrap_data.external").
	Key   string
	Value string
	// Rule is the rule in the reference's words where it has them.
	Rule string
	Fix  string
}

func (v Violation) String() string {
	where := v.Key
	if v.Service != "" {
		where = "service " + v.Service + ": " + v.Key
	}
	s := fmt.Sprintf("%s = %q: %s", where, v.Value, v.Rule)
	if v.Fix != "" {
		s += "; " + v.Fix
	}
	return s
}

// Load renders compose.yaml + compose.kubernetes.yaml (+ compose.podman.yaml on Podman, + the
// user's files) of the checkout with compose-go, sets the development variables, fills the
// bridge gateway and applies the profile's rules. It reads files only; the engine is not contacted (EnsureAbsent does that).
// A model that breaks a rule is returned with its *ProjectError (and must not run); any other
// error comes without a model.
func Load(ctx context.Context, opts LoadOptions) (*Model, error) {
	name, err := checkLoadOptions(opts)
	if err != nil {
		return nil, err
	}
	own, err := checkoutFiles(opts.Checkout, opts.Engine.Registration().ComposePodman)
	if err != nil {
		return nil, err
	}
	files := append(append([]string{}, own...), opts.User.Files...)

	l := newModelLoader(opts, name)
	project, err := l.load(ctx, files)
	if err != nil {
		return nil, err
	}
	// The checkout's own files alone tell which services the user's files add, and what they
	// change of the checkout's services.
	checkout := project
	if len(opts.User.Files) > 0 {
		if checkout, err = l.load(ctx, own); err != nil {
			return nil, err
		}
	}
	m := &Model{Project: project, Checkout: opts.Checkout, envFiles: append([]string{}, opts.User.EnvFiles...), engine: opts.Engine.OrDocker()}
	if violations := m.applyRules(checkout, opts); len(violations) > 0 {
		// The model comes with its refusal, so a dry run can show the whole plan beside it.
		return m, &ProjectError{Violations: violations}
	}
	m.restartWithTheEngine()
	return m, nil
}

// checkLoadOptions returns the Compose project's name (DefaultProject unless one is given) once
// it and the paths of opts are valid.
func checkLoadOptions(opts LoadOptions) (string, error) {
	name := opts.Project
	if name == "" {
		name = DefaultProject
	}
	if !projectName.MatchString(name) {
		return "", fmt.Errorf("%s %q must match %s (lowercase letters, digits, '_' and '-', starting with a letter or digit); choose another project name", EnvProject, name, projectName)
	}
	if !filepath.IsAbs(opts.Checkout) || !filepath.IsAbs(opts.StateDir) {
		return "", fmt.Errorf("load Compose model: checkout %q and state directory %q must be absolute", opts.Checkout, opts.StateDir)
	}
	return name, nil
}

// modelLoader renders Compose files of the checkout with the environment of one Load.
type modelLoader struct {
	opts LoadOptions
	name string
	// env is the caller's environment, sorted; forced are the development variables.
	env, forced []string
}

// newModelLoader sets up the environment of the project name: the caller's, then the
// development variables, which are applied after it so that they win over it (cli.WithEnv
// overwrites) and over env files (cli.WithDotEnv only adds unset keys).
func newModelLoader(opts LoadOptions, name string) *modelLoader {
	env := make([]string, 0, len(opts.Environment)+4)
	for k, v := range opts.Environment {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	forced := []string{
		VarInstallationConfig + "=" + filepath.Join(opts.StateDir, InstallationConfigName),
		VarKubeconfig + "=" + filepath.Join(opts.StateDir, ContainerKubeconfigName),
		VarNetworkName + "=" + NetworkName(name),
		VarHostKubeconfig + "=" + filepath.Join(opts.StateDir, KubeconfigName),
	}
	if opts.Engine.Registration().ComposePodman {
		forced = append(forced, VarEngineSocket+"="+opts.EngineSocket)
	}
	return &modelLoader{opts: opts, name: name, env: env, forced: forced}
}

// load renders the model of files.
func (l *modelLoader) load(ctx context.Context, files []string) (*types.Project, error) {
	po, err := cli.NewProjectOptions(files,
		cli.WithWorkingDirectory(l.opts.Checkout),
		cli.WithEnv(l.env),
		cli.WithEnv(l.forced),
		cli.WithEnvFiles(l.opts.User.EnvFiles...),
		cli.WithDotEnv,
		cli.WithDefaultProfiles(),
		cli.WithName(l.name),
		cli.WithResolvedPaths(true),
	)
	if err != nil {
		return nil, fmt.Errorf("load Compose model from %s: %w", l.opts.Checkout, err)
	}
	project, err := po.LoadProject(ctx)
	if err != nil {
		return nil, fmt.Errorf("load Compose model from %s: %w", l.opts.Checkout, err)
	}
	return project, nil
}

// applyRules classifies the services, adds what the profile adds (the worker's additions, the
// Installation config, routing when asked for, the bridge gateway) and checks the profile's
// rules, in that order. It returns every violation.
func (m *Model) applyRules(checkout *types.Project, opts LoadOptions) []Violation {
	var violations []Violation
	violations = append(violations, m.classifyServices(checkout)...)
	m.adoptWorkerAdditions(checkout)
	m.keepInstallationConfig(checkout)
	if opts.Routing {
		violations = append(violations, m.addRouting(opts.StateDir)...)
	}
	violations = append(violations, m.fillGateway()...)
	violations = append(violations, m.checkOwnership()...)
	violations = append(violations, m.checkServices()...)
	violations = append(violations, m.checkPublications()...)
	violations = append(violations, m.checkPodmanLogging()...)
	return violations
}

// RestartPolicy is the restart policy occ gives the long-running services it starts (PostgreSQL,
// the controller, worker-kubernetes) when the checkout's files set none: after the engine
// restarts (a Docker Desktop update, a reboot) they come back by themselves, as the k3d node
// they work with does (k3d gives its nodes the same policy). The one-shot jobs get none: they
// ran once, and must not run again.
const RestartPolicy = "unless-stopped"

func (m *Model) restartWithTheEngine() {
	for _, name := range append([]string{ServicePostgres}, APIServices...) {
		svc, ok := m.Project.Services[name]
		if !ok || svc.Restart != "" {
			continue
		}
		svc.Restart = RestartPolicy
		m.Project.Services[name] = svc
	}
}

// checkoutFiles are the checkout's own Compose files of the profile, in layering order:
// compose.yaml and compose.kubernetes.yaml, then on Podman compose.podman.yaml when the checkout
// has one. OCE keeps its Podman adjustments there (today: the Docker Compute worker's SELinux
// label and its engine socket, for a service this profile never starts); layering it keeps the
// project's model the one OCE defines for Podman.
func checkoutFiles(checkout string, podman bool) ([]string, error) {
	files := []string{filepath.Join(checkout, FileBase), filepath.Join(checkout, FileKubernetes)}
	if !podman {
		return files, nil
	}
	overlay := filepath.Join(checkout, FilePodman)
	switch fi, err := os.Stat(overlay); {
	case errors.Is(err, fs.ErrNotExist):
		return files, nil
	case err != nil:
		return nil, fmt.Errorf("read the checkout's Podman overlay %s: %w", overlay, err)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("the checkout's Podman overlay %s is not a regular file; occ layers it on Podman, so make it a file or remove it", overlay)
	}
	return append(files, overlay), nil
}

// NetworkName is the engine-side name of the development network of project.
func NetworkName(project string) string { return project + "_" + NetworkKey }

// Name is the Compose project name.
func (m *Model) Name() string { return m.Project.Name }
