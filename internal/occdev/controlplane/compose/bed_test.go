package compose

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/testbed/dockerbed"
	"github.com/openclaw/occ/internal/testbed/ocebed"
)

// fixtureCommit is the commit the fixture checkout copies claim to be at.
const fixtureCommit = "0123456789abcdef0123456789abcdef01234567"

// bed is one test's Compose stack on the shared engine: a private copy of the fixture checkout,
// a private state directory, unique ports, subnet and project name, the real plugin, and the
// stand-in images.
type bed struct {
	t        *testing.T
	engine   *dockerbed.Engine
	plugin   Plugin
	checkout string
	state    string
	settings ocebed.Settings
}

// newBed prepares everything a stack needs but starts nothing. Its cleanup removes whatever the
// test left of its project, so a failing test does not leak into the next.
func newBed(t *testing.T) *bed {
	t.Helper()
	e := dockerbed.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	plugin, err := FindPlugin(ctx, FindPluginOptions{DockerConfig: os.Getenv("DOCKER_CONFIG")})
	if err != nil {
		t.Fatalf("%v\n(build and install the test plugin with scripts/testcompose; make test does)", err)
	}
	ocebed.EnsureImages(t, e)
	b := &bed{
		t:        t,
		engine:   e,
		plugin:   plugin,
		checkout: ocebed.Checkout(t, fixtureCommit),
		state:    privateDir(t),
		settings: ocebed.NewSettings(t, e),
	}
	t.Cleanup(b.cleanup)
	return b
}

func privateDir(t *testing.T) string {
	t.Helper()
	d := filepath.Join(t.TempDir(), "state")
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

// load renders the fixture with the bed's settings plus extra interpolation variables.
func (b *bed) load(user UserOptions, extra map[string]string) (*Model, error) {
	env := b.settings.Env()
	for k, v := range extra {
		env[k] = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return Load(ctx, LoadOptions{Checkout: b.checkout, Project: b.settings.Project, StateDir: b.state, User: user, Environment: env})
}

// builtSnapshot loads the fixture with the user's files (and the build network the test engine
// needs), builds its images through the engine's BuildKit as `up` does (the checkout's
// Dockerfile mounts a BuildKit secret, which the classic builder of `compose up --build`
// refuses), and writes the snapshot that runs them.
func (b *bed) builtSnapshot(user UserOptions) (*Model, Snapshot) {
	b.t.Helper()
	user.Files = append([]string{writeCheckoutFile(b.t, b.checkout, "build-network.yaml", buildNetworkNone)}, user.Files...)
	m := b.mustLoad(user)
	builds, err := m.UseBuiltImages()
	if err != nil {
		b.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if _, err := BuildImages(ctx, builds, BuildImagesOptions{Engine: b.verbs()}); err != nil {
		b.t.Fatal(err)
	}
	snap, err := m.WriteSnapshot(b.state)
	if err != nil {
		b.t.Fatal(err)
	}
	return m, snap
}

func (b *bed) mustLoad(user UserOptions) *Model {
	b.t.Helper()
	m, err := b.load(user, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	return m
}

func (b *bed) runner(s Snapshot) Runner {
	return Runner{Plugin: b.plugin, Endpoint: b.engine.Host, Snapshot: s}
}

// verbs is the bed's engine in occ's verbs, over its API client.
func (b *bed) verbs() engine.Engine {
	return (&docker.Engine{API: b.engine.API, Identity: engine.Identity{Kind: engine.Docker}}).Verbs()
}

func (b *bed) stack() Stack {
	return Stack{Project: b.settings.Project, Engine: b.verbs()}
}

// cleanup removes the project's containers, volumes and networks with the plugin when a
// snapshot exists, and reports anything left.
func (b *bed) cleanup() {
	snap := Snapshot{Path: filepath.Join(b.state, SnapshotName), Project: b.settings.Project, Checkout: b.checkout}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := os.Stat(snap.Path); err == nil {
		if err := b.runner(snap).Down(ctx, DownOptions{Volumes: true, Images: true}); err != nil {
			b.t.Logf("cleanup: %v", err)
		}
	}
	names := Names{
		Volumes:  []string{b.settings.Project + "_occ_postgres_data", b.settings.Project + "_occ_bootstrap_data", b.settings.Project + "_occ_configuration_data"},
		Networks: []string{NetworkName(b.settings.Project)},
	}
	if err := VerifyGone(ctx, b.verbs(), b.settings.Project, names); err != nil {
		b.t.Errorf("cleanup: %v", err)
	}
	// Compose tags what it builds <project>-<service>; the layers are shared, the tags are not.
	imgs, err := b.engine.API.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("reference", b.settings.Project+"-*"))})
	if err != nil {
		b.t.Logf("cleanup: list images: %v", err)
	}
	for _, img := range imgs {
		for _, tag := range img.RepoTags {
			if _, err := b.engine.API.ImageRemove(ctx, tag, image.RemoveOptions{}); err != nil {
				b.t.Logf("cleanup: remove image %s: %v", tag, err)
			}
		}
	}
}

// writeAPIInputs writes the two files compose.kubernetes.yaml bind-mounts into the controller
// and the worker, which the flow writes before it starts them.
func (b *bed) writeAPIInputs(installation, kubeconfig string) {
	b.t.Helper()
	for name, content := range map[string]string{InstallationConfigName: installation, ContainerKubeconfigName: kubeconfig} {
		if err := os.WriteFile(filepath.Join(b.state, name), []byte(content), 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
}
