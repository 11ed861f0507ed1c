package controlplane

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/openclaw/occ/internal/occdev/engine"
	"github.com/openclaw/occ/internal/occdev/pins"

	"github.com/openclaw/occ/internal/testbed/dockerbed"
	"github.com/openclaw/occ/internal/testbed/ocebed"
)

// fixtureRuntimeArgs are the fixture runtime Dockerfile's bases as the bed provides them: the
// stand-in Node images under the tags ocebed loads (the Dockerfile defaults to Docker Hub
// digests).
var fixtureRuntimeArgs = map[string]string{NodeBaseImageArg: ocebed.NodeBaseTag, NodeRuntimeBaseImageArg: ocebed.NodeRuntimeBaseTag}

// The fixture checkout's Agent runtime Dockerfile, in the real file's shape (multi-stage, ARG
// FROM, secret and bind mounts, the `RUN node --input-type=module <<'NODE'` here-document), builds
// on the bed's current engine through its BuildKit: the here-document reached the stand-in node
// on its standard input (which fails without one), and the image carries the real labels. The
// engine's builder check agrees that it can.
func TestFixtureRuntimeDockerfileBuildsOnTheCurrentEngine(t *testing.T) {
	c := testEngine(t)
	ocebed.EnsureImages(t, dockerbed.Require(t))
	v, err := c.ServerVersion(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	df, err := ParseDockerfile(fixtureRoot, RuntimeDockerfile)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckBuilder(engine.Identity{Version: v.Version, APIVersion: v.APIVersion}, []*Dockerfile{df}); err != nil {
		t.Fatalf("the bed's engine (DOCKER_HOST) is Docker %s (API %s), which cannot build the here-document: %v; the default test engine must be a current one", v.Version, v.APIVersion, err)
	}
	checkout := ocebed.Checkout(t, testCommit)
	// A line of this run inside the here-document, so BuildKit's cache cannot answer the step
	// and the module has to reach node again.
	dockerfile := filepath.Join(checkout, filepath.FromSlash(RuntimeDockerfile))
	data, err := os.ReadFile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	marked := strings.Replace(string(data), "<<'NODE'\n", "<<'NODE'\n// run "+randomName(t)+"\n", 1)
	if marked == string(data) {
		t.Fatal("the fixture's runtime Dockerfile has no <<'NODE' here-document")
	}
	if err := os.WriteFile(dockerfile, []byte(marked), 0o644); err != nil {
		t.Fatal(err)
	}
	tag := "occ-test/runtime-heredoc-" + randomName(t) + ":1"
	removeImageAtEnd(t, c, tag)
	var out lines
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	img, err := BuildImage(ctx, engineOver(c), engine.BuildRequest{ContextDir: checkout, Dockerfile: RuntimeDockerfile, Args: fixtureRuntimeArgs, Tag: tag, NetworkMode: "none", Progress: out.add})
	if err != nil {
		t.Fatalf("build the fixture's runtime Dockerfile on Docker %s: %v", v.Version, err)
	}
	t.Logf("Docker %s (API %s) built %s in %s", v.Version, v.APIVersion, RuntimeDockerfile, time.Since(start).Round(time.Millisecond))
	if !strings.Contains(out.text(), "read a ") || !strings.Contains(out.text(), "-byte module from standard input") {
		t.Errorf("the here-document's module did not reach node; build output:\n%s", out.text())
	}
	info, err := c.ImageInspect(ctx, img.Reference)
	if err != nil {
		t.Fatal(err)
	}
	if l := info.Config.Labels; l["org.openclaw.image.revision"] != "90d30a1178a79dddd92e6190b66b95d89dfb3ca8" || l[RevisionLabel] != "" {
		t.Errorf("labels %v", l)
	}
}

// The same Dockerfile on Docker 20.10 (the bed's legacy engine), built the way occ would if it
// did not check first: the engine's built-in frontend stops at the here-document's first line of
// JavaScript. This is the failure the preflight's refusal prevents.
func TestFixtureRuntimeDockerfileFailsOnDocker2010(t *testing.T) {
	host := os.Getenv("OCC_TEST_DOCKER_LEGACY_HOST")
	if host == "" {
		if os.Getenv("OCC_TEST_DOCKER") == "skip" {
			t.Skip("skipped because OCC_TEST_DOCKER=skip: OCC_TEST_DOCKER_LEGACY_HOST is not set")
		}
		t.Fatal("OCC_TEST_DOCKER_LEGACY_HOST is not set: set it to the DOCKER_HOST of a Docker 20.10 engine (scripts/testdocker legacy), or OCC_TEST_DOCKER=skip")
	}
	c, err := client.NewClientWithOpts(client.WithHost(host), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	v, err := c.ServerVersion(ctx)
	if err != nil || !strings.HasPrefix(v.Version, "20.10") {
		t.Fatalf("the legacy engine at %s: Docker %s (%v), want 20.10", host, v.Version, err)
	}
	checkout := ocebed.Checkout(t, testCommit)
	tag := "occ-test/runtime-heredoc-" + randomName(t) + ":1"
	_, err = BuildImage(ctx, engineOver(c), engine.BuildRequest{ContextDir: checkout, Dockerfile: RuntimeDockerfile, Args: fixtureRuntimeArgs, Tag: tag, NetworkMode: "none"})
	t.Logf("Docker %s (API %s): %v", v.Version, v.APIVersion, err)
	if err == nil {
		_, _ = c.ImageRemove(context.Background(), tag, image.RemoveOptions{Force: true})
		t.Fatal("Docker 20.10 built the here-document; the builder check's rule is wrong")
	}
	if !strings.Contains(strings.ToLower(err.Error()), "unknown instruction") {
		t.Errorf("the failure is not the frontend's parse error: %v", err)
	}
}

// A base given as a tag (compose.yaml's NODE_BASE_IMAGE default is node:24-bookworm) is
// resolved through the engine to the digest its registry serves now, without pulling it; a tag
// the registry does not have is an error naming it and the fix.
func TestResolveTagAsksTheRegistry(t *testing.T) {
	c := testEngine(t)
	host := testRegistry(t)
	repo := "occ-test/base-" + randomName(t)
	ref := pulledImage(t, c, host, repo, map[string]string{"occ.test": "base"})
	digest := ref[strings.Index(ref, "@")+1:]
	tagged, err := name.NewTag(host+"/"+repo+":24-bookworm", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	d, err := name.NewDigest(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(d)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tagged, img); err != nil {
		t.Fatal(err)
	}
	pin, err := pins.ParseImage(host + "/" + repo + ":24-bookworm")
	if err != nil {
		t.Fatal(err)
	}
	got, err := ResolveTag(context.Background(), engineOver(c), pin)
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest != digest || got.Tag != "24-bookworm" || got.Name() != host+"/"+repo {
		t.Fatalf("resolved %s, want %s@%s", got, pin, digest)
	}
	missing, _ := pins.ParseImage(host + "/" + repo + ":no-such-tag")
	if _, err := ResolveTag(context.Background(), engineOver(c), missing); err == nil || !strings.Contains(err.Error(), "resolve the tag "+missing.String()) || !strings.Contains(err.Error(), "or give the image by digest") {
		t.Fatalf("a missing tag: %v", err)
	}
}
