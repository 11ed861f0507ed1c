// Package kubeobj is the client every layer of `occ dev` uses for the Kubernetes objects it
// records: a connection to the recorded cluster, and objects that are created labelled as one
// development state's, adopted again only on exactly that ownership, and removed only while
// they are still the object that was recorded (a UID precondition). The platform layer and the
// in-cluster control plane both create their objects through it, and its Remover serves
// `down`, rollback and `status` for every recorded Kubernetes object.
package kubeobj

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/openclaw/occ/internal/occdev/state"
)

// identityTimeout bounds the identity check of a recorded connection.
const identityTimeout = 20 * time.Second

// Conn is a connection to a recorded cluster, acting for one development state.
type Conn struct {
	Access state.Cluster
	Config *rest.Config
	Kube   kubernetes.Interface

	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
	owner  string
	rec    state.Recorder
}

// Options say for whom a connection acts.
type Options struct {
	// Owner is the state's ownership label value (state.State.Owner).
	Owner string
	// Recorder receives every object Ensure creates or adopts; nil for a connection that only
	// inspects and removes (status, down).
	Recorder state.Recorder
}

// Connect opens clients for access. It makes no request yet.
func Connect(access state.Cluster, o Options) (*Conn, error) {
	cfg, err := RESTConfig(access)
	if err != nil {
		return nil, err
	}
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
	return &Conn{
		Access: access, Config: cfg, Kube: kc,
		dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)),
		owner: o.Owner, rec: o.Recorder,
	}, nil
}

// Owner is the ownership label value this connection labels and adopts by.
func (c *Conn) Owner() string { return c.owner }

// Recorder is where this connection records what it creates (nil for a connection that only
// inspects and removes). Layers that create something beside Kubernetes objects on the same
// cluster (a Helm release) record it here too, so one run keeps one record.
func (c *Conn) Recorder() state.Recorder { return c.rec }

// UID reads the uid of kube-system, a stable identity of the cluster.
func (c *Conn) UID(ctx context.Context) (string, error) {
	ns, err := c.Kube.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reach the cluster of context %q (%s): %w; check that it is running and the kubeconfig is current", c.Access.Context, c.Access.Server, err)
	}
	return string(ns.UID), nil
}

// VerifyIdentity refuses to act when the recorded context now reaches another cluster:
// deleting by name there could remove someone else's objects.
func (c *Conn) VerifyIdentity(ctx context.Context) error {
	uid, err := c.UID(ctx)
	if err != nil {
		return err
	}
	if c.Access.UID != "" && uid != c.Access.UID {
		return fmt.Errorf("context %q in %s now reaches a different cluster (kube-system uid %s, recorded %s): refusing to touch it; point the context back at the cluster occ dev up used",
			c.Access.Context, c.Access.Kubeconfig, uid, c.Access.UID)
	}
	return nil
}

// ConnectVouched connects to the cluster a provider has just made available and checks, before
// anything is installed, that it is the one the provider vouched for (access.UID, when it says)
// and the one the state records (recorded, empty when it records none yet; dir is the state's
// directory, for the fix). The connection's Access carries the kube-system uid it reached.
// provider names the provider in messages.
func ConnectVouched(ctx context.Context, access state.Cluster, o Options, provider, recorded, dir string) (*Conn, error) {
	conn, err := Connect(access, o)
	if err != nil {
		return nil, err
	}
	uid, err := conn.UID(ctx)
	if err != nil {
		return nil, err
	}
	if access.UID != "" && access.UID != uid {
		return nil, fmt.Errorf("the %s provider reports cluster kube-system uid %s, but context %q reaches uid %s: refusing to install into a cluster it did not vouch for", provider, access.UID, access.Context, uid)
	}
	if recorded != "" && recorded != uid {
		return nil, fmt.Errorf("this state records cluster kube-system uid %s, but context %q reaches uid %s: run occ dev down --state-dir %s first", recorded, access.Context, uid, dir)
	}
	access.UID = uid
	conn.Access = access
	return conn, nil
}

// ResetMapper forgets the cached kinds, after new CustomResourceDefinitions were established.
func (c *Conn) ResetMapper() { c.mapper.Reset() }

// Dynamic is the dynamic client, for watches of kinds without typed clients.
func (c *Conn) Dynamic() dynamic.Interface { return c.dyn }

// recordedKey keeps the recorded cluster's connection among a state's Connections.
type recordedKey struct{}

// RecordedConn is the recorded cluster (Recorded, as the state's owner) as c shares it: every
// record inside the cluster, and the command's own reads, use one connection.
func RecordedConn(c *state.Connections) func(context.Context) (*Conn, error) {
	return state.Shared(c, recordedKey{}, func(c *state.Connections) func(context.Context) (*Conn, error) {
		st := c.State()
		return Recorded(st.Cluster, st.Owner())
	})
}

// Recorded returns a function that connects to the recorded cluster on first use and checks it
// is the recorded one (kube-system uid), then hands every later caller the same connection, or
// the same error: removers of many objects share one connection, and an unreachable cluster
// costs one attempt, not one per object.
func Recorded(access state.Cluster, owner string) func(context.Context) (*Conn, error) {
	var (
		mu   sync.Mutex
		done bool
		conn *Conn
		err  error
	)
	return func(ctx context.Context) (*Conn, error) {
		mu.Lock()
		defer mu.Unlock()
		if done {
			return conn, err
		}
		done = true
		if access.Kubeconfig == "" {
			err = fmt.Errorf("no cluster is recorded (occ dev up stopped before connecting to one)")
			return nil, err
		}
		conn, err = Connect(access, Options{Owner: owner})
		if err == nil {
			// A cluster that is gone (a blackholed address) must not hang status or down.
			vctx, cancel := context.WithTimeout(ctx, identityTimeout)
			err = conn.VerifyIdentity(vctx)
			if errors.Is(vctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
				err = fmt.Errorf("the cluster of context %q (%s) did not answer within %s: %w", access.Context, access.Server, identityTimeout, err)
			}
			cancel()
		}
		if err != nil {
			conn = nil
		}
		return conn, err
	}
}
