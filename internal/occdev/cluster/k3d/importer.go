package k3d

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/images"
)

// Importer loads local images into the node of one cluster. It is what the image layer drives
// (images.Importer); it checks nothing itself, the image layer verifies the result inside the
// node.
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

// ImportImages streams the named local images (references that are tags in the engine) into the
// cluster's node in one pass, the way k3d's direct mode does (`docker save` piped into `ctr image
// import` in the node), but through the engine API itself: the save stream is copied into the
// exec's standard input, which is then closed, and the import's own exit code and output decide.
// k3d's direct mode gets all three wrong: it never closes ctr's input, so a cancelled stream
// leaves ctr waiting for input forever (and k3d with it); it decides that the exec ended by
// polling once a second, and an exec the engine has not yet marked running counts as ended,
// which closes the connection under the stream ("read/write on closed pipe") and imports
// nothing; and it drops ctr's output. A cancelled ctx closes the connection, ctr sees its input
// end and exits, and the cancellation is returned.
//
// Only one platform travels (pass): the engine saves just that platform's manifest where it can
// (pass.Save), and ctr keeps just that platform (--platform) of what arrives. --all-platforms
// would require every platform an index names, and an engine's containerd store names them all
// while holding only those it pulled: ctr would stop at the first it lacks.
//
// ctr imports with --local: it writes the images' content and unpacks their layers itself, as
// containerd 1.7's ctr does by default, instead of handing the stream to containerd 2's transfer
// service, which took half as long again for the same image on the bed's containerd 2.1
// (BenchmarkImportLocalAgainstTransfer). ctr has accepted the flag since 1.7.
func (i *Importer) ImportImages(ctx context.Context, refs []string, pass images.Pass) error {
	if len(refs) == 0 {
		return errors.New("import images: none given")
	}
	what := fmt.Sprintf("import images into k3d cluster %s", i.name)
	eng := i.p.engine.Verbs()
	stream, err := eng.Save(ctx, refs, pass.Save)
	if err != nil {
		return fmt.Errorf("%s: save %s: %w", what, strings.Join(refs, ", "), err)
	}
	defer stream.Close()
	// CONTAINERD_NAMESPACE puts the images where the kubelet's CRI looks for them, as k3s's own
	// ctr does by default.
	cmd := []string{"ctr", "image", "import", "--local"}
	if pass.Platform != "" {
		cmd = append(cmd, "--platform", pass.Platform)
	}
	res, err := eng.Exec(ctx, i.NodeContainer(), engine.ExecInput{Stdin: stream, Env: []string{"CONTAINERD_NAMESPACE=k8s.io"}},
		append(cmd, "-")...)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("%s: ctr image import in node %s exited with %d: %s", what, i.NodeContainer(), res.ExitCode, strings.TrimSpace(res.Stderr+" "+res.Stdout))
	}
	return ctx.Err()
}
