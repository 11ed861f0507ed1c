package occdev

import (
	"context"
	"io"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/images"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/profile"
	"github.com/openclaw/occ/internal/occdev/profile/composeprofile"
	"github.com/openclaw/occ/internal/occdev/profile/kubeprofile"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/occdev/step"
)

// OCESummary is what `up` reports of the control plane it started.
type OCESummary = profile.Summary

// controlPlanes lists the profiles by --control-plane value. Adding a profile is its package
// and one line here; the flow plans each through the same Plan(profile.Input), looks it up by
// name and never asks which one it drives. A test adds its own profiles through the Profiles
// seam.
func controlPlanes(o UpOptions) map[ControlPlane]profile.Profile {
	table := map[ControlPlane]profile.Profile{
		ControlPlaneCompose:    composeprofile.Profile{},
		ControlPlaneKubernetes: kubeprofile.Profile{},
	}
	for name, x := range o.deps.Profiles {
		table[ControlPlane(name)] = x
	}
	return table
}

// SupportedControlPlanes names the --control-plane values in a stable order.
func SupportedControlPlanes() []string {
	return knownControlPlanes(controlPlanes(UpOptions{}))
}

// ProfileSettings are the settings the profiles o knows declare of their own
// (profile.Configurable), by --control-plane name in order. Each profile's are bound to a fresh options value, which
// becomes its entry of o.Settings: whoever fills the settings' fields (the CLI, from its flags
// and variables) fills what the profile plans from, without naming its options type.
func (o *UpOptions) ProfileSettings() []option.Setting {
	table := controlPlanes(*o)
	var out []option.Setting
	for _, name := range knownControlPlanes(table) {
		c, ok := table[ControlPlane(name)].(profile.Configurable)
		if !ok {
			continue
		}
		value, settings := c.Settings()
		if o.Settings == nil {
			o.Settings = map[ControlPlane]any{}
		}
		o.Settings[ControlPlane(name)] = value
		out = append(out, settings...)
	}
	return out
}

// profileOf plans the profile of the plan's control plane; a bad control-plane setting (a
// checkout that is not one, a refused Compose model) is an error before anything runs. A
// pending profile contributes nothing but why it is pending.
func profileOf(p *Plan, o UpOptions) (profile.Planned, error) {
	planned, err := controlPlanes(o)[p.ControlPlane].Plan(p.input(o))
	if err != nil {
		return nil, err
	}
	if why := planned.Pending(); why != "" {
		return profile.Pending(why), nil
	}
	if d, ok := planned.(profile.Documented); ok {
		p.OCE = d.Document()
	}
	return planned, nil
}

// profileSteps are a profile's steps as the flow runs them: each describes itself from the
// plan's profile.View and runs on the run as the profile's Env.
func profileSteps(steps []profile.Step) []Step {
	return step.Adapt(steps, (*Plan).view, func(_ context.Context, r *run) (profile.Env, error) { return r, nil })
}

// input is what a profile plans from.
func (p *Plan) input(o UpOptions) profile.Input {
	return profile.Input{
		Name: string(p.ControlPlane), Environment: p.Environment, Namespace: p.Namespace, StateDir: p.StateDir, ClusterProvider: p.ClusterProvider,
		EngineKind: engineKind(p), StartupTimeout: p.StartupTimeout, DryRun: o.DryRun, Routing: p.installsRouting(),
		OCE: o.OCE, Settings: o.Settings[p.ControlPlane], Pins: p.pins, ClusterAPIPort: p.APIPort,
		Engine: p.Engine, EngineSource: p.EngineSource, Deps: o.deps.Deps,
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
func (r *run) InCluster(l images.Local) (string, error) { return r.slots.InCluster(l) }
func (r *run) Log() io.Writer                           { return r.log }

// KubernetesOptions are the Kubernetes-only profile's own settings (UpOptions.Settings).
type KubernetesOptions = kubeprofile.Options
