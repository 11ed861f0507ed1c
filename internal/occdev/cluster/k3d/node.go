package k3d

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	k3dtypes "github.com/k3d-io/k3d/v5/pkg/types"

	"github.com/openclaw/occ/internal/occdev/engine"
)

// nodeGate says when the node of the cluster one Ensure creates takes images: open once k3d has
// created server-0 and is about to start it (for an adopted cluster, once it is adopted), failed
// when that Ensure ends without a node. It opens and fails at most once.
type nodeGate struct {
	once sync.Once
	done chan struct{}
	err  error
}

func newNodeGate() *nodeGate { return &nodeGate{done: make(chan struct{})} }

func (g *nodeGate) open() { g.once.Do(func() { close(g.done) }) }

func (g *nodeGate) fail(err error) {
	g.once.Do(func() { g.err = err; close(g.done) })
}

// ended says whether the gate opened or failed.
func (g *nodeGate) ended() bool {
	select {
	case <-g.done:
		return true
	default:
		return false
	}
}

// defaultContainerdWait bounds the wait for the node's containerd without a k3d timeout.
const defaultContainerdWait = 3 * time.Minute

// wait returns once the gate opened (nil) or failed (its error), or when ctx ends.
func (g *nodeGate) wait(ctx context.Context) error {
	select {
	case <-g.done:
		return g.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// nodeCreated is the preStart hook that opens the gate when k3d is about to start server-0: by
// then this creation made the container (the identity check before it refused any other of the
// name), so what is imported into it goes into the recorded cluster.
type nodeCreated struct{ gate *nodeGate }

func (h nodeCreated) Run(_ context.Context, node *k3dtypes.Node) error {
	if node.Role == k3dtypes.ServerRole {
		h.gate.open()
	}
	return nil
}
func (nodeCreated) Name() string { return "occ-node-created" }
func (nodeCreated) Info() string {
	return "tells occ that server-0 exists, so images can be imported while k3s starts"
}

// containerdPoll is how often waitForContainerd asks the node's containerd again.
const containerdPoll = 100 * time.Millisecond

// waitForContainerd returns once the containerd in the node answers `ctr version` (the node
// container runs and k3s has started its containerd), or when ctx ends or timeout passes.
func (p *Provider) waitForContainerd(ctx context.Context, node string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(containerdPoll)
	defer tick.Stop()
	var last error
	for {
		res, err := p.engine.Verbs().Exec(ctx, node, engine.ExecInput{Env: []string{"CONTAINERD_NAMESPACE=k8s.io"}}, "ctr", "version")
		switch {
		case err == nil && res.ExitCode == 0:
			return nil
		case err != nil:
			last = err
		default:
			last = fmt.Errorf("ctr version exited with %d: %s", res.ExitCode, res.Stderr)
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("the containerd of node %s did not answer within %s: %w", node, timeout, last)
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}
