// Package profile is the contract between the `occ dev up` flow and a control-plane profile
// (layer 3): what a profile is asked for, what it may use of a running `up`, and what it gives
// back. The flow looks a profile up by its --control-plane name and never asks which one it
// drives; a profile sees the flow only through Input, View and Env, never through the flow's
// own run or plan.
package profile

import (
	"context"
	"encoding/json"
	"io"
	"time"

	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/controlplane/compose"
	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/engine/locate"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/occdev/step"
	"github.com/openclaw/occ/internal/progress"
)

// Profile is one control plane of `occ dev up`, registered under its --control-plane name.
type Profile interface {
	// Platform is how the platform serves this control plane, fixed before any setting is
	// read: where the Gateway is published and which namespace is the default.
	Platform() Platform
	// Plan decides, before anything runs and without contacting anything, what the profile
	// does in one `up`. A setting it refuses is an *option.Error; nothing exists yet.
	Plan(in Input) (Planned, error)
}

// Platform is what a profile asks of the platform layer.
type Platform struct {
	// Gateway says where the control plane runs beside the platform, which decides how the
	// Gateway is published and how the Installation reaches the cluster (platform.ControlPlane).
	Gateway platform.ControlPlane
	// Namespace is the platform namespace when -n/--namespace is not given.
	Namespace string
}

// Input is what a profile plans from: the flow's decided values it may read.
type Input struct {
	// Name is the profile's --control-plane name.
	Name string
	// Environment is the environment's name (--name): the default one keeps occ's fixed
	// defaults (ports, Compose project), another chooses its own (HostPort).
	Environment string
	// Namespace is the platform namespace; StateDir the private state directory `up` claims.
	Namespace string
	StateDir  string
	// ClusterProvider is the --cluster-provider the cluster comes from.
	ClusterProvider string
	// EngineKind is the container engine's kind (docker or podman), empty without one.
	EngineKind engine.Kind
	// StartupTimeout bounds each readiness wait.
	StartupTimeout time.Duration
	// DryRun is set when the plan is for --dry-run: what the profile says is worded for a run
	// that creates nothing.
	DryRun bool
	// Routing says the platform installs the routing controllers (its GatewayClass is
	// platform.RoutingGatewayClass): a control plane routes dedicated Agent Gateways through them.
	Routing bool
	// OCE are the OCE control plane's settings every OCE profile shares.
	OCE OCEOptions
	// Settings are the profile's own settings, as the caller of `up` gives them under the
	// profile's --control-plane name, of the type the profile's package declares (SettingsOf);
	// nil when none were given.
	Settings any
	// Pins are occ's pins (the node image as selected).
	Pins *pins.Set
	// ClusterAPIPort is the Kubernetes API's port on 127.0.0.1 of the cluster occ creates (0:
	// chosen at creation); a port the profile publishes on 127.0.0.1 must differ from it.
	ClusterAPIPort int
	// Engine is the located container engine's endpoint and EngineSource the rule that chose
	// it.
	Engine       locate.Endpoint
	EngineSource string
	// Deps are the parts of the profile's run tests replace, as the flow holds them.
	Deps Deps
}

// SettingsOf are the profile's own settings of type T from in (a T or a *T), the zero T when
// none were given.
func SettingsOf[T any](in Input) (T, error) {
	return option.Own[T](in.Settings, "the "+in.Name+" profile")
}

// OCEOptions are the inputs of the OCE control plane (layer 3) every OCE profile shares: where
// its source is, how its images are obtained, the Compose project's name and options, and where
// the verified bootstrap key goes. A profile that runs no Compose project refuses ComposeArgs
// itself.
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

// View is what a profile's step describes itself from for the dry run.
type View struct {
	Namespace      string
	StateDir       string
	StartupTimeout time.Duration
	// EngineName is the container engine as people write it (Docker, Podman).
	EngineName string
	// Routing is Input.Routing.
	Routing bool
}

// Env is what a profile's steps use of the running `up`. Each part is set once the step that
// makes it has run: the engine after the preflight's connection (nil on a cluster without
// one), the state after it is claimed, the connection once the cluster is available.
type Env interface {
	// Engine is the container engine the run reaches, nil when the cluster needs none.
	Engine() *docker.Engine
	// State is the claimed private state: records are written through it before what they
	// name exists, so `down` can always remove it.
	State() *state.Dir
	// Conn is the connection to the cluster, which records every object it creates.
	Conn() *kubeobj.Conn
	// InCluster is the verified in-cluster reference of an image imported into the node.
	InCluster(l images.Local) (string, error)
	// Log receives notes that are not step lines.
	Log() io.Writer
}

// Step is one step of a profile: described from the View, run on the Env.
type Step = step.Step[View, Env]

// Lane is a sequence of a profile's steps that runs beside the other lanes of its group.
type Lane = step.Lane[View, Env]

