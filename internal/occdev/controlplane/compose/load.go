package compose

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/openclaw/occ/internal/occdev/option"
)

// Names of the OCE Compose files, services, network and state files this profile relies on, as
// OCE's checkout names them.
const (
	FileBase       = "compose.yaml"
	FileKubernetes = "compose.kubernetes.yaml"

	ServicePostgres   = "postgres"
	ServiceMigrate    = "migrate"
	ServiceBootstrap  = "bootstrap"
	ServiceController = "controller"
	ServiceWorker     = "worker-kubernetes"

	// NetworkKey is the network every service shares and k3d joins.
	NetworkKey = "development"
	// APIPort is the controller's container port; its publication is the API URL.
	APIPort = 3000

	// SnapshotName is the rendered model in the state directory.
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

// The variables occ sets before rendering. compose.kubernetes.yaml
// uses the `:?` form for the first three, so a render without them fails inside Compose.
const (
	VarInstallationConfig = "OCC_DEVELOPMENT_INSTALLATION_CONFIG"
	VarKubeconfig         = "OCC_DEVELOPMENT_KUBECONFIG"
	VarNetworkName        = "OCC_DEVELOPMENT_NETWORK_NAME"
	VarHostKubeconfig     = "KUBECONFIG"
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
	// Added are the services the user's Compose files add to the checkout's, in name order,
	// all of which `up` starts after the profile's own.
	Added []string

	status   map[string]ServiceStatus
	envFiles []string
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

// Load renders compose.yaml + compose.kubernetes.yaml (+ the user's files) of the checkout with
// compose-go, sets the development variables, fills the bridge gateway and applies the
// profile's rules. It reads files only; the engine is not contacted (EnsureAbsent does that).
func Load(ctx context.Context, opts LoadOptions) (*Model, error) {
	name := opts.Project
	if name == "" {
		name = DefaultProject
	}
	if !projectName.MatchString(name) {
		return nil, fmt.Errorf("%s %q must match %s (lowercase letters, digits, '_' and '-', starting with a letter or digit); choose another project name", EnvProject, name, projectName)
	}
	if !filepath.IsAbs(opts.Checkout) || !filepath.IsAbs(opts.StateDir) {
		return nil, fmt.Errorf("load Compose model: checkout %q and state directory %q must be absolute", opts.Checkout, opts.StateDir)
	}
	files := append([]string{filepath.Join(opts.Checkout, FileBase), filepath.Join(opts.Checkout, FileKubernetes)}, opts.User.Files...)

	env := make([]string, 0, len(opts.Environment)+4)
	for k, v := range opts.Environment {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	// Applied after the caller's environment, so they win over it (cli.WithEnv overwrites) and
	// over env files (cli.WithDotEnv only adds unset keys).
	forced := []string{
		VarInstallationConfig + "=" + filepath.Join(opts.StateDir, InstallationConfigName),
		VarKubeconfig + "=" + filepath.Join(opts.StateDir, ContainerKubeconfigName),
		VarNetworkName + "=" + NetworkName(name),
		VarHostKubeconfig + "=" + filepath.Join(opts.StateDir, KubeconfigName),
	}
	load := func(files []string) (*types.Project, error) {
		po, err := cli.NewProjectOptions(files,
			cli.WithWorkingDirectory(opts.Checkout),
			cli.WithEnv(env),
			cli.WithEnv(forced),
			cli.WithEnvFiles(opts.User.EnvFiles...),
			cli.WithDotEnv,
			cli.WithDefaultProfiles(),
			cli.WithName(name),
			cli.WithResolvedPaths(true),
		)
		if err != nil {
			return nil, fmt.Errorf("load Compose model from %s: %w", opts.Checkout, err)
		}
		project, err := po.LoadProject(ctx)
		if err != nil {
			return nil, fmt.Errorf("load Compose model from %s: %w", opts.Checkout, err)
		}
		return project, nil
	}
	project, err := load(files)
	if err != nil {
		return nil, err
	}
	// The checkout's own files alone tell which services the user's files add.
	base := map[string]bool{}
	for _, n := range project.ServiceNames() {
		base[n] = true
	}
	for n := range project.DisabledServices {
		base[n] = true
	}
	if len(opts.User.Files) > 0 {
		own, err := load(files[:2])
		if err != nil {
			return nil, err
		}
		base = map[string]bool{}
		for _, n := range own.ServiceNames() {
			base[n] = true
		}
		for n := range own.DisabledServices {
			base[n] = true
		}
	}
	m := &Model{Project: project, Checkout: opts.Checkout, envFiles: append([]string{}, opts.User.EnvFiles...)}
	var violations []Violation
	violations = append(violations, m.classifyServices(base)...)
	violations = append(violations, m.fillGateway()...)
	violations = append(violations, m.checkOwnership()...)
	violations = append(violations, m.checkServices()...)
	violations = append(violations, m.checkPublications()...)
	if len(violations) > 0 {
		return nil, &ProjectError{Violations: violations}
	}
	return m, nil
}

// NetworkName is the engine-side name of the development network of project.
func NetworkName(project string) string { return project + "_" + NetworkKey }

// Name is the Compose project name.
func (m *Model) Name() string { return m.Project.Name }
