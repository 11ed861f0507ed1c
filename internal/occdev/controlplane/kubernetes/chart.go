package kubernetes

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/release"

	"github.com/openclaw/occ/internal/occdev/helmrelease"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
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
	// Log receives Helm's progress messages; nil discards them.
	Log func(format string, args ...any)
}

// InstallChart installs the OCE chart as release openclaw-enterprise through the shared Helm
// release code (helmrelease, the same as the Gateway chart's) and waits as `helm --wait` does:
// the pre-install hooks (the bootstrap isolation policy, the initialization ServiceAccount and
// the migration+bootstrap Job) must complete, then every Deployment must have its replicas
// ready, within Timeout. The release is recorded in conn's state before it is installed.
//
// A release of that name is upgraded in place (the same values converge; the hook Job runs
// again, and the bootstrap script leaves an initialized database alone) when it carries this
// state's ownership label, and refused otherwise.
func InstallChart(ctx context.Context, conn *kubeobj.Conn, req ChartInstall) (*release.Release, error) {
	vals, err := req.Values.Map()
	if err != nil {
		return nil, err
	}
	rel, err := helmrelease.Ensure(ctx, helmrelease.EnsureOptions{
		Release:  helmrelease.Release{Access: conn.Access, Namespace: req.Namespace, Name: ReleaseName},
		Chart:    req.Chart,
		Values:   vals,
		Owner:    conn.Owner(),
		Recorder: conn.Recorder(),
		Timeout:  req.Timeout,
		Wait:     true,
		Converge: true,
		Log:      req.Log,
	})
	if err != nil {
		return rel, fmt.Errorf("%w (waited for the migration and bootstrap Job, then the API and worker Deployments, within %s); "+
			"the chart's validation message, or the Job's and Deployments' Pods in namespace %s, say why", err, req.Timeout, req.Namespace)
	}
	return rel, nil
}
