// Package kube holds the small client-go helpers the driver and the dev lifecycle share:
// kubeconfig loading, server-side apply with occ's field manager, and waits by watch.
package kube

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// FieldManager is the server-side apply field manager every occ write uses, so ownership of
// applied fields is visible and conflicts with other managers are reported, not overwritten.
const FieldManager = "occ"

// RESTConfig loads a client configuration the way kubectl does: an explicit kubeconfig path
// wins over $KUBECONFIG and ~/.kube/config, and an explicit context over the current one.
func RESTConfig(kubeconfig, context string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfig != "" {
		rules.ExplicitPath = kubeconfig
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: context}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		where := "$KUBECONFIG or ~/.kube/config"
		if kubeconfig != "" {
			where = kubeconfig
		}
		if context != "" {
			return nil, fmt.Errorf("load kubeconfig %s with context %q: %w (check --kubeconfig and --context)", where, context, err)
		}
		return nil, fmt.Errorf("load kubeconfig %s: %w (pass --kubeconfig or set KUBECONFIG)", where, err)
	}
	return cfg, nil
}
