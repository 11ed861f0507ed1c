package dockerbed

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
)

// Bed is what a test that creates k3d clusters needs: the engine, a registry serving the bed's
// images, and the pins of the k3s stand-in node and of the k3d helper images.
type Bed struct {
	t        testing.TB
	Engine   *Engine
	Registry *Registry
	// Node is the k3s stand-in node image; use Node.Ref as the cluster's (pinned) k3s image.
	Node Pinned
	// Tools and Proxy stand in for k3d's tools and load-balancer images; Start points
	// K3D_IMAGE_TOOLS and K3D_IMAGE_LOADBALANCER at them.
	Tools, Proxy Pinned
}

// Start prepares the Docker + k3d bed for one test and points the k3d library at it through the
// test's environment (so the test must not be parallel; k3d keeps process-wide state anyway):
//
//   - DOCKER_SOCK is the engine's socket path (k3d bind-mounts it into its tools container);
//   - K3D_IMAGE_TOOLS and K3D_IMAGE_LOADBALANCER are the stand-ins, pinned by digest;
//   - TMPDIR is a test directory (k3d leaves a /tmp/k3d-hostsfile-* per node start).
//
// The images are built once (cached by content), loaded into the engine under their content
// tags, and pushed to a registry of the test's own; the engine then pulls the pinned
// references for real when k3d asks for them (the layers are already present, so that costs a
// manifest round trip).
func Start(t testing.TB) *Bed {
	t.Helper()
	e := Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	pruneOnce.Do(func() { e.pruneStale(ctx, staleAfter) })
	b := &Bed{t: t, Engine: e, Registry: StartRegistry(t)}
	start := time.Now()
	for _, img := range []struct {
		build func() (ImageSpec, error)
		pin   *Pinned
	}{{NodeImage, &b.Node}, {ToolsImage, &b.Tools}, {ProxyImage, &b.Proxy}} {
		spec, err := img.build()
		if err != nil {
			t.Fatalf("dockerbed: %v", err)
		}
		p, err := b.Provide(ctx, spec)
		if err != nil {
			t.Fatalf("dockerbed: %v", err)
		}
		*img.pin = p
	}
	t.Logf("dockerbed: node, tools and proxy images built, loaded and pushed in %s", time.Since(start).Round(time.Millisecond))
	t.Setenv("DOCKER_SOCK", e.Socket)
	t.Setenv("K3D_IMAGE_TOOLS", b.Tools.Ref)
	t.Setenv("K3D_IMAGE_LOADBALANCER", b.Proxy.Ref)
	t.Setenv("TMPDIR", t.TempDir())
	return b
}

// Provide makes spec's image available the way a pinned image is in production: present in the
// engine's store under its content tag (so its layers are local) and pushed to the bed's
// registry, whose digest reference the caller uses as the pin. The engine does not yet know the
// pinned reference: a pull of Ref is a real pull by digest. The reference is removed from the
// engine when the test ends (the image itself stays, under its content tag, for the next run).
func (b *Bed) Provide(ctx context.Context, spec ImageSpec) (Pinned, error) {
	if _, err := b.Engine.EnsureImage(ctx, spec); err != nil {
		return Pinned{}, err
	}
	p, err := b.Registry.Push(ctx, spec)
	if err != nil {
		return Pinned{}, err
	}
	// Registered now, so it runs after the cleanups of clusters created later (LIFO).
	b.t.Cleanup(func() { b.Engine.Forget(p.Ref) })
	return p, nil
}

// Forget removes refs from the engine (untagging; an image still tagged elsewhere stays). Tests
// call it in cleanup for the pinned references they pulled, so the engine does not collect
// references to registries that no longer exist.
func (e *Engine) Forget(refs ...string) {
	for _, r := range refs {
		_, _ = e.API.ImageRemove(context.Background(), r, image.RemoveOptions{})
	}
}

// ClusterObjects lists what the engine holds of a k3d cluster: containers and volumes labelled
// k3d.cluster=NAME, the (unlabelled, anonymous) volumes mounted by its containers, and its own
// network (k3d labels networks only app=k3d, so the network is found by the name its containers
// record in k3d.cluster.network, or by k3d's naming rule k3d-NAME; an external network is not the
// cluster's).
type ClusterObjects struct {
	Containers, Networks, Volumes []string
}

