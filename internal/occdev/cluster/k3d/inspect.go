package k3d

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	k3dtypes "github.com/k3d-io/k3d/v5/pkg/types"

	"github.com/openclaw/occ/internal/occdev/engine"
)

// State is what Inspect found under a recorded cluster's name.
type State string

const (
	// StateExists: the cluster is there and is the recorded one.
	StateExists State = "exists"
	// StateMissing: nothing of the cluster exists.
	StateMissing State = "missing"
	// StateNotOurs: something of that name exists that is not the recorded cluster; occ leaves it
	// alone.
	StateNotOurs State = "not ours"
	// StateIncomplete: parts of the cluster (a tools container, its network or volume) remain
	// without its server node, as after a failed creation or deletion.
	StateIncomplete State = "incomplete"
)

// Status is the result of Inspect.
type Status struct {
	State State
	// Reason explains NotOurs, an unverified identity, or a stopped node.
	Reason string
	// Running reports whether server-0 is running.
	Running bool
	// UIDVerified reports whether the kube-system UID was read and equals the recorded one.
	UIDVerified bool
	// What was found, by Docker name.
	Containers []string
	Network    string
	Volumes    []string
}

// uidTimeout bounds the identity check against the API: a node that has just restarted needs a
// moment, a dead one must not hang status or down.
const uidTimeout = 30 * time.Second

// Inspect reports whether the cluster of id exists and is the recorded one. It reads Docker and,
// when a UID is recorded and server-0 runs, the cluster's API; it changes nothing.
func (p *Provider) Inspect(ctx context.Context, id Identity) (Status, error) {
	st, _, err := p.inspect(ctx, id)
	return st, err
}

// inspect is Inspect that also returns the Docker objects it found, for a deletion that follows
// the check.
func (p *Provider) inspect(ctx context.Context, id Identity) (Status, found, error) {
	// With a UID recorded, the cluster's own answer is read beside the listing (both only
	// read); identify uses it only for a running server that passed every other check, and
	// drops it otherwise.
	var live func() (string, error)
	if id.UID != "" {
		uctx, cancel := context.WithCancel(ctx)
		defer cancel()
		type answer struct {
			uid string
			err error
		}
		ch := make(chan answer, 1)
		go func() {
			uid, err := p.liveUID(uctx, id.Name)
			ch <- answer{uid, err}
		}()
		live = func() (string, error) { a := <-ch; return a.uid, a.err }
	}
	found, err := p.find(ctx, id.Name)
	if err != nil {
		return Status{}, found, err
	}
	st, err := p.identify(ctx, id, found, live)
	return st, found, err
}

// identify decides what found is: missing, not ours, incomplete, or the recorded cluster (its
// UID read from the cluster's API when one is recorded and server-0 runs: live's answer when
// given, which inspect started beside the listing).
func (p *Provider) identify(ctx context.Context, id Identity, found found, live func() (string, error)) (Status, error) {
	st := Status{Network: found.network, Volumes: found.volumes}
	for _, c := range found.containers {
		st.Containers = append(st.Containers, c.name)
	}
	if len(found.containers) == 0 && found.network == "" && len(found.volumes) == 0 {
		st.State = StateMissing
		return st, nil
	}
	notOurs := func(format string, a ...any) (Status, error) {
		st.State = StateNotOurs
		st.Reason = fmt.Sprintf(format, a...)
		return st, nil
	}
	var server *foundContainer
	for i, c := range found.containers {
		if c.labels["app"] != "k3d" || c.labels[k3dtypes.LabelClusterName] != id.Name {
			return notOurs("container %s is not labelled as a k3d node of cluster %s", c.name, id.Name)
		}
		switch k3dtypes.Role(c.labels[k3dtypes.LabelRole]) {
		case k3dtypes.ServerRole:
			if c.name != serverNode(id.Name) {
				return notOurs("cluster %s has a server %s; occ creates exactly one, %s", id.Name, c.name, serverNode(id.Name))
			}
			if got := c.labels[OwnerLabel]; got != id.Owner {
				return notOurs("server %s has owner label %s=%q, the state expects %q", c.name, OwnerLabel, got, id.Owner)
			}
			server = &found.containers[i]
		case k3dtypes.NoRole:
			if c.name != toolsNode(id.Name) {
				return notOurs("container %s of cluster %s is not one occ creates", c.name, id.Name)
			}
		default:
			return notOurs("cluster %s has a %s node %s; occ creates no agents and no load balancer", id.Name, c.labels[k3dtypes.LabelRole], c.name)
		}
	}
	if server == nil {
		st.State = StateIncomplete
		st.Reason = "server node " + serverNode(id.Name) + " is missing"
		return st, nil
	}
	st.State = StateExists
	st.Running = server.running
	if id.UID == "" {
		st.Reason = "no kube-system UID recorded (creation stopped before the API answered); identified by name and owner label"
		return st, nil
	}
	if !server.running {
		st.Reason = "server node " + server.name + " is not running, so its kube-system UID cannot be read"
		return st, nil
	}
	if live == nil {
		live = func() (string, error) { return p.liveUID(ctx, id.Name) }
	}
	uid, err := live()
	if err != nil {
		st.Reason = "kube-system UID could not be read: " + err.Error()
		return st, nil
	}
	if uid != id.UID {
		return notOurs("its kube-system UID is %s, the state recorded %s: it is another cluster of the same name", uid, id.UID)
	}
	st.UIDVerified = true
	return st, nil
}

