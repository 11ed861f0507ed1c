// Package cluster is layer 1 of `occ dev up`: the Kubernetes cluster everything else is
// installed into. A Provider makes a cluster available and says how to reach it; the flow never
// knows which provider it drives (kind's providers.Provider model). Each provider lives in its
// own package (existing/, k3d/) and sees only a Request: the names, paths, pins and recorder it
// needs, never the flow's internals.
//
// A provider that creates its cluster records it (state.Recorder) before creating it, so a
// failure half-way is still removed by rollback or `down` through the remover registered for
// the record's type. A provider that only uses a cluster records nothing and `down` never
// deletes that cluster.
package cluster

import (
	"context"
	"fmt"
	"io"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/progress"
)

// Access is how occ reaches a cluster, exactly as recorded in the state: the kubeconfig file
// and context (absolute path, concrete name), the server, the kube-system UID that identifies
// the cluster, and for a cluster on a Docker network the container kubeconfig, the node's
// address on that network and the network's name. `down` and `status` use only the recorded
// Access, never the environment they run in.
type Access = state.Cluster

// Request is everything a provider may use. Describe and Check get a Request without Owner,
// Recorder and Progress (a dry run records nothing and reports no progress).
type Request struct {
	// Name is the cluster name occ chose for a cluster it creates (k3d); empty otherwise.
	Name string
	// Kubeconfig and Context select an existing cluster (--kubeconfig, --context); empty
	// means $KUBECONFIG or ~/.kube/config, and its current context.
	Kubeconfig string
	Context    string
	// KubeconfigFile and ContainerKubeconfigFile are where a provider that creates its cluster
	// writes its kubeconfigs, inside the private state directory (0600 and 0644). The user's
	// own kubeconfig is never written.
	KubeconfigFile          string
	ContainerKubeconfigFile string
	// Engine is the Docker engine endpoint (unix:///…) recorded in the state, which a provider
	// that runs its cluster in containers must use (and `down` will use again); empty for a
	// provider that needs no engine.
	Engine string
	// Pins are the resolved pins (the k3s node image).
	Pins *pins.Set
	// Owner is the state's ownership label value, for the labels on what the provider creates.
	Owner string
	// Recorder receives what the provider creates, before it is created.
	Recorder state.Recorder
	// Log receives notes that are not progress lines.
	Log io.Writer
	// Progress reports intermediate states on the step's own line (node start, image pulls).
	Progress progress.Reporter
}

// Description says what a provider would create or use, for --dry-run.
type Description struct {
	// Creates lists what Ensure would create; empty for a provider that creates nothing.
	Creates []string
	// Note says what it would use or check without creating it.
	Note string
}

// Provider supplies the cluster `up` installs into.
type Provider interface {
	// Name is the --cluster-provider value.
	Name() string
	// Describe lists what Ensure would create or use. It performs no I/O.
	Describe(req Request) Description
	// Check validates the request against local facts only (flags, names, the kubeconfig
	// file), without contacting anything; the dry run reports its error.
	Check(req Request) error
	// Preflight makes the cheap live checks (the cluster or the container engine answers)
	// that must pass before any slow work. It creates nothing.
	Preflight(ctx context.Context, req Request) error
	// Ensure creates or adopts the cluster and says how to reach it. A provider that creates
	// a cluster records it through req.Recorder before creating it, and adopts an existing one
	// only when its recorded identity matches exactly.
	Ensure(ctx context.Context, req Request) (Access, error)
	// NodeAddress is the host name or address at which a control plane outside the cluster
	// (the Compose profile) reaches a NodePort of the cluster.
	NodeAddress(ctx context.Context, access Access) (string, error)
}

// ClientConfig loads the recorded kubeconfig file with the recorded context, and namespace as
// the default namespace (for Helm).
func ClientConfig(a Access, namespace string) clientcmd.ClientConfig {
	rules := &clientcmd.ClientConfigLoadingRules{ExplicitPath: a.Kubeconfig}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: a.Context, Context: clientcmdapi.Context{Namespace: namespace}}
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
}

// RESTConfig is the client configuration of a recorded cluster.
func RESTConfig(a Access) (*rest.Config, error) {
	cfg, err := ClientConfig(a, "").ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s with context %q: %w (the file or context was changed since up; restore it)", a.Kubeconfig, a.Context, err)
	}
	// The default client-side limits add seconds of throttling to a few dozen calls.
	cfg.QPS, cfg.Burst = 50, 100
	return cfg, nil
}
