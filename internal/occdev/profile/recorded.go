package profile

import (
	"context"
	"io"
	"strings"
	"time"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/occdev/step"
)

// What a profile adds to the commands that act on a recorded environment (`occ dev reload`,
// `occ dev status`). The flow finds the profile by the name the state records and asks it
// through these optional interfaces, which a Profile implements beside Plan; a profile that
// does not implement one is told apart by the flow, never by its name.

// Reloader is a profile whose recorded control plane `occ dev reload` can roll onto the images
// it rebuilt from the checkout. Reload refuses the environment of a profile that is not one,
// naming the profile, before anything is built.
type Reloader interface {
	// ReloadSteps roll the control plane onto the rebuilt images. They run after the images
	// were rebuilt, imported into the node and verified there, and before the reload records
	// them; each converges when run again, so an interrupted reload is finished by the next.
	// st is the recorded state, for steps only some environments need. Every call returns
	// steps that share nothing with an earlier call's.
	ReloadSteps(st state.State) []ReloadStep
}

// ReloadChecker is a Reloader with checks of its own of the recorded environment, run after
// the checks every reload makes and before anything is built.
type ReloadChecker interface {
	// CheckReload refuses (through ReloadEnv.Refuse) an environment the profile cannot roll
	// as recorded, and finds what its reload steps need. It changes nothing.
	CheckReload(ctx context.Context, env ReloadEnv) error
}

// BuildChooser is a Reloader whose services a reload may be limited to (occ dev reload
// SERVICE…): it says which recorded builds those services run.
type BuildChooser interface {
	// ChooseBuilds are the builds of all the chosen services run, in the order of all; a choice
	// that runs none of them is refused with an error that names the services that do.
	ChooseBuilds(all []Build, services []string) ([]Build, error)
}

// NoBuildOf refuses chosen services that run no image occ built from the checkout, naming the
// services that do.
func NoBuildOf(services []string, builds []Build) error {
	var built []string
	for _, b := range builds {
		built = append(built, b.Services...)
	}
	return &option.Error{Option: "SERVICE", Value: strings.Join(services, " "), Rule: "runs no image occ built from the checkout",
		Fix: "name a service built from the checkout: " + strings.Join(built, ", ")}
}

// Build is one recorded build of the control plane's images as a BuildChooser sees it.
type Build struct {
	// Role says what runs the image ("controller", "runtime", "development"); Services are
	// the services that run it, by the names `occ dev status` lists.
	Role     string
	Services []string
}

// ReloadStep is one step of a profile's reload, run on the ReloadEnv. Reload steps have no
// description: `occ dev reload --dry-run` lists them by name.
type ReloadStep = step.Step[View, ReloadEnv]

// ReloadEnv is what a profile's reload steps use of the running reload.
type ReloadEnv interface {
	// Recorded is the state as the reload found it, before anything was rebuilt.
	Recorded() state.State
	// State is the state the reload holds locked; objects are recorded through it before they
	// exist.
	State() *state.Dir
	// Conn is the connection to the recorded cluster.
	Conn() *kubeobj.Conn
	// StartupTimeout bounds each wait for what the reload rolled.
	StartupTimeout() time.Duration
	// Rebuilt are the images the reload rebuilt (those of the chosen services), changed or not.
	Rebuilt() []Rebuilt
	// Chosen are the services the reload is limited to, by the names `occ dev status` lists;
	// nil is every service.
	Chosen() []string
	// RewriteInstallation points the recorded Installation file at the rebuilt Agent runtime.
	// It returns the file's bytes and whether they name a rebuilt runtime (nil and false when
	// the runtime did not change).
	RewriteInstallation() ([]byte, bool, error)
	// Roll records that the reload rolled these workloads onto rebuilt images (the result
	// lists them once each); Rolled is what was recorded so far.
	Roll(names ...string)
	Rolled() []string
	// Log receives notes that are not step lines.
	Log() io.Writer
	// Engine is the recorded container engine, connected.
	Engine() *docker.Engine
	// Refuse is the error that refuses the reload of this environment because of why, with
	// what to do instead.
	Refuse(why string) error
}

// Rebuilt is one image a reload rebuilt.
type Rebuilt struct {
	// Role says what runs it ("controller", "runtime", "development").
	Role  string
	Image images.Local
	// Services are the services that run it, by the names `occ dev status` lists.
	Services []string
	// Changed says its image ID is not the recorded one; Imported that the cluster runs it
	// (it was imported into the node).
	Changed  bool
	Imported bool
}

// Recorded is what a profile reads of a recorded environment for `occ dev status`: the record
// and the connections to what it names, each made from the record alone on first use.
type Recorded interface {
	State() state.State
	// Engine is the recorded container engine.
	Engine(ctx context.Context) (*docker.Engine, error)
	// Conn is the connection to the recorded cluster, as the recorded cluster.
	Conn(ctx context.Context) (*kubeobj.Conn, error)
}

// StatusReader is a profile that says what `occ dev status` reports of its control plane.
// `status` of a profile that is not one reports the recorded OCE control plane, when there is
// one, and nothing of the profile's own.
type StatusReader interface {
	// Status is the profile's part of `status`: nil says nothing. It never fails; what cannot
	// be read is said in the result.
	Status(ctx context.Context, rec Recorded) *Status
}

// Status is what `occ dev status` reports of the recorded control plane.
type Status struct {
	// Checkout is the OCE checkout it was built from and Commit its recorded commit; empty for
	// a control plane that is not OCE.
	Checkout string `json:"checkout,omitempty"`
	Commit   string `json:"commit,omitempty"`
	// Runs says, in the profile's words, what the control plane is and where it runs, for one
	// the other fields do not describe.
	Runs           string `json:"runs,omitempty"`
	ComposeProject string `json:"composeProject,omitempty"`
	APIURL         string `json:"apiURL,omitempty"`
	KeyFile        string `json:"keyFile,omitempty"`
	InstallationID string `json:"installationID,omitempty"`
	// Images are the control plane's images as recorded (built or selected, and the digest
	// reference the cluster runs each by); BaseImages are the bases their builds were made from,
	// each pulled by digest. Never null in JSON.
	Images     []state.ControlPlaneImage `json:"images"`
	BaseImages []state.BaseImage         `json:"baseImages"`
	// Services are the control plane's services the profile reads itself (the Compose
	// services: running with their health, exited with their code, or missing), each with its
	// state. ServicesProblem says why they could not be read.
	Services        []ServiceStatus `json:"services"`
	ServicesProblem string          `json:"servicesProblem,omitempty"`
	// API is "ready" when GET /api/auth/session answers 2xx, else "not ready: <why>".
	API string `json:"api,omitempty"`
}

// ServiceStatus is one service of the control plane as `occ dev status` shows it.
type ServiceStatus struct {
	Service string `json:"service"`
	// State is "running (healthy)", "exited with code 1", "missing", …
	State string `json:"state"`
}
