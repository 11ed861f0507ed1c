package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	clientset "k8s.io/client-go/kubernetes"

	"github.com/openclaw/occ/internal/kube"
	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/helmrelease"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/pins"
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
	var rel *release.Release
	err = guarded(ctx, conn.Kube, req.Namespace, func(ctx context.Context) error {
		var err error
		rel, err = helmrelease.Ensure(ctx, helmrelease.EnsureOptions{
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
		return err
	})
	var stuck *kube.StuckError
	if errors.As(err, &stuck) {
		return rel, err
	}
	if err != nil {
		return rel, fmt.Errorf("%w (waited for the migration and bootstrap Job, then the API and worker Deployments, within %s); "+
			"the chart's validation message, or the Job's and Deployments' Pods in namespace %s, say why", err, req.Timeout, req.Namespace)
	}
	return rel, nil
}

// guarded runs a Helm operation that waits for its hook Jobs and workloads itself, while
// kube.WatchNewPods watches the Pods and Jobs it creates in namespace: one that cannot come up
// by itself (an image the node does not have, a crash loop, a failed Job) stops the operation at
// once, and its *kube.StuckError is returned instead of Helm's timeout much later.
func guarded(ctx context.Context, c clientset.Interface, namespace string, run func(context.Context) error) error {
	if c == nil {
		return run(ctx)
	}
	gctx, stopGuard := context.WithCancel(ctx)
	defer stopGuard()
	wait, err := kube.WatchNewPods(gctx, c, namespace, fmt.Sprintf("Helm release %s in namespace %s", ReleaseName, namespace), kube.WaitOptions{})
	if err != nil {
		return err
	}
	hctx, stopHelm := context.WithCancel(ctx)
	defer stopHelm()
	stuck := make(chan error, 1)
	go func() {
		err := wait()
		if err != nil {
			stopHelm()
		}
		stuck <- err
	}()
	err = run(hctx)
	stopGuard()
	if g := <-stuck; g != nil {
		return g
	}
	return err
}

// The placeholders of the preflight render stand for the values only the live cluster knows,
// each of the shape the install passes: an in-cluster digest reference for the controller, a
// Pod address in k3s's default Pod range for PostgreSQL, and an address and port on a Docker
// network for the Kubernetes API. The values hold no credential (the chart reads every secret
// from the Secrets occ creates), so none is needed.
var (
	placeholderDigest      = "sha256:" + strings.Repeat("0", 64)
	placeholderPostgresIP  = netip.MustParseAddr("10.42.0.10")
	placeholderAPIEndpoint = netip.MustParseAddrPort("172.18.0.2:6443")
)

// PlaceholderValuesInput is the input of the install's values with placeholders for what the
// cluster decides later: controller is the controller's reference as planned (a built image's
// tag gets a placeholder digest; a selected image keeps its own).
func PlaceholderValuesInput(namespace, controller string, hostAPIPort int) (ValuesInput, error) {
	img, err := pins.ParseImage(controller)
	if err != nil {
		return ValuesInput{}, fmt.Errorf("controller image %q: %w", controller, err)
	}
	if img.Digest == "" {
		img.Digest = placeholderDigest
	}
	return ValuesInput{Namespace: namespace, ControllerImage: img.DigestReference(), HostAPIPort: hostAPIPort,
		PostgresIP: placeholderPostgresIP, APIEndpoint: placeholderAPIEndpoint}, nil
}

// ChartError is an OCE chart that refuses the development values, or does not render: nothing
// has been created when it is returned.
type ChartError struct {
	Chart string
	Err   error
}

func (e *ChartError) Error() string {
	return fmt.Sprintf("the checkout's OCE chart %s refuses the values occ dev up installs it with (placeholders for the cluster's addresses and the controller's digest): %v; nothing was created. "+
		"A newer chart may require or retire a value occ sets: update occ, or run a checkout whose chart this occ supports", e.Chart, strings.TrimSpace(e.Err.Error()))
}

func (e *ChartError) Unwrap() error { return e.Err }

// CheckChart renders the chart offline with values, exactly as the install will (release
// openclaw-enterprise in namespace, a first install, the values schema checked), so that a
// `fail` of its validation, a retired key, a template or YAML error or a schema violation stops
// `up` before anything exists. It splits the manifests and hooks as Helm does before an install,
// which is where a rendered document that is not YAML fails.
func CheckChart(ch *chart.Chart, namespace string, values Values) error {
	vals, err := values.Map()
	if err != nil {
		return err
	}
	name := ChartPath
	if md := ch.Metadata; md != nil {
		name = md.Name + " " + md.Version
	}
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: ReleaseName, Namespace: namespace, Revision: 1, IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		return &ChartError{Chart: name, Err: err}
	}
	rendered, err := engine.Render(ch, rv)
	if err != nil {
		return &ChartError{Chart: name, Err: err}
	}
	for k := range rendered {
		if strings.HasSuffix(k, "NOTES.txt") {
			delete(rendered, k)
		}
	}
	if _, _, err := releaseutil.SortManifests(rendered, chartutil.DefaultCapabilities.APIVersions, releaseutil.InstallOrder); err != nil {
		return &ChartError{Chart: name, Err: err}
	}
	return nil
}

