package occdev

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/platform"
	"github.com/openclaw/occ/internal/occdev/profile"
	"github.com/openclaw/occ/internal/occdev/profile/composeprofile"
	"github.com/openclaw/occ/internal/occdev/profile/kubeprofile"
	"github.com/openclaw/occ/internal/occdev/profile/oce"
	"github.com/openclaw/occ/internal/occdev/recorded"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/occdev/step"
	"github.com/openclaw/occ/internal/progress"
)

// flowProfile is what a control plane (layer 3) adds to the flow, as the flow runs it. The
// cluster lane and the platform steps are the same for every profile; a profile adds its own
// steps around them and what its cluster needs, so adding one never reshapes upSteps. Every
// field is optional. A profile package (a profile.Profile) becomes one through fromProfile.
type flowProfile struct {
	// preflight makes the profile's live checks at the end of the preflight, before the state is
	// claimed (the Compose project's resources absent, its plugin found, selected images
	// present).
	preflight func(ctx context.Context, r *run, rep progress.Reporter) error
	// cluster is what the control plane needs of the cluster: the Compose profile joins its
	// <project>_development network, the Kubernetes-only profile publishes its API proxy's
	// NodePort on 127.0.0.1. A provider that cannot give it refuses it.
	cluster cluster.Needs
	// beforeCluster are steps that must finish before the cluster exists (the Compose profile's
	// network and data services); they run first in the cluster lane.
	beforeCluster []Step
	// imports are local images of the control plane imported into the cluster in the same pass
	// as the OpenShell images (the Agent runtime), once the cluster lane's steps before the
	// import have run.
	imports func(r *run) []images.Local
	// importNames names those images for the dry run (before they are built or selected).
	importNames func(p *Plan) []string
	// installation adds the control plane's part of the Installation (the Agent runtime's
	// in-cluster reference, the node) before it is written.
	installation func(ctx context.Context, r *run, in *platform.InstallationInput) error
	// beforeInstallation are the profile's steps between the platform and the Installation.
	beforeInstallation []Step
	// route describes the private route the profile sets up itself ("" for none).
	route string
	// controlPlane are the control plane's own steps, after the platform is installed.
	controlPlane []Step
	// rollback undoes what a failed `up` made outside the state's records (a user's
	// --key-output file); it runs with the rollback of the records.
	rollback func(r *run) error
	// summary is the control plane's part of the summary of a successful `up`.
	summary func(r *run) *OCESummary
	// pending says what of this control plane occ does not start (no checkout was found, or
	// the profile is not wired yet); the summary and the dry run say it plainly.
	pending string
	// refusal is what `up` refuses of the decided plan before anything exists; the dry run
	// lists it among the problems, after the whole plan.
	refusal error
}

// OCESummary is what `up` reports of the control plane it started.
type OCESummary = profile.Summary

// controlPlane is one --control-plane value: how the platform serves it, and how its profile is
// planned from the resolved plan.
type controlPlane struct {
	platform profile.Platform
	plan     func(p *Plan, o UpOptions) (flowProfile, error)
	// reload is how `occ dev reload` rolls an environment of this control plane onto rebuilt
	// images (nil: reload refuses it); status is what `occ dev status` reports of its control
	// plane (nil: the recorded OCE control plane alone).
	reload *reloadHook
	status func(ctx context.Context, rec *recorded.Env) *ControlPlaneStatus
}

// controlPlanes lists the profiles by --control-plane value. Adding a profile is its package
// and one line here (registered); the flow looks the profile up by name and never asks which
// one it drives. A test adds its own profiles through the Profiles seam.
func controlPlanes(o UpOptions) map[ControlPlane]controlPlane {
	table := map[ControlPlane]controlPlane{
		ControlPlaneCompose:    {platform: composeprofile.Platform, plan: plannedCompose, reload: reloaderOf(composeprofile.Profile{}), status: statusOf(composeprofile.Profile{})},
		ControlPlaneKubernetes: {platform: kubeprofile.Platform, plan: kubernetesProfile, reload: reloaderOf(kubeprofile.Profile{})},
	}
	for name, x := range o.deps.Profiles {
		table[ControlPlane(name)] = registered(x)
	}
	return table
}

// SupportedControlPlanes names the --control-plane values in a stable order.
func SupportedControlPlanes() []string {
	var names []string
	for n := range controlPlanes(UpOptions{}) {
		names = append(names, string(n))
	}
	slices.Sort(names)
	return names
}

// profileOf plans the profile of the plan's control plane; a bad control-plane setting (a
// checkout that is not one, a refused Compose model) is an error before anything runs.
func profileOf(p *Plan, o UpOptions) (flowProfile, error) {
	return controlPlanes(o)[p.ControlPlane].plan(p, o)
}

// registered is the table entry of a profile package: the flow hands it the plan's values and
// adapts its steps, which describe themselves from a profile.View and run on the run as a
// profile.Env.
func registered(x profile.Profile) controlPlane {
	return controlPlane{platform: x.Platform(), plan: func(p *Plan, o UpOptions) (flowProfile, error) {
		if len(o.OCE.ComposeArgs) > 0 {
			return flowProfile{}, &OptionError{Option: "Compose options after --", Value: strings.Join(o.OCE.ComposeArgs, " "),
				Rule: "the " + string(p.ControlPlane) + " profile does not accept Compose options", Fix: "drop them, or use --control-plane compose"}
		}
		planned, err := x.Plan(p.input(o))
		if err != nil {
			return flowProfile{}, err
		}
		return fromProfile(planned), nil
	}, reload: reloaderOf(x), status: statusOf(x)}
}

