package k3d

import (
	"context"
	"fmt"
	"os"
	"time"

	k3dclient "github.com/k3d-io/k3d/v5/pkg/client"
	k3druntimes "github.com/k3d-io/k3d/v5/pkg/runtimes"
	k3dtypes "github.com/k3d-io/k3d/v5/pkg/types"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/openclaw/occ/internal/fsutil"
)

// File names in the state directory.
const (
	KubeconfigFile          = "kubeconfig"
	ContainerKubeconfigFile = "container-kubeconfig"
)

// The kubeconfigs' modes: the user's copy is private; the container copy is bind-mounted into
// containers that do not run as this user.
const (
	kubeconfigMode          = 0o600
	containerKubeconfigMode = 0o644
)

// finish reads the cluster's kubeconfig out of server-0 and goes on as finishWith.
func (p *Provider) finish(ctx context.Context, req Request) (*Cluster, error) {
	kc, err := p.kubeconfig(ctx, req.Name)
	if err != nil {
		return nil, err
	}
	return p.finishWith(ctx, req, kc)
}

// finishWith writes both kubeconfigs from kc (as KubeconfigGet returns it), waits until the API
// answers, and reads the kube-system UID (the caller records it with the cluster's access).
func (p *Provider) finishWith(ctx context.Context, req Request, kc *clientcmdapi.Config) (*Cluster, error) {
	c := &Cluster{
		Name:                req.Name,
		Context:             contextName(req.Name),
		Kubeconfig:          req.KubeconfigPath,
		ContainerKubeconfig: req.ContainerKubeconfigPath,
		ContainerServer:     containerServer(req.Name),
		NodeContainer:       serverNode(req.Name),
		Network:             req.Network,
	}
	if c.Network == "" {
		c.Network = ownNetwork(req.Name)
	}
	cl, ok := kc.Clusters[kc.Contexts[c.Context].Cluster]
	if !ok {
		return nil, fmt.Errorf("kubeconfig of k3d cluster %s has no cluster for context %s", req.Name, c.Context)
	}
	c.Server = cl.Server
	if err := writeKubeconfig(c.Kubeconfig, kc, kubeconfigMode); err != nil {
		return nil, err
	}
	// The container copy differs only in the server: the node's name on the Docker network,
	// which its serving certificate carries (--tls-san). It is 0644 because it is bind-mounted
	// into containers that do not run as this user; the state directory stays 0700.
	inside := kc.DeepCopy()
	inside.Clusters[kc.Contexts[c.Context].Cluster].Server = c.ContainerServer
	if err := writeKubeconfig(c.ContainerKubeconfig, inside, containerKubeconfigMode); err != nil {
		return nil, err
	}
	uid, err := waitForKubeSystem(ctx, kc, c.Context, req.Timeout)
	if err != nil {
		return nil, fmt.Errorf("k3d cluster %s: %w", req.Name, err)
	}
	c.UID = uid
	return c, nil
}

// kubeconfig reads the admin kubeconfig out of server-0 (k3d's KubeconfigGet: it renames the
// context to k3d-<name> and points the server at the published API port). Nothing is written
// anywhere by k3d.
func (p *Provider) kubeconfig(ctx context.Context, name string) (*clientcmdapi.Config, error) {
	var kc *clientcmdapi.Config
	err := p.withK3d(func() (err error) {
		kc, err = k3dclient.KubeconfigGet(ctx, k3druntimes.Docker, &k3dtypes.Cluster{Name: name})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the kubeconfig of k3d cluster %s: %w", name, err)
	}
	if _, ok := kc.Contexts[contextName(name)]; !ok {
		return nil, fmt.Errorf("kubeconfig of k3d cluster %s has no context %s", name, contextName(name))
	}
	return kc, nil
}

// serverUp is the postStart hook that hands over the admin kubeconfig once k3d has seen server-0
// report k3s up and running, while k3d goes on to finish the cluster. It runs inside k3d's
// creation (k3d's environment is this provider's then), never fails the creation, and sends at
// most once; a kubeconfig it cannot read is simply not handed over (Create reads it after k3d).
type serverUp struct {
	cluster    string
	kubeconfig chan<- *clientcmdapi.Config
}

func (h serverUp) Run(ctx context.Context, node *k3dtypes.Node) error {
	if node.Role != k3dtypes.ServerRole {
		return nil
	}
	kc, err := k3dclient.KubeconfigGet(ctx, k3druntimes.Docker, &k3dtypes.Cluster{Name: h.cluster})
	if err != nil {
		return nil
	}
	if _, ok := kc.Contexts[contextName(h.cluster)]; !ok {
		return nil
	}
	select {
	case h.kubeconfig <- kc:
	default:
	}
	return nil
}
func (serverUp) Name() string { return "occ-server-up" }
func (serverUp) Info() string {
	return "hands occ the cluster's kubeconfig once k3s serves its API, while k3d finishes the cluster"
}

func writeKubeconfig(path string, kc *clientcmdapi.Config, perm os.FileMode) error {
	data, err := clientcmd.Write(*kc)
	if err != nil {
		return fmt.Errorf("encode kubeconfig %s: %w", path, err)
	}
	if err := fsutil.WriteFileAtomic(path, data, perm); err != nil {
		return fmt.Errorf("write kubeconfig: %w", err)
	}
	return nil
}

// waitForKubeSystem waits until the API serves the kube-system namespace and returns its UID,
// the identity of this cluster's etcd that no rename or moved kubeconfig can fake.
func waitForKubeSystem(ctx context.Context, kc *clientcmdapi.Config, kubeContext string, timeout time.Duration) (string, error) {
	cfg, err := clientcmd.NewDefaultClientConfig(*kc, &clientcmd.ConfigOverrides{CurrentContext: kubeContext}).ClientConfig()
	if err != nil {
		return "", fmt.Errorf("client configuration: %w", err)
	}
	cfg.Timeout = 10 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", fmt.Errorf("client: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	delay := 100 * time.Millisecond
	for {
		ns, err := cs.CoreV1().Namespaces().Get(wctx, metav1.NamespaceSystem, metav1.GetOptions{})
		if err == nil {
			if ns.UID == "" {
				return "", fmt.Errorf("namespace kube-system has no UID")
			}
			return string(ns.UID), nil
		}
		select {
		case <-wctx.Done():
			return "", fmt.Errorf("the API at %s did not serve namespace kube-system within %s: %w", cfg.Host, timeout, err)
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
	}
}
