package kubeobj

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/openclaw/occ/internal/occdev/state"
)

// ClientConfig loads the recorded kubeconfig file with the recorded context, and namespace as
// the default namespace (for Helm).
func ClientConfig(a state.Cluster, namespace string) clientcmd.ClientConfig {
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: a.Kubeconfig}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: a.Context, Context: clientcmdapi.Context{Namespace: namespace}}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
}

// RESTConfig is the client configuration of a recorded cluster.
func RESTConfig(a state.Cluster) (*rest.Config, error) {
	cfg, err := ClientConfig(a, "").ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s with context %q: %w (the file or context was changed since up; restore it)", a.Kubeconfig, a.Context, err)
	}
	// The default client-side limits add seconds of throttling to a few dozen calls.
	cfg.QPS, cfg.Burst = 50, 100
	return cfg, nil
}
