package occdev

import (
	"context"
	"io"
	"time"

	"github.com/openclaw/occ/internal/occdev/profile"
	"github.com/openclaw/occ/internal/occdev/reload"
	"github.com/openclaw/occ/internal/progress"
)

// ReloadOptions are the settings of `occ dev reload`, each as reload.Options says, and the test
// seams.
type ReloadOptions struct {
	StateDir       string
	Environment    string
	Services       []string
	StartupTimeout time.Duration
	OCCCommand     string
	Progress       progress.Sink
	Log            io.Writer
	OCCVersion     string
	NoDiagnose     bool

	deps deps
}

// Reload is `occ dev reload` (reload.Run), with the parts of the registered control-plane
// profiles and cluster providers.
func Reload(ctx context.Context, opts ReloadOptions) (*reload.Result, error) {
	return reload.Run(ctx, opts.options(), reloadParts(opts.deps))
}

// PlanReload is `occ dev reload --dry-run` (reload.Describe), with the same parts.
func PlanReload(opts ReloadOptions) (*reload.Plan, error) {
	return reload.Describe(opts.options(), reloadParts(opts.deps))
}

func (o ReloadOptions) options() reload.Options {
	return reload.Options{
		StateDir: o.StateDir, Environment: o.Environment, Services: o.Services, StartupTimeout: o.StartupTimeout,
		OCCCommand: o.OCCCommand, Progress: o.Progress, Log: o.Log, OCCVersion: o.OCCVersion, NoDiagnose: o.NoDiagnose,
	}
}

// reloadParts are what only the registration tables know of a reload: the control-plane
// profiles (with those a test added), the cluster providers and their record types, and the
// step runner's test seam.
func reloadParts(d deps) reload.Parts {
	profiles := map[string]profile.Profile{}
	for name, x := range controlPlanes(UpOptions{deps: d}) {
		profiles[string(name)] = x
	}
	return reload.Parts{Profiles: profiles, Providers: providers(), ClusterType: clusterRecordType, AfterStep: d.AfterStep}
}
