package occdev

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"time"

	"helm.sh/helm/v3/pkg/release"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/occ/internal/occdev/artifacts"
	"github.com/openclaw/occ/internal/occdev/charts"
	"github.com/openclaw/occ/internal/occdev/pins"
	"github.com/openclaw/occ/internal/occdev/state"
)

// StepContext carries what the steps of one `up` share: the plan, the claimed state, and what
// earlier steps produced for later ones.
type StepContext struct {
	Plan *Plan

	opts  UpOptions
	log   io.Writer
	state *state.Dir
	owner string

	pins               *pins.Set
	archive            *artifacts.Verified
	artifacts          artifactOutputs
	charts             *charts.Charts
	workspaceResources []unstructured.Unstructured
	agentSandbox       []*unstructured.Unstructured

	cluster *clusterConn

	release          *release.Release
	gatewayClusterIP string
	gatewayEndpoint  string
	installationPath string
}

// artifactOutputs are the local files the artifact steps produce, inside the state directory.
type artifactOutputs struct {
	helmDir string
}

// clusterConn is a connection to the recorded cluster.
type clusterConn struct {
	access  ClusterAccess
	config  *rest.Config
	kube    kubernetes.Interface
	objects *objectClient
}

// ownerID is the value of the ownership label for objects of this state. It is derived from
// the state's creation instant, which is recorded once and never rewritten, so `down` computes
// the same value from the record alone.
func ownerID(s state.State) string {
	sum := sha256.Sum256([]byte("occ-dev-state\x00" + s.CreatedAt.UTC().Format(time.RFC3339Nano)))
	return hex.EncodeToString(sum[:8])
}

// connect opens clients for a recorded cluster. rec receives the objects the clients create.
func connect(access ClusterAccess, owner string, rec recorder) (*clusterConn, error) {
	cfg, err := clientConfig(access, "").ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s with context %q: %w (the file or context was changed since up; restore it)", access.Kubeconfig, access.Context, err)
	}
	// The default client-side limits add seconds of throttling to a few dozen calls.
	cfg.QPS, cfg.Burst = 50, 100
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("Kubernetes client for context %q: %w", access.Context, err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client for context %q: %w", access.Context, err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client for context %q: %w", access.Context, err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	return &clusterConn{
		access:  access,
		config:  cfg,
		kube:    kc,
		objects: &objectClient{dyn: dyn, mapper: mapper, stateID: owner, rec: rec},
	}, nil
}

// clusterUID reads the uid of kube-system, a stable identity of the cluster.
func (c *clusterConn) clusterUID(ctx context.Context) (string, error) {
	ns, err := c.kube.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reach the cluster of context %q (%s): %w; check that it is running and the kubeconfig is current", c.access.Context, c.access.Server, err)
	}
	return string(ns.UID), nil
}

// verifyIdentity refuses to act when the recorded context now reaches another cluster: deleting
// by name there could remove someone else's objects.
func (c *clusterConn) verifyIdentity(ctx context.Context) error {
	uid, err := c.clusterUID(ctx)
	if err != nil {
		return err
	}
	if c.access.UID != "" && uid != c.access.UID {
		return fmt.Errorf("context %q in %s now reaches a different cluster (kube-system uid %s, recorded %s): refusing to touch it; point the context back at the cluster occ dev up used",
			c.access.Context, c.access.Kubeconfig, uid, c.access.UID)
	}
	return nil
}
