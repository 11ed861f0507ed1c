// Package helmrelease installs, inspects and removes the Helm releases of a development state
// with the Helm SDK (never the helm CLI), against exactly the recorded cluster. The platform
// layer installs the OpenShell Gateway chart through it, and the in-cluster control plane the
// OCE chart; its Remover serves `down`, rollback and `status` for every recorded release.
package helmrelease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/state"
)

// restClientGetter gives the Helm SDK the recorded kubeconfig file and context, and the release
// namespace, so Helm talks to exactly the cluster `up` chose (never the current context of the
// shell that runs `down`).
type restClientGetter struct {
	access    state.Cluster
	namespace string
}

var _ genericclioptions.RESTClientGetter = (*restClientGetter)(nil)

func (g *restClientGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return kubeobj.ClientConfig(g.access, g.namespace)
}

func (g *restClientGetter) ToRESTConfig() (*rest.Config, error) {
	return g.ToRawKubeConfigLoader().ClientConfig()
}

func (g *restClientGetter) ToDiscoveryClient() (discovery.CachedDiscoveryInterface, error) {
	cfg, err := g.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return memory.NewMemCacheClient(dc), nil
}

func (g *restClientGetter) ToRESTMapper() (meta.RESTMapper, error) {
	dc, err := g.ToDiscoveryClient()
	if err != nil {
		return nil, err
	}
	return restmapper.NewDeferredDiscoveryRESTMapper(dc), nil
}

// configuration is an action.Configuration for the release namespace, storing releases in
// Secrets as the helm CLI does. log receives Helm's progress messages; nil discards them.
func configuration(access state.Cluster, namespace string, log func(string, ...any)) (*action.Configuration, error) {
	cfg := new(action.Configuration)
	if log == nil {
		log = func(string, ...any) {}
	}
	if err := cfg.Init(&restClientGetter{access: access, namespace: namespace}, namespace, "secret", log); err != nil {
		return nil, fmt.Errorf("initialise Helm for namespace %s: %w", namespace, err)
	}
	return cfg, nil
}

// Release names one release on a recorded cluster.
type Release struct {
	Access    state.Cluster
	Namespace string
	Name      string
}

// Record is the state record of the release.
func (r Release) Record() state.Object { return Record(r.Namespace, r.Name) }

// EnsureOptions are the inputs of Ensure.
type EnsureOptions struct {
	Release
	Chart  *chart.Chart
	Values map[string]any
	// Owner is the state's ownership label value; the release carries it as a label.
	Owner string
	// Recorder receives the release before the install starts.
	Recorder state.Recorder
	// Timeout bounds Helm's own operations (the hooks, and the wait when Wait is set).
	Timeout time.Duration
	// Wait makes the install (or upgrade) wait as `helm --wait` does: every workload of the
	// release ready, every hook Job complete, within Timeout. Without it occ waits itself, by
	// watch and with a message per workload, after the install (the Gateway chart).
	Wait bool
	// Converge upgrades a release this state already installed with Chart and Values (`helm
	// upgrade`), so a repeated step converges on the values of this run. Without it such a
	// release is adopted as it is.
	Converge bool
	// Log receives Helm's progress messages; nil discards them. Values never reach it.
	Log func(format string, args ...any)
}

// Ensure installs the release, or, when it already exists with exactly this state's ownership
// label (a repeated step), adopts it as it is or upgrades it (Converge); a release of that name
// that is not this state's is refused, never upgraded or taken over. The release is recorded
// before the install starts, so a failure half-way is still uninstalled by rollback or `down`.
func Ensure(ctx context.Context, o EnsureOptions) (*release.Release, error) {
	if o.Recorder == nil {
		return nil, errors.New("helm release: no Recorder; a release must be recorded before it is installed (a bug in occ)")
	}
	rel, err := Status(o.Release)
	if err != nil {
		return nil, err
	}
	if rel != nil {
		if rel.Labels[kubeobj.LabelDevState] != o.Owner {
			return nil, fmt.Errorf("Helm release %s already exists in namespace %s and this development state did not install it (label %s=%s is missing): remove it or choose another --namespace",
				o.Name, o.Namespace, kubeobj.LabelDevState, o.Owner)
		}
		if err := o.Recorder.Record(o.Record()); err != nil {
			return nil, fmt.Errorf("record %s in the state: %w", o.Record(), err)
		}
		if rel, err = Recover(o.Release, o.Owner, o.Log); err != nil {
			return nil, err
		}
		// A release whose last operation did not end deployed (it failed, or an occ that was
		// killed left it pending) is upgraded onto this run's values even where a deployed one
		// would be adopted as it is.
		if !o.Converge && rel.Info != nil && rel.Info.Status == release.StatusDeployed {
			return rel, nil
		}
		return upgrade(ctx, o)
	}
	if err := o.Recorder.Record(o.Record()); err != nil {
		return nil, fmt.Errorf("record %s in the state before installing it: %w", o.Record(), err)
	}
	return Install(ctx, o)
}

