package kubeprofile

import (
	"context"

	"github.com/openclaw/occ/internal/occdev/profile"
	"github.com/openclaw/occ/internal/occdev/profile/oce"
)

var _ profile.StatusReader = Profile{}

// Status is the Kubernetes-only control plane as `occ dev status` reports it: the recorded OCE
// control plane, with whether its API answers through the development proxy.
func (Profile) Status(ctx context.Context, rec profile.Recorded) *profile.Status {
	cp := rec.State().ControlPlane
	if cp == nil {
		return nil
	}
	return oce.Status(ctx, cp)
}
