package sandbox

import (
	"context"
	"fmt"

	"github.com/openclaw/occ/internal/driver"
	"github.com/openclaw/occ/internal/driver/compute"
	"github.com/openclaw/occ/internal/driver/openshell"
)

// Status is what `occ sandbox status` reports: Compute's observation of the revision plus the
// driver's view of where its Harness is reached and, when asked, how it is doing.
type Status struct {
	*compute.Observation
	Harness *HarnessObservation `json:"harness,omitempty"`
}

// HarnessObservation is the Harness endpoint and, given the app-server token, its probe.
type HarnessObservation struct {
	*openshell.HarnessEndpoint
	Status *openshell.HarnessStatus `json:"status,omitempty"`
}

// StatusOptions tune Status.
type StatusOptions struct {
	// AppServerToken, when set, probes a Codex Harness through its app-server endpoint. It is
	// sent only to that endpoint and never appears in the result.
	AppServerToken string
}

// Status reads, without changing anything, the revision's namespace, Sandbox, Harness Pods and
// attachments, and for a Sandbox that exists the Harness endpoint. A part that cannot be read
// is Unknown with its cause and listed in Problems; Complete reports whether there are any.
func (s *Session) Status(ctx context.Context, rf *compute.RevisionFile, opts StatusOptions) (*Status, error) {
	obs, err := s.Compute.Observe(ctx, rf, s.SandboxObserver())
	if err != nil {
		return nil, err
	}
	st := &Status{Observation: obs}
	if obs.Sandbox.Exists() {
		st.Harness = observeHarness(ctx, s.Driver, rf, opts.AppServerToken, obs)
	}
	return st, nil
}

// observeHarness asks the driver where the Harness is reached and, given the app-server token,
// how it is doing. Failures become problems, like the rest of the observation.
func observeHarness(ctx context.Context, d *openshell.Driver, rf *compute.RevisionFile, token string, obs *compute.Observation) *HarnessObservation {
	problem := func(what string, err error) {
		obs.Problems = append(obs.Problems, fmt.Sprintf("%s: %v", what, err))
	}
	ns, err := compute.ResolveNamespace(rf.NamespaceID)
	if err != nil {
		problem("Harness endpoint", err)
		return nil
	}
	req, err := rf.Requirements()
	if err != nil {
		problem("Harness endpoint", err)
		return nil
	}
	ep, err := d.HarnessEndpoint(ctx, driver.HarnessContext{NamespaceContext: driver.NamespaceContext{Namespace: ns}, Revision: rf.Revision(), Requirements: req})
	if err != nil {
		problem("Harness endpoint", err)
		return nil
	}
	h := &HarnessObservation{HarnessEndpoint: ep}
	if token != "" && !ep.Outbound {
		if h.Status, err = d.HarnessStatus(ctx, ep, token); err != nil {
			problem("Harness status", err)
		}
	}
	return h
}
