package occdev

import (
	"context"

	"github.com/openclaw/occ/internal/occdev/profile"
	"github.com/openclaw/occ/internal/occdev/reload"
)

// ReloadOptions are the settings of `occ dev reload` (reload.Options) and the test seams.
type ReloadOptions struct {
	reload.Options

	deps deps
}

// Reload is `occ dev reload` (reload.Run), with the parts of the registered control-plane
// profiles and cluster providers.
func Reload(ctx context.Context, opts ReloadOptions) (*reload.Result, error) {
	return reload.Run(ctx, opts.Options, reloadParts(opts.deps))
}

// PlanReload is `occ dev reload --dry-run` (reload.Describe), with the same parts.
func PlanReload(opts ReloadOptions) (*reload.Plan, error) {
	return reload.Describe(opts.Options, reloadParts(opts.deps))
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