// fromProfile is a planned profile as the flow runs it.
func fromProfile(x profile.Planned) flowProfile {
	if why := x.Pending(); why != "" {
		return flowProfile{pending: why}
	}
	adapt := func(steps []profile.Step) []Step {
		return step.Adapt(steps, (*Plan).view, func(_ context.Context, r *run) (profile.Env, error) { return r, nil })
	}
	fp := flowProfile{
		preflight:     func(ctx context.Context, r *run, rep progress.Reporter) error { return x.Preflight(ctx, r, rep) },
		cluster:       x.Needs(),
		beforeCluster: adapt(x.BeforeCluster()),
		installation: func(ctx context.Context, r *run, in *platform.InstallationInput) error {
			return x.Installation(ctx, r, in)
		},
		beforeInstallation: adapt(x.BeforeInstallation()),
		route:              x.Route(),
		controlPlane:       adapt(x.ControlPlane()),
		rollback:           func(r *run) error { return x.Rollback(r) },
		summary:            func(r *run) *OCESummary { return x.Summary(r) },
		refusal:            x.Refusal(),
	}
	// A profile imports images when it names a list, and the dry run names them when the list
	// is not empty.
	if names := x.ImportNames(); names != nil {
		fp.imports = func(r *run) []images.Local { return x.Imports(r) }
		if len(names) > 0 {
			fp.importNames = func(*Plan) []string { return names }
		}
	}
	return fp
}

// input is what a profile plans from.
func (p *Plan) input(o UpOptions) profile.Input {
	return profile.Input{
		Name: string(p.ControlPlane), Environment: p.Environment, Namespace: p.Namespace, StateDir: p.StateDir, ClusterProvider: p.ClusterProvider,
		EngineKind: engineKind(p), StartupTimeout: p.StartupTimeout, DryRun: o.DryRun, Routing: p.installsRouting(),
	}
}

// view is what a profile's step describes itself from.
func (p *Plan) view() profile.View {
	return profile.View{Namespace: p.Namespace, StateDir: p.StateDir, StartupTimeout: p.StartupTimeout, EngineName: engineName(p), Routing: p.installsRouting()}
}

// The run is what a profile's steps use of it (profile.Env).
var _ profile.Env = (*run)(nil)

func (r *run) Engine() *docker.Engine                   { return r.engine }
func (r *run) State() *state.Dir                        { return r.state }
func (r *run) Conn() *kubeobj.Conn                      { return r.conn }
func (r *run) InCluster(l images.Local) (string, error) { return r.inCluster(l) }

// inCluster is the verified in-cluster reference of an imported image.
func (r *run) inCluster(l images.Local) (string, error) {
	for _, v := range r.verifiedImages() {
		if v.Pin.Name() == l.Pin.Name() && v.Pin.Digest == l.Pin.Digest {
			return v.Reference, nil
		}
	}
	return "", fmt.Errorf("image %s was not verified in the node (a bug in occ: the import step skipped it)", l.Pin)
}

// The Kubernetes-only profile's settings and plan, as UpOptions and the plan document name them.
type (
	KubernetesOptions = kubeprofile.Options
	KubernetesPlan    = kubeprofile.Plan
)

// EnvDevPort is the OCE API's port on 127.0.0.1 (the Kubernetes-only profile).
const EnvDevPort = kubeprofile.EnvDevPort

// The build output file and the controller's and Agent runtime's image roles, which `occ dev
// reload` shares.
const (
	buildLogFile   = kubeprofile.BuildLogFile
	roleController = oce.RoleController
	roleRuntime    = oce.RoleRuntime
)

// kubernetesProfile plans the Kubernetes-only profile (package kubeprofile) from the settings
// of one `up`, and puts its plan where the dry run shows it.
func kubernetesProfile(p *Plan, o UpOptions) (flowProfile, error) {
	k, err := kubeprofile.Profile{
		OCE: o.OCE, Options: o.Kubernetes, Pins: p.pins, KubeAPIPort: p.APIPort,
		Deps: o.deps.Deps,
	}.New(p.input(o))
	if err != nil {
		return flowProfile{}, err
	}
	if k.OCE != nil {
		p.OCE = &OCEPlan{Plan: k.OCE, Kubernetes: k.Kube}
	}
	return fromProfile(k), nil
}
func (r *run) Log() io.Writer { return r.log }

// plannedCompose plans the Compose profile (package composeprofile) from the settings of one
// `up`, and puts its plan where the dry run shows it.
func plannedCompose(p *Plan, o UpOptions) (flowProfile, error) {
	c, err := composeprofile.Profile{
		OCE: o.OCE, Engine: p.Engine, EngineSource: p.EngineSource,
		Deps: composeprofile.Deps{BuildNetwork: o.deps.BuildNetwork},
	}.New(p.input(o))
	if err != nil {
		return flowProfile{}, err
	}
	if op := c.Compose; op != nil {
		p.OCE = &OCEPlan{Plan: op.Plan, Project: op.Project}
	}
	return fromProfile(c), nil
}