// Planned is a profile decided for one `up`. Embed Base to leave out what the profile does not
// need: every method of Base does nothing.
type Planned interface {
	// Pending says what of the control plane occ does not start (no checkout was found); the
	// summary and the dry run say it plainly. A pending profile contributes nothing else.
	Pending() string
	// Refusal is what `up` refuses of the decided plan before anything exists (a Compose model
	// that breaks the profile's rules): the dry run prints the whole plan and lists it among
	// the problems; `up` stops at it. nil when there is none.
	Refusal() error
	// Needs is what the control plane needs of the cluster (a network to join, ports to
	// publish); a provider that cannot give it refuses it.
	Needs() cluster.Needs
	// Preflight makes the profile's live checks at the end of the preflight, before the state
	// is claimed.
	Preflight(ctx context.Context, env Env, rep progress.Reporter) error
	// BeforeCluster are steps that finish before the cluster exists; they run first in the
	// cluster lane of a cluster occ creates.
	BeforeCluster() []Step
	// ImportImages names the control plane's local images for the dry run, each with how it
	// travels (nil: it imports none); Imports are those images, imported into the node with the
	// OpenShell images once the steps before have run.
	ImportImages() []step.Image
	Imports(env Env) []images.Local
	// Installation adds the control plane's part of the Installation before it is written.
	Installation(ctx context.Context, env Env, in *platform.InstallationInput) error
	// BeforeInstallation are steps after the platform is installed and before the Installation
	// is written, for what the Installation must name (the Compose profile's private route).
	BeforeInstallation() []Step
	// Route describes the private Agent Gateway route the profile sets up itself, for the plan
	// and the dry run; "" when the platform's route (or none) stands.
	Route() string
	// ControlPlane are the control plane's own steps, after the platform is installed.
	ControlPlane() []Step
	// Rollback undoes what a failed `up` made outside the state's records (a user's
	// --key-output file); it runs with the rollback of the records.
	Rollback(env Env) error
	// Summary is the control plane's part of the summary of a successful `up`; nil says
	// nothing.
	Summary(env Env) *Summary
}

// Documented is a Planned that shows its plan in the plan document; a profile that is not
// shows none.
type Documented interface {
	// Document is the plan as the plan document shows it; nil shows none.
	Document() Document
}

// Document is a profile's plan as documents show it: it marshals to the plan document's "oce"
// object (`up --dry-run -o json`), and PrintPlan writes its own lines of the dry run's table,
// after the platform's and before the problems.
type Document interface {
	PrintPlan(w io.Writer)
}

// RawDocument is a profile's plan document read back from JSON (a dry run's document read by
// another program): it marshals to the same JSON, and prints nothing of the dry run's table, since
// only the profile knows what its document says.
type RawDocument json.RawMessage

// MarshalJSON writes the document as it was read.
func (d RawDocument) MarshalJSON() ([]byte, error) { return d, nil }

// PrintPlan prints nothing.
func (RawDocument) PrintPlan(io.Writer) {}

// Decided is a profile package's New as the contract's Plan returns it: the decided profile, or
// no Planned at all on an error.
func Decided[P Planned](p P, err error) (Planned, error) {
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Base is a Planned that does nothing: a profile embeds it and writes only what it adds.
type Base struct{}

func (Base) Pending() string                                                      { return "" }
func (Base) Refusal() error                                                       { return nil }
func (Base) Needs() cluster.Needs                                                 { return cluster.Needs{} }
func (Base) Preflight(context.Context, Env, progress.Reporter) error              { return nil }
func (Base) BeforeCluster() []Step                                                { return nil }
func (Base) ImportImages() []step.Image                                           { return nil }
func (Base) Imports(Env) []images.Local                                           { return nil }
func (Base) Installation(context.Context, Env, *platform.InstallationInput) error { return nil }
func (Base) BeforeInstallation() []Step                                           { return nil }
func (Base) Route() string                                                        { return "" }
func (Base) ControlPlane() []Step                                                 { return nil }
func (Base) Rollback(Env) error                                                   { return nil }
func (Base) Summary(Env) *Summary                                                 { return nil }

// Pending is a planned profile that only says what of its control plane occ does not start
// (no checkout was found), and why.
func Pending(why string) Planned { return pending{why: why} }

type pending struct {
	Base
	why string
}

func (p pending) Pending() string { return p.why }

// Summary is what `up` reports of the control plane it started.
type Summary struct {
	// ControlPlane says where OCE runs and from which checkout.
	ControlPlane string `json:"controlPlane"`
	// Drivers are the Installation's compute and sandbox drivers.
	Drivers string `json:"drivers"`
	// APIURL is the OCE API's origin; InstallationID the Installation the key belongs to.
	APIURL         string `json:"apiURL"`
	InstallationID string `json:"installationID"`
	// KeyFile is the verified bootstrap service key (0600); Namespace the bootstrap Namespace.
	KeyFile   string `json:"keyFile"`
	Namespace string `json:"namespace,omitempty"`
	// RuntimeImage is the Agent runtime's in-cluster digest reference.
	RuntimeImage string `json:"runtimeImage,omitempty"`
	// AdminEmail and PasswordFile are the first administrator's sign-in (the Kubernetes-only
	// profile copies the password out of the cluster; 0600, never its content).
	AdminEmail   string `json:"adminEmail,omitempty"`
	PasswordFile string `json:"passwordFile,omitempty"`
	// BaseImages are the base images the builds used, by digest, with where each is used.
	BaseImages []string `json:"baseImages,omitempty"`
	// Route is the private Agent Gateway route the profile set up itself (Planned.Route), as its
	// clients reach it; empty when it set up none.
	Route string `json:"route,omitempty"`
	// Services are the Compose model's services, started or not, with why (Compose only).
	Services []compose.ServiceStatus `json:"services,omitempty"`
}
