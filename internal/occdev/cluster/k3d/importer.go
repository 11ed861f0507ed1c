package k3d

import (
	"context"
	"errors"
	"fmt"

	k3dclient "github.com/k3d-io/k3d/v5/pkg/client"
	k3druntimes "github.com/k3d-io/k3d/v5/pkg/runtimes"
	k3dtypes "github.com/k3d-io/k3d/v5/pkg/types"
)

// Importer loads local images into the nodes of one cluster through k3d's library. It is what
// the image layer drives (images.Importer); it checks nothing itself, the image layer verifies
// the result inside the node.
type Importer struct {
	p    *Provider
	name string
}

// Importer returns the importer of cluster name.
func (p *Provider) Importer(name string) *Importer { return &Importer{p: p, name: name} }

// ClusterName is the cluster the images go into.
func (i *Importer) ClusterName() string { return i.name }

// NodeContainer is the container whose containerd receives the images (server-0, the only node).
func (i *Importer) NodeContainer() string { return serverNode(i.name) }

// ImportImages streams the named local images (references that are tags in the engine) into
// every node in one pass: k3d's direct mode, `docker save` piped into `ctr image import` in the
// node. The tools-node mode is never used, because it only logs per-node failures.
//
// The import is not cancelled half-way: when k3d's image stream ends early (its context
// cancelled), k3d never closes the pipe into `ctr image import`, which then waits for input
// forever, and so does k3d (and every later k3d call, which waits for the library's lock). The
// import therefore runs to its end under a context that is not cancelled, and a cancellation
// of ctx is reported once it has; the caller's cleanup then finds what the import left.
func (i *Importer) ImportImages(ctx context.Context, refs []string) error {
	if len(refs) == 0 {
		return errors.New("import images: none given")
	}
	whole := context.WithoutCancel(ctx)
	err := i.p.withK3d(func() error {
		c, err := k3dclient.ClusterGet(whole, k3druntimes.Docker, &k3dtypes.Cluster{Name: i.name})
		if err != nil {
			return err
		}
		return k3dclient.ImageImportIntoClusterMulti(whole, k3druntimes.Docker, refs, c, k3dtypes.ImageImportOpts{Mode: k3dtypes.ImportModeDirect})
	})
	if err != nil {
		return fmt.Errorf("import images into k3d cluster %s: %w", i.name, err)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("import images into k3d cluster %s: %w", i.name, err)
	}
	return nil
}
