package oce

import (
	"context"

	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/profile"
	"github.com/openclaw/occ/internal/occdev/state"
)

// Status is the recorded OCE control plane as `occ dev status` reports it, whichever profile
// started it, with whether its API answers. It never fails: what cannot be read is said.
func Status(ctx context.Context, cp *state.ControlPlane) *profile.Status {
	out := &profile.Status{Checkout: cp.Checkout, Commit: cp.Commit, APIURL: cp.APIURL, KeyFile: cp.KeyPath, InstallationID: cp.InstallationID,
		Services: []profile.ServiceStatus{}, Images: append([]state.ControlPlaneImage{}, cp.Images...), BaseImages: append([]state.BaseImage{}, cp.BaseImages...)}
	if cp.APIURL != "" {
		out.API = "ready"
		pctx, cancel := context.WithTimeout(ctx, controlplane.ReadinessRequestTimeout)
		defer cancel()
		if err := controlplane.CheckSession(pctx, controlplane.NewAPIClient(controlplane.ReadinessRequestTimeout), cp.APIURL); err != nil {
			out.API = "not ready: " + err.Error()
		}
	}
	return out
}