// Install installs the chart as a new release. It never upgrades or adopts: an existing
// release of the same name is an error, because occ cannot tell whether it made it.
func Install(ctx context.Context, o EnsureOptions) (*release.Release, error) {
	cfg, err := configuration(o.Access, o.Namespace, o.Log)
	if err != nil {
		return nil, err
	}
	install := action.NewInstall(cfg)
	install.Namespace = o.Namespace
	install.ReleaseName = o.Name
	install.Labels = kubeobj.OwnerLabels(o.Owner)
	install.Wait = o.Wait
	install.Timeout = o.Timeout
	rel, err := install.RunWithContext(ctx, o.Chart, o.Values)
	if err != nil {
		return rel, fmt.Errorf("helm install %s in namespace %s: %w", o.Name, o.Namespace, err)
	}
	return rel, nil
}

// upgrade converges this state's existing release on Chart and Values, keeping its ownership
// labels. Hooks run again, as with `helm upgrade`.
func upgrade(ctx context.Context, o EnsureOptions) (*release.Release, error) {
	cfg, err := configuration(o.Access, o.Namespace, o.Log)
	if err != nil {
		return nil, err
	}
	up := action.NewUpgrade(cfg)
	up.Namespace = o.Namespace
	up.Labels = kubeobj.OwnerLabels(o.Owner)
	up.Wait = o.Wait
	up.Timeout = o.Timeout
	rel, err := up.RunWithContext(ctx, o.Name, o.Chart, o.Values)
	if err != nil {
		return rel, fmt.Errorf("helm upgrade %s in namespace %s: %w", o.Name, o.Namespace, err)
	}
	return rel, nil
}

// Uninstall removes a release and everything Helm installed with it. A release that is already
// gone is not an error, so cleanup can be repeated.
func Uninstall(r Release, timeout time.Duration) error {
	cfg, err := configuration(r.Access, r.Namespace, nil)
	if err != nil {
		return err
	}
	u := action.NewUninstall(cfg)
	u.IgnoreNotFound = true
	u.Timeout = timeout
	u.DeletionPropagation = "background"
	if _, err := u.Run(r.Name); err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return fmt.Errorf("helm uninstall %s in namespace %s: %w", r.Name, r.Namespace, err)
	}
	return nil
}

// Recover ends an operation on this state's release that a stopped occ left pending. Helm marks
// the newest revision pending-install, -upgrade or -rollback while it works and refuses every
// other operation until that status changes; an occ killed meanwhile (SIGKILL, a closed lid)
// leaves it so for ever. Every occ operation on a state's releases holds that state's lock, so a
// pending revision of a release carrying this state's label (owner) has no live operation
// behind it: Recover marks it failed, saying why, and Helm upgrades or uninstalls it again. It
// returns the newest revision as it now is (nil when the release does not exist); a release of
// another owner is left as it is.
func Recover(r Release, owner string, log func(string, ...any)) (*release.Release, error) {
	cfg, err := configuration(r.Access, r.Namespace, nil)
	if err != nil {
		return nil, err
	}
	last, err := cfg.Releases.Last(r.Name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read Helm release %s in namespace %s: %w", r.Name, r.Namespace, err)
	}
	if last.Info == nil || !last.Info.Status.IsPending() || last.Labels[kubeobj.LabelDevState] != owner {
		return last, nil
	}
	was := last.Info.Status
	last.Info.Status = release.StatusFailed
	last.Info.Description = fmt.Sprintf("%s interrupted: the occ that ran it stopped before it ended (marked failed by the next occ under the state's lock)", was)
	if err := cfg.Releases.Update(last); err != nil {
		return nil, fmt.Errorf("mark the interrupted %s of Helm release %s in namespace %s (revision %d) failed: %w", was, r.Name, r.Namespace, last.Version, err)
	}
	if log != nil {
		log("Helm release %s in namespace %s: revision %d was left %s by an interrupted occ; marked failed", r.Name, r.Namespace, last.Version, was)
	}
	return last, nil
}

// Status reads the release; a missing release returns (nil, nil).
func Status(r Release) (*release.Release, error) {
	cfg, err := configuration(r.Access, r.Namespace, nil)
	if err != nil {
		return nil, err
	}
	rel, err := action.NewStatus(cfg).Run(r.Name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("helm status %s in namespace %s: %w", r.Name, r.Namespace, err)
	}
	return rel, nil
}