// ControllerUpgrade is one upgrade of the OCE release onto a rebuilt controller image.
type ControllerUpgrade struct {
	// Access is the recorded cluster; Namespace the release namespace.
	Access    cluster.Access
	Namespace string
	// Controller is the rebuilt controller's in-cluster digest reference.
	Controller string
	// Owner is the state's ownership label value, which the release must carry; Recorder is the
	// state, which already records the release.
	Owner    string
	Recorder state.Recorder
	// Timeout bounds the upgrade with its hooks.
	Timeout time.Duration
	// Log receives Helm's progress messages; nil discards them.
	Log func(format string, args ...any)
	// Kube, when set, watches the Pods the upgrade creates (the hook Job's) and stops the
	// upgrade on one that cannot come up by itself.
	Kube clientset.Interface
}

// UpgradeController moves this state's OCE release onto a rebuilt controller image, so the
// release's manifest keeps naming what its Deployments run. It upgrades with the chart and the
// values the release already holds, images.controller alone replaced: the chart's pre-upgrade
// hooks run again, so the rebuilt controller's migration and bootstrap Job applies its
// migrations before the Deployments roll (the bootstrap leaves an initialized database alone).
// Helm does not wait for the Deployments; the caller waits for their rollout. A release that
// already names the controller is left alone and UpgradeController returns revision 0.
func UpgradeController(ctx context.Context, req ControllerUpgrade) (revision int, err error) {
	r := helmrelease.Release{Access: req.Access, Namespace: req.Namespace, Name: ReleaseName}
	// An upgrade a killed reload left pending is marked failed first: Helm refuses to touch the
	// release until its status changes, and this reload upgrades it again.
	rel, err := helmrelease.Recover(r, req.Owner, req.Log)
	if err != nil {
		return 0, err
	}
	if rel == nil {
		return 0, fmt.Errorf("Helm release %s is gone from namespace %s, so the rebuilt controller has no release to run in; remove the environment with occ dev down and bring it up again", ReleaseName, req.Namespace)
	}
	if rel.Info != nil && rel.Info.Status.IsPending() {
		return 0, fmt.Errorf("Helm release %s in namespace %s is %s and does not carry this environment's label %s=%s, so occ leaves it alone; remove the environment with occ dev down and bring it up again",
			ReleaseName, req.Namespace, rel.Info.Status, kubeobj.LabelDevState, req.Owner)
	}
	vals, err := copyValues(rel.Config)
	if err != nil {
		return 0, err
	}
	imgs, _ := vals["images"].(map[string]any)
	if imgs == nil {
		imgs = map[string]any{}
		vals["images"] = imgs
	}
	// Only a deployed release that names the controller is done; a failed (or recovered) one
	// is upgraded again.
	if imgs["controller"] == req.Controller && rel.Info != nil && rel.Info.Status == release.StatusDeployed {
		return 0, nil
	}
	imgs["controller"] = req.Controller
	var up *release.Release
	err = guarded(ctx, req.Kube, req.Namespace, func(ctx context.Context) error {
		var err error
		up, err = helmrelease.Ensure(ctx, helmrelease.EnsureOptions{
			Release: r, Chart: rel.Chart, Values: vals, Owner: req.Owner, Recorder: req.Recorder,
			Timeout: req.Timeout, Converge: true, Log: req.Log,
		})
		return err
	})
	var stuck *kube.StuckError
	if errors.As(err, &stuck) {
		return 0, err
	}
	if err != nil {
		return 0, fmt.Errorf("%w (the migration and bootstrap Job of the rebuilt controller, in namespace %s, says why)", err, req.Namespace)
	}
	return up.Version, nil
}

// copyValues is a deep copy of a release's values (plain JSON values).
func copyValues(v map[string]any) (map[string]any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode the release's values: %w", err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("decode the release's values: %w", err)
	}
	return out, nil
}
