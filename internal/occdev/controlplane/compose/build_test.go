package compose

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"

	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/engine"
)

// buildNetworkNone is a user overlay that runs the builds' RUN steps without a network: the test
// engine has no default bridge, which BuildKit's RUN steps use otherwise.
const buildNetworkNone = "services:\n  migrate: {build: {network: none}}\n  bootstrap: {build: {network: none}}\n  controller: {build: {network: none}}\n  worker-kubernetes: {build: {network: none}}\n"

// writeOverlay writes a user Compose file into the bed's checkout copy and returns its path.
func (b *bed) writeOverlay(name, content string) string {
	b.t.Helper()
	return writeCheckoutFile(b.t, b.checkout, name, content)
}

// A Docker host without the buildx plugin (the bed has none) and OCE's real root Dockerfile,
// whose dependencies stage mounts an optional BuildKit secret: occ builds the checkout's
// development target once, through the engine's BuildKit, for the four services that share it,
// and Compose starts them from that image without building; the classic builder that
// `compose up --build` falls back to would have refused the Dockerfile.
func TestBuiltImagesRunTheCheckout(t *testing.T) {
	b := newBed(t)
	if !strings.Contains(readFile(t, filepath.Join(b.checkout, "Dockerfile")), "RUN --mount=type=secret,id=npmrc") {
		t.Fatal("the fixture Dockerfile lost its secret mount; update the test")
	}
	m := b.mustLoad(UserOptions{Files: []string{b.writeOverlay("build-network.yaml", buildNetworkNone)}})
	builds, err := m.UseBuiltImages()
	if err != nil {
		t.Fatal(err)
	}
	if len(builds) != 1 {
		t.Fatalf("planned %d builds, want one shared by the four services: %+v", len(builds), builds)
	}
	want := Build{Tag: b.settings.Project + "-development", Services: []string{ServiceMigrate, ServiceBootstrap, ServiceController, ServiceWorker},
		Context: b.checkout, Dockerfile: "Dockerfile", Target: "development", Args: map[string]string{"NODE_BASE_IMAGE": "docker.io/library/node:24-bookworm"}, Network: "none"}
	if got := builds[0]; got.Tag != want.Tag || strings.Join(got.Services, ",") != strings.Join(want.Services, ",") || got.Context != want.Context ||
		got.Dockerfile != want.Dockerfile || got.Target != want.Target || got.Args["NODE_BASE_IMAGE"] != want.Args["NODE_BASE_IMAGE"] || got.Network != want.Network {
		t.Fatalf("build %+v, want %+v", got, want)
	}
	for _, name := range want.Services {
		if svc := m.Project.Services[name]; svc.Build != nil || svc.Image != want.Tag || svc.PullPolicy != "never" {
			t.Errorf("service %s: build %v, image %q, pull_policy %q; want the built tag with pull_policy never", name, svc.Build, svc.Image, svc.PullPolicy)
		}
	}
	snap, err := m.WriteSnapshot(b.state)
	if err != nil {
		t.Fatal(err)
	}
	recorded, err := LoadSnapshot(context.Background(), snap)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range want.Services {
		if svc := recorded.Services[name]; svc.Build != nil || svc.Image != want.Tag {
			t.Fatalf("the snapshot has service %s build %v image %q; want only the built tag", name, svc.Build, svc.Image)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	imgs, err := BuildImages(ctx, builds, BuildImagesOptions{Engine: b.verbs()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("BuildKit build of the development target: %v", time.Since(start).Round(time.Millisecond))
	t.Cleanup(func() { _, _ = b.engine.API.ImageRemove(context.Background(), want.Tag, image.RemoveOptions{}) })
	info, err := b.engine.API.ImageInspect(ctx, want.Tag)
	if err != nil || info.ID != imgs[0].ID {
		t.Fatalf("built %+v, engine has %s (%v)", imgs[0], info.ID, err)
	}
	r, s := b.runner(snap), b.stack()
	if err := StartData(ctx, StartOptions{Runner: r, Stack: s}); err != nil {
		t.Fatal(err)
	}
	if got, want := fileFromService(t, s, ServiceBootstrap, "/app/package.json"), readFile(t, filepath.Join(b.checkout, "package.json")); got != want {
		t.Fatalf("bootstrap's image holds package.json %q, the checkout %q", got, want)
	}
	if err := Remove(ctx, RemoveOptions{Runner: r, Engine: b.verbs(), Names: m.Names()}); err != nil {
		t.Fatal(err)
	}
}

// A user overlay that gives a service a build key occ cannot pass to BuildKit (a build secret,
// a platform list) is refused, naming the service and the key, before anything is built.
func TestUseBuiltImagesRefusesUnsupportedBuildKeys(t *testing.T) {
	b := newModelBed(t)
	over := b.override("odd-build.yaml", "services:\n  migrate:\n    build:\n      platforms: [linux/arm64]\n  controller:\n    build:\n      secrets: [npmrc]\nsecrets:\n  npmrc:\n    file: ./package.json\n")
	m, err := b.load([]string{over}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.UseBuiltImages()
	var pe *ProjectError
	if !errors.As(err, &pe) || len(pe.Violations) != 2 {
		t.Fatalf("got %v, want two violations", err)
	}
	for _, want := range []string{"service migrate: build.platforms = \"linux/arm64\"", "service controller: build.secrets", "BuildKit API", "OCC_DEVELOPMENT_CONTROLLER_IMAGE"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// BuildImagesOptions are the inputs of BuildImages.
type BuildImagesOptions struct {
	Engine engine.Engine
	// Progress receives each build's output line by line; nil discards it.
	Progress func(line string)
}

// BuildImages builds every planned Build through the engine's BuildKit, one
// controlplane.BuildImage each as the Compose profile's build step does, and returns the built
// images in plan order. It is safe to repeat: BuildKit's cache makes a second build of the same
// checkout quick, and the tag is moved to the new result.
func BuildImages(ctx context.Context, builds []Build, opts BuildImagesOptions) ([]controlplane.LocalImage, error) {
	out := make([]controlplane.LocalImage, 0, len(builds))
	for _, b := range builds {
		img, err := controlplane.BuildImage(ctx, opts.Engine, engine.BuildRequest{
			ContextDir: b.Context, Dockerfile: b.Dockerfile, Target: b.Target, Args: b.Args,
			Tag: b.Tag, Progress: opts.Progress, NetworkMode: b.Network,
		})
		if err != nil {
			return nil, fmt.Errorf("build the image of %s: %w", strings.Join(b.Services, ", "), err)
		}
		out = append(out, img)
	}
	return out, nil
}
