package occdev

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/openclaw/occ/internal/occdev/state"
)

// ClusterProvider supplies the Kubernetes cluster `up` installs into. The flow never knows
// which provider it drives (kind's providers.Provider model): `existing` uses a kubeconfig
// context the user already has; k3d, in a later issue, creates a cluster and owns it.
type ClusterProvider interface {
	// Name is the --cluster-provider value.
	Name() string
	// Describe lists what Ensure would create or use, for --dry-run, without any I/O.
	Describe(p *Plan) []string
	// Ensure makes the cluster available and says how to reach it. A provider that creates a
	// cluster records it in the state before creating it.
	Ensure(ctx context.Context, sc *StepContext) (ClusterAccess, error)
	// NodeAddress is the host name or address at which a control plane outside the cluster
	// (the Compose profile) reaches a NodePort.
	NodeAddress(ctx context.Context, sc *StepContext) (string, error)
	// Release removes what Ensure created, if anything. It is called by rollback and `down`
	// after every recorded object inside the cluster is gone. A provider that did not create
	// the cluster must leave it alone.
	Release(ctx context.Context, access ClusterAccess) error
}

// ClusterAccess is how occ reaches a cluster: the kubeconfig file and the context, resolved to
// an absolute path and a concrete context name at `up` time and recorded in the state, so
// `down` and `status` never depend on the environment they run in. Server and UID (of the
// kube-system namespace) identify the cluster itself, so a context that later points elsewhere
// is noticed.
type ClusterAccess = state.Cluster

// clientConfig loads the recorded kubeconfig file with the recorded context.
func clientConfig(a ClusterAccess, namespace string) clientcmd.ClientConfig {
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: a.Kubeconfig}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: a.Context, Context: clientcmdapi.Context{Namespace: namespace}}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
}

// providers lists the supported cluster providers by name.
var providers = map[string]ClusterProvider{
	"existing": existingProvider{},
}

// ProviderExisting is the default provider: the current kubeconfig context (or --context).
const ProviderExisting = "existing"

// SupportedProviders names the --cluster-provider values in a stable order.
func SupportedProviders() []string {
	names := make([]string, 0, len(providers))
	for n := range providers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func lookupProvider(name string) (ClusterProvider, error) {
	if name == "" {
		name = ProviderExisting
	}
	p, ok := providers[name]
	if !ok {
		return nil, &OptionError{
			Option: "--cluster-provider", Value: name,
			Rule: "is not a supported cluster provider", Fix: "use one of: " + strings.Join(SupportedProviders(), ", "),
		}
	}
	return p, nil
}

// existingProvider uses a cluster the user already runs. It creates nothing and deletes
// nothing: `down` removes only the objects `up` created inside it.
type existingProvider struct{}

func (existingProvider) Name() string { return ProviderExisting }

func (existingProvider) Describe(p *Plan) []string {
	ctx := p.Context
	if ctx == "" {
		ctx = "the current context"
	} else {
		ctx = fmt.Sprintf("context %q", ctx)
	}
	kc := p.Kubeconfig
	if kc == "" {
		kc = "$KUBECONFIG or ~/.kube/config"
	}
	return []string{fmt.Sprintf("use the existing cluster of %s in %s (never deleted by down)", ctx, kc)}
}

func (existingProvider) Ensure(ctx context.Context, sc *StepContext) (ClusterAccess, error) {
	path, err := kubeconfigPath(sc.Plan.Kubeconfig)
	if err != nil {
		return ClusterAccess{}, err
	}
	access := ClusterAccess{Provider: ProviderExisting, Kubeconfig: path, Context: sc.Plan.Context}
	raw, err := clientConfig(access, "").RawConfig()
	if err != nil {
		return ClusterAccess{}, fmt.Errorf("read kubeconfig %s: %w (pass --kubeconfig or set KUBECONFIG)", access.Kubeconfig, err)
	}
	if access.Context == "" {
		access.Context = raw.CurrentContext
	}
	if access.Context == "" {
		return ClusterAccess{}, fmt.Errorf("kubeconfig %s has no current context: pass --context NAME", access.Kubeconfig)
	}
	kctx, ok := raw.Contexts[access.Context]
	if !ok {
		return ClusterAccess{}, fmt.Errorf("kubeconfig %s has no context %q: pass an existing --context", access.Kubeconfig, access.Context)
	}
	access.Name = kctx.Cluster
	if c, ok := raw.Clusters[kctx.Cluster]; ok {
		access.Server = c.Server
	}
	return access, nil
}

func (existingProvider) Release(context.Context, ClusterAccess) error { return nil }

// NodeAddress picks the InternalIP of a Ready node (any node when none reports Ready), in name
// order so repeated runs agree.
func (existingProvider) NodeAddress(ctx context.Context, sc *StepContext) (string, error) {
	nodes, err := sc.cluster.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("list the cluster's Nodes to find the Gateway NodePort address: %w", err)
	}
	sort.Slice(nodes.Items, func(i, j int) bool { return nodes.Items[i].Name < nodes.Items[j].Name })
	fallback := ""
	for _, n := range nodes.Items {
		ready := false
		for _, c := range n.Status.Conditions {
			ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
		}
		for _, a := range n.Status.Addresses {
			if a.Type != corev1.NodeInternalIP {
				continue
			}
			if ready {
				return a.Address, nil
			}
			if fallback == "" {
				fallback = a.Address
			}
		}
	}
	if fallback == "" {
		return "", fmt.Errorf("context %q has no Node with an InternalIP address, so the Compose control plane could not reach the Gateway NodePort: use --control-plane kubernetes", sc.cluster.access.Context)
	}
	return fallback, nil
}

// kubeconfigPath resolves the kubeconfig file the way kubectl does, to one absolute path. The
// path is recorded so `down` uses the same file whatever $KUBECONFIG says then; a $KUBECONFIG
// listing several files is refused because one recorded path could not reproduce the merge.
func kubeconfigPath(explicit string) (string, error) {
	raw := explicit
	if raw == "" {
		if env := os.Getenv("KUBECONFIG"); env != "" {
			var files []string
			for _, f := range filepath.SplitList(env) {
				if f != "" {
					files = append(files, f)
				}
			}
			if len(files) > 1 {
				return "", &OptionError{Option: "KUBECONFIG", Value: env, Rule: "lists several files, and occ records exactly one kubeconfig so down reaches the same cluster",
					Fix: "pass --kubeconfig FILE naming the file that holds the context (kubectl config view --flatten > FILE merges them)"}
			}
			if len(files) == 1 {
				raw = files[0]
			}
		}
	}
	if raw == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("find ~/.kube/config: %w (pass --kubeconfig)", err)
		}
		raw = filepath.Join(home, ".kube", "config")
	}
	abs, err := filepath.Abs(raw)
	if err != nil {
		return "", fmt.Errorf("kubeconfig path %q: %w", raw, err)
	}
	if _, err := os.Stat(abs); err != nil {
		return "", fmt.Errorf("kubeconfig %s: %w (pass --kubeconfig FILE or set KUBECONFIG)", abs, err)
	}
	return abs, nil
}
