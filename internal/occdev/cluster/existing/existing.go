// Package existing is the cluster provider for a cluster the user already runs: a context of
// their kubeconfig. It creates nothing and records nothing, so `down` removes only the objects
// `up` created inside the cluster and never the cluster itself.
package existing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/openclaw/occ/internal/occdev/cluster"
	"github.com/openclaw/occ/internal/occdev/kubeobj"
	"github.com/openclaw/occ/internal/occdev/option"
	"github.com/openclaw/occ/internal/occdev/step"
)

// Name is the --cluster-provider value of this provider.
const Name = "existing"

// reachTimeout bounds the preflight call: a cluster that does not answer a single GET within
// it is not one `up` should start downloading for.
const reachTimeout = 15 * time.Second

// Provider uses an existing kubeconfig context.
type Provider struct{}

var _ cluster.Provider = Provider{}

// Name implements cluster.Provider.
func (Provider) Name() string { return Name }

// Describe implements cluster.Provider.
func (Provider) Describe(req cluster.Request) cluster.Description {
	ctx := "the current context"
	if req.Context != "" {
		ctx = fmt.Sprintf("context %q", req.Context)
	}
	kc := req.Kubeconfig
	if kc == "" {
		kc = "$KUBECONFIG or ~/.kube/config"
	}
	return cluster.Description{Description: step.Note(fmt.Sprintf("uses the existing cluster of %s in %s (never deleted by down)", ctx, kc)),
		Preflight: "the kubeconfig, its context and the cluster answer"}
}

// Check implements cluster.Provider: the request needs nothing of the cluster occ cannot give a
// cluster it did not create, and the kubeconfig file exists and holds the context.
func (Provider) Check(req cluster.Request) error {
	if err := refuseNeeds(req.Needs); err != nil {
		return err
	}
	_, err := resolve(req)
	return err
}

// refuseNeeds refuses what only a provider that creates its cluster can give: occ does not
// change the network or the published ports of a cluster the user runs.
func refuseNeeds(n cluster.Needs) error {
	var errs []error
	if n.Network != "" {
		errs = append(errs, fmt.Errorf("the existing cluster cannot join container network %s: occ does not change a cluster it did not create; use --cluster-provider k3d", n.Network))
	}
	for _, p := range n.Publish {
		errs = append(errs, fmt.Errorf("the existing cluster cannot publish NodePort %d on 127.0.0.1:%d: occ does not change a cluster it did not create; use --cluster-provider k3d", p.NodePort, p.HostPort))
	}
	return errors.Join(errs...)
}

// Close implements cluster.Provider: the provider holds nothing open.
func (Provider) Close() error { return nil }

// Preflight implements cluster.Provider: the context's API server answers.
func (Provider) Preflight(ctx context.Context, req cluster.Request) error {
	access, err := resolve(req)
	if err != nil {
		return err
	}
	kc, err := client(access)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, reachTimeout)
	defer cancel()
	if _, err := kc.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{}); err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s", reachTimeout)
		}
		return fmt.Errorf("the cluster of context %q (%s) is not reachable: %w; start it, or pass --context or --kubeconfig for another one", access.Context, access.Server, err)
	}
	return nil
}

// Ensure implements cluster.Provider: the existing cluster needs nothing made.
func (Provider) Ensure(_ context.Context, req cluster.Request) (cluster.Access, error) {
	return resolve(req)
}

// NodeAddress picks the InternalIP of a Ready node (any node when none reports Ready), in name
// order so repeated runs agree.
func (Provider) NodeAddress(ctx context.Context, access cluster.Access) (string, error) {
	kc, err := client(access)
	if err != nil {
		return "", err
	}
	nodes, err := kc.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
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
		return "", fmt.Errorf("context %q has no Node with an InternalIP address, so the Compose control plane could not reach the Gateway NodePort: use --control-plane kubernetes", access.Context)
	}
	return fallback, nil
}

func client(access cluster.Access) (kubernetes.Interface, error) {
	cfg, err := kubeobj.RESTConfig(access)
	if err != nil {
		return nil, err
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("Kubernetes client for context %q: %w", access.Context, err)
	}
	return kc, nil
}

// resolve turns the request into the Access to record: one absolute kubeconfig path, a
// concrete context, and the cluster entry's name and server.
func resolve(req cluster.Request) (cluster.Access, error) {
	path, err := kubeconfigPath(req.Kubeconfig)
	if err != nil {
		return cluster.Access{}, err
	}
	access := cluster.Access{Provider: Name, Kubeconfig: path, Context: req.Context}
	raw, err := kubeobj.ClientConfig(access, "").RawConfig()
	if err != nil {
		return cluster.Access{}, fmt.Errorf("read kubeconfig %s: %w (pass --kubeconfig or set KUBECONFIG)", access.Kubeconfig, err)
	}
	if access.Context == "" {
		access.Context = raw.CurrentContext
	}
	if access.Context == "" {
		return cluster.Access{}, fmt.Errorf("kubeconfig %s has no current context: pass --context NAME", access.Kubeconfig)
	}
	kctx, ok := raw.Contexts[access.Context]
	if !ok {
		return cluster.Access{}, fmt.Errorf("kubeconfig %s has no context %q: pass an existing --context", access.Kubeconfig, access.Context)
	}
	access.Name = kctx.Cluster
	if c, ok := raw.Clusters[kctx.Cluster]; ok {
		access.Server = c.Server
	}
	return access, nil
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
				return "", &option.Error{Option: "KUBECONFIG", Value: env, Rule: "lists several files, and occ records exactly one kubeconfig so down reaches the same cluster",
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

// Registration is the existing provider as the flow registers it: its settings (the kubeconfig
// and context, which the request carries), a plan of no settings of its own, and the Provider.
func Registration() cluster.Registration {
	return cluster.Registration{
		Name:    Name,
		Given:   given,
		Resolve: resolvePlan,
		Open:    func() cluster.Provider { return Provider{} },
	}
}

// given lists the provider's settings the user set.
func given(o cluster.Options) []cluster.Setting {
	var out []cluster.Setting
	for _, s := range []struct{ name, val string }{{"--kubeconfig", o.Kubeconfig}, {"--context", o.Context}} {
		if s.val != "" {
			out = append(out, cluster.Setting{Option: s.name, Value: s.val, Purpose: "selects an existing cluster", Provider: Name})
		}
	}
	return out
}

// resolvePlan refuses the settings of a cluster occ would create: occ creates none here, and
// the cluster pulls the pinned images itself, so the plan needs no engine.
func resolvePlan(_ cluster.Options, foreign []cluster.Setting) (cluster.Plan, error) {
	if len(foreign) > 0 {
		s := foreign[0]
		return cluster.Plan{}, &option.Error{Option: s.Option, Value: s.Value, Rule: s.Purpose + ", and --cluster-provider " + Name + " creates none",
			Fix: "unset it, or use --cluster-provider " + s.Provider}
	}
	return cluster.Plan{}, nil
}
