package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/openclaw/occ/internal/occdev/state"
)

// LoadChart loads the OCE chart of the checkout and checks it is the chart this package drives.
func LoadChart(checkout string) (*chart.Chart, error) {
	dir := filepath.Join(checkout, filepath.FromSlash(ChartPath))
	ch, err := loader.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("load the OCE chart %s: %w; point occ at an OCE checkout (its %s)", dir, err, ChartPath)
	}
	if ch.Metadata == nil || ch.Metadata.Name != ChartName || ch.Metadata.APIVersion != chart.APIVersionV2 {
		name, api := "", ""
		if ch.Metadata != nil {
			name, api = ch.Metadata.Name, ch.Metadata.APIVersion
		}
		return nil, fmt.Errorf("%s is chart %q (apiVersion %q), not %s (apiVersion v2): not an OCE checkout's production chart", dir, name, api, ChartName)
	}
	return ch, nil
}

// ChartInstall is one install (or converging upgrade) of the OCE chart.
type ChartInstall struct {
	// Chart is the loaded chart (LoadChart).
	Chart *chart.Chart
	// Namespace is the release namespace, which exists already.
	Namespace string
	// Values are the development values.
	Values Values
	// Timeout bounds the whole install, hooks and the wait included (the startup timeout).
	Timeout time.Duration
	// Ownership labels go on the release record, so a repeated run can tell its own release.
	Ownership Ownership
	// Log receives Helm's progress messages; nil discards them.
	Log func(format string, args ...any)
}

// InstallChart installs the OCE chart as release openclaw-enterprise and waits as `helm
// --wait` does: the pre-install hooks (the bootstrap isolation policy, the initialization
// ServiceAccount and the migration+bootstrap Job) must complete, then every Deployment must
// have its replicas ready, within Timeout. The release is recorded before it is installed.
//
// A release of that name is upgraded in place (the same values converge; the hook Job runs
// again, and the bootstrap script leaves an initialized database alone) when its record carries
// this state's ownership labels, and refused otherwise.
func InstallChart(ctx context.Context, getter genericclioptions.RESTClientGetter, rec Recorder, req ChartInstall) (*release.Release, error) {
	log := req.Log
	if log == nil {
		log = func(string, ...any) {}
	}
	vals, err := req.Values.Map()
	if err != nil {
		return nil, err
	}
	cfg := new(action.Configuration)
	if err := cfg.Init(getter, req.Namespace, "secret", log); err != nil {
		return nil, fmt.Errorf("initialise Helm for namespace %s: %w", req.Namespace, err)
	}
	what := fmt.Sprintf("Helm release %s in namespace %s", ReleaseName, req.Namespace)
	history, err := action.NewHistory(cfg).Run(ReleaseName)
	if err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if len(history) > 0 {
		last := history[len(history)-1]
		if !req.Ownership.owns(last.Labels) {
			return nil, fmt.Errorf("%s already exists and is not owned by this development state: occ never takes over a release it did not install; uninstall it or use another cluster or namespace", what)
		}
		if err := rec.Record(state.HelmRelease(req.Namespace, ReleaseName)); err != nil {
			return nil, fmt.Errorf("record %s in state: %w", what, err)
		}
		up := action.NewUpgrade(cfg)
		up.Namespace = req.Namespace
		up.Wait = true
		up.Timeout = req.Timeout
		up.Labels = req.Ownership.with(nil)
		rel, err := up.RunWithContext(ctx, ReleaseName, req.Chart, vals)
		if err != nil {
			return rel, installError("upgrade", what, req.Timeout, err)
		}
		return rel, nil
	}
	if err := rec.Record(state.HelmRelease(req.Namespace, ReleaseName)); err != nil {
		return nil, fmt.Errorf("record %s in state before installing it: %w", what, err)
	}
	in := action.NewInstall(cfg)
	in.Namespace = req.Namespace
	in.ReleaseName = ReleaseName
	in.Wait = true
	in.Timeout = req.Timeout
	in.Labels = req.Ownership.with(nil)
	rel, err := in.RunWithContext(ctx, req.Chart, vals)
	if err != nil {
		return rel, installError("install", what, req.Timeout, err)
	}
	return rel, nil
}

func installError(verb, what string, timeout time.Duration, err error) error {
	return fmt.Errorf("helm %s %s (the migration and bootstrap Job, then the API and worker Deployments, within %s): %w; "+
		"the chart's validation message, or the Job's and Deployments' Pods in that namespace, say why", verb, what, timeout, err)
}