// Empty reports whether nothing is left.
func (o ClusterObjects) Empty() bool {
	return len(o.Containers)+len(o.Networks)+len(o.Volumes) == 0
}

func (o ClusterObjects) String() string {
	return fmt.Sprintf("containers %v, networks %v, volumes %v", o.Containers, o.Networks, o.Volumes)
}

// ClusterObjects reads the engine's objects of cluster name. extraVolumes are volume names
// recorded earlier (from ClusterObjects while the cluster existed) that are checked too, since
// anonymous volumes carry no label to find them by once their container is gone.
func (e *Engine) ClusterObjects(ctx context.Context, name string, extraVolumes ...string) (ClusterObjects, error) {
	label := filters.NewArgs(filters.Arg("label", "k3d.cluster="+name))
	var o ClusterObjects
	cs, err := e.API.ContainerList(ctx, container.ListOptions{All: true, Filters: label})
	if err != nil {
		return o, fmt.Errorf("list containers of cluster %s: %w", name, err)
	}
	vols := map[string]bool{}
	nets := map[string]bool{"k3d-" + name: true}
	for _, c := range cs {
		o.Containers = append(o.Containers, c.Names...)
		if n := c.Labels["k3d.cluster.network"]; n != "" && c.Labels["k3d.cluster.network.external"] != "true" {
			nets[n] = true
		}
		for _, m := range c.Mounts {
			if m.Type == "volume" {
				vols[m.Name] = true
			}
		}
	}
	ns, err := e.API.NetworkList(ctx, network.ListOptions{Filters: filters.NewArgs(filters.Arg("label", "app=k3d"))})
	if err != nil {
		return o, fmt.Errorf("list networks of cluster %s: %w", name, err)
	}
	for _, n := range ns {
		if nets[n.Name] {
			o.Networks = append(o.Networks, n.Name)
		}
	}
	vs, err := e.API.VolumeList(ctx, volume.ListOptions{Filters: label})
	if err != nil {
		return o, fmt.Errorf("list volumes of cluster %s: %w", name, err)
	}
	for _, v := range vs.Volumes {
		vols[v.Name] = true
	}
	for _, v := range extraVolumes {
		if _, err := e.API.VolumeInspect(ctx, v); err == nil {
			vols[v] = true
		}
	}
	for v := range vols {
		o.Volumes = append(o.Volumes, v)
	}
	sort.Strings(o.Volumes)
	return o, nil
}

// staleAfter is how long a cached image may go unused before the bed removes it: every change
// to the stand-in makes a new ~450 MB node image, and old ones would otherwise pile up.
const staleAfter = 3 * 24 * time.Hour

var pruneOnce sync.Once

// pruneStale removes cached image tarballs not used for maxAge, and their images from the engine
// (an image a container still uses is refused by the engine and kept). EnsureImage touches a
// tarball each time it is used, so its modification time says when it was last needed.
func (e *Engine) pruneStale(ctx context.Context, maxAge time.Duration) {
	// Stand-in binaries are touched when used, like tarballs.
	if bins, err := filepath.Glob(filepath.Join(cacheDir(), "standin", "k3sstandin-*")); err == nil {
		for _, b := range bins {
			if info, err := os.Stat(b); err == nil && time.Since(info.ModTime()) > maxAge {
				_ = os.Remove(b)
			}
		}
	}
	dir := filepath.Join(cacheDir(), "images")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, ent := range entries {
		n := ent.Name()
		info, err := ent.Info()
		if err != nil || !strings.HasSuffix(n, ".tar") || time.Since(info.ModTime()) < maxAge {
			continue
		}
		// The file name is the tag with "/" → "_" and ":" → "-" (the key has no "-"), and
		// .tar or .layout.tar.
		base := strings.TrimSuffix(strings.TrimSuffix(n, layoutSuffix), ".tar")
		i := strings.LastIndex(base, "-")
		if i < 0 {
			continue
		}
		tag := strings.ReplaceAll(base[:i], "_", "/") + ":" + base[i+1:]
		if _, err := e.API.ImageRemove(ctx, tag, image.RemoveOptions{}); err != nil && !strings.Contains(err.Error(), "No such image") {
			continue // in use: keep the tarball too
		}
		_ = os.Remove(filepath.Join(dir, n))
		_ = os.Remove(filepath.Join(dir, n+".lock"))
	}
}
