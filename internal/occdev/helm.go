package occdev

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
)

// restClientGetter gives the Helm SDK the recorded kubeconfig file and context, and the release
// namespace, so Helm talks to exactly the cluster `up` chose (never the current context of the
// shell that runs `down`).
type restClientGetter struct {
	access    ClusterAccess
	namespace string
}

var _ genericclioptions.RESTClientGetter = (*restClientGetter)(nil)

func (g *restClientGetter) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	return clientConfig(g.access, g.namespace)
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

// helmConfiguration is an action.Configuration for the release namespace, storing releases in
// Secrets as the helm CLI does.
func helmConfiguration(access ClusterAccess, namespace string) (*action.Configuration, error) {
	cfg := new(action.Configuration)
	quiet := func(string, ...any) {}
	if err := cfg.Init(&restClientGetter{access: access, namespace: namespace}, namespace, "secret", quiet); err != nil {
		return nil, fmt.Errorf("initialise Helm for namespace %s: %w", namespace, err)
	}
	return cfg, nil
}

// installRelease installs ch as a new release. It never upgrades or adopts: an existing
// release of the same name is an error, because occ cannot tell whether it made it.
func installRelease(ctx context.Context, access ClusterAccess, namespace, name string, ch *chart.Chart, values map[string]any, labels map[string]string, timeout time.Duration) (*release.Release, error) {
	cfg, err := helmConfiguration(access, namespace)
	if err != nil {
		return nil, err
	}
	install := action.NewInstall(cfg)
	install.Namespace = namespace
	install.ReleaseName = name
	install.Labels = labels
	// occ waits itself, by watch and with a clear message per workload, after the install.
	install.Wait = false
	install.Timeout = timeout
	rel, err := install.RunWithContext(ctx, ch, values)
	if err != nil {
		return rel, fmt.Errorf("helm install %s in namespace %s: %w", name, namespace, err)
	}
	return rel, nil
}

// uninstallRelease removes a release and everything Helm installed with it. A release that is
// already gone is not an error, so cleanup can be repeated.
func uninstallRelease(access ClusterAccess, namespace, name string, timeout time.Duration) error {
	cfg, err := helmConfiguration(access, namespace)
	if err != nil {
		return err
	}
	u := action.NewUninstall(cfg)
	u.IgnoreNotFound = true
	u.Timeout = timeout
	u.DeletionPropagation = "background"
	if _, err := u.Run(name); err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return fmt.Errorf("helm uninstall %s in namespace %s: %w", name, namespace, err)
	}
	return nil
}

// releaseStatus reads the release; a missing release returns ("", nil).
func releaseStatus(access ClusterAccess, namespace, name string) (*release.Release, error) {
	cfg, err := helmConfiguration(access, namespace)
	if err != nil {
		return nil, err
	}
	rel, err := action.NewStatus(cfg).Run(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("helm status %s in namespace %s: %w", name, namespace, err)
	}
	return rel, nil
}