// liveUID reads the kube-system UID through a kubeconfig taken from the node itself, so the check
// does not depend on the state's kubeconfig file.
func (p *Provider) liveUID(ctx context.Context, name string) (string, error) {
	kc, err := p.kubeconfig(ctx, name)
	if err != nil {
		return "", err
	}
	return waitForKubeSystem(ctx, kc, contextName(name), uidTimeout)
}

type foundContainer struct {
	id, name string
	labels   map[string]string
	running  bool
	// volumes are the Docker volumes the container mounts: the image volume and the anonymous
	// volumes of the node image's VOLUME directories, which carry no label to find them by.
	volumes []string
}

type found struct {
	containers []foundContainer
	// network is the cluster's own network, when it exists and k3d made it.
	network string
	volumes []string
}

func (f found) empty() bool { return len(f.containers) == 0 && f.network == "" && len(f.volumes) == 0 }

func (f found) describe() string {
	var parts []string
	for _, c := range f.containers {
		parts = append(parts, "container "+c.name)
	}
	if f.network != "" {
		parts = append(parts, "network "+f.network)
	}
	for _, v := range f.volumes {
		parts = append(parts, "volume "+v)
	}
	return strings.Join(parts, ", ")
}

// find lists every Docker object of a cluster name: containers labelled with it or named like its
// nodes (an unlabelled container of such a name would collide with k3d's), the own network
// k3d-<name> when k3d made it, and volumes labelled with the name. The four reads are independent
// and run side by side.
func (p *Provider) find(ctx context.Context, name string) (found, error) {
	r, err := p.readCluster(ctx, name)
	if err != nil {
		return found{}, err
	}
	var f found
	f.addContainers(name, r.byLabel, r.byName)
	if f.network, err = r.clusterNetwork(name); err != nil {
		return found{}, err
	}
	for _, v := range r.vols {
		if v.Labels["app"] == "k3d" && v.Labels[k3dtypes.LabelClusterName] == name {
			f.volumes = append(f.volumes, v.Name)
		}
	}
	slices.Sort(f.volumes)
	return f, nil
}

// clusterReads are the engine's answers find works from.
type clusterReads struct {
	// byLabel are the containers labelled with the cluster's name, byName those whose name
	// contains the prefix of its nodes' names.
	byLabel, byName []engine.Object
	// net is the network of the cluster's own name, unless netErr says why it could not be read.
	net    engine.Object
	netErr error
	vols   []engine.Object
}

// readCluster asks the engine for the containers, the network and the volumes of the cluster
// name, side by side. A network that cannot be read is in the answer (netErr); any other read
// that fails is an error, with every failure at once.
func (p *Provider) readCluster(ctx context.Context, name string) (clusterReads, error) {
	eng := p.engine.Verbs()
	label := map[string]string{k3dtypes.LabelClusterName: name}
	prefix := "k3d-" + name + "-"
	var (
		r    clusterReads
		errs [3]error
		wg   sync.WaitGroup
	)
	wg.Go(func() {
		var err error
		r.byLabel, err = eng.List(ctx, engine.Containers, label)
		if err != nil {
			errs[0] = fmt.Errorf("list containers of k3d cluster %s: %w", name, err)
		}
	})
	wg.Go(func() {
		var err error
		r.byName, err = eng.ListNamed(ctx, engine.Containers, prefix)
		if err != nil {
			errs[1] = fmt.Errorf("list containers named %s*: %w", prefix, err)
		}
	})
	wg.Go(func() { r.net, r.netErr = eng.Inspect(ctx, engine.Networks, ownNetwork(name)) })
	wg.Go(func() {
		var err error
		r.vols, err = eng.List(ctx, engine.Volumes, label)
		if err != nil {
			errs[2] = fmt.Errorf("list volumes of k3d cluster %s: %w", name, err)
		}
	})
	wg.Wait()
	if err := errors.Join(errs[:]...); err != nil {
		return clusterReads{}, err
	}
	return r, nil
}

// addContainers adds the containers labelled with the cluster's name and those named exactly
// like its nodes, each once, sorted by name.
func (f *found) addContainers(name string, byLabel, byName []engine.Object) {
	seen := map[string]bool{}
	add := func(c engine.Object) {
		if seen[c.ID] {
			return
		}
		seen[c.ID] = true
		f.containers = append(f.containers, foundContainerOf(c))
	}
	for _, c := range byLabel {
		add(c)
	}
	// The name filter matches substrings; keep exact node names only.
	for _, c := range byName {
		if c.Name == serverNode(name) || c.Name == toolsNode(name) {
			add(c)
		}
	}
	slices.SortFunc(f.containers, func(a, b foundContainer) int { return strings.Compare(a.name, b.name) })
}

// foundContainerOf is the container c as find lists it, with the volumes it mounts.
func foundContainerOf(c engine.Object) foundContainer {
	return foundContainer{id: c.ID, name: c.Name, labels: c.Labels, running: c.State == "running", volumes: c.Volumes}
}

// clusterNetwork is the name of the cluster's own network when it exists and k3d made it, else "".
// A network that cannot be inspected is an error, one that does not exist is not.
func (r clusterReads) clusterNetwork(name string) (string, error) {
	switch {
	case r.netErr == nil:
		// A network of that name that k3d did not make is someone else's: never counted, never
		// removed.
		if r.net.Name == ownNetwork(name) && r.net.Labels["app"] == "k3d" {
			return r.net.Name, nil
		}
	case engine.IsNotFound(r.netErr):
	default:
		return "", fmt.Errorf("inspect network %s: %w", ownNetwork(name), r.netErr)
	}
	return "", nil
}
