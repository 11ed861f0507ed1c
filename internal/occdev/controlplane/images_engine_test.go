package controlplane

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/docker/docker/client"

	"github.com/openclaw/occ/internal/occdev/docker"
	"github.com/openclaw/occ/internal/occdev/engine"
)

const (
	testCommit  = "0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c"
	otherCommit = "1111111111111111111111111111111111111111"
)

// A developer selects CI-built images of this very commit: both exist locally and carry the
// checkout's revision, so they are used as they are, with the engine's image IDs for the import.
func TestSelectedImagesOfThisCheckoutAreAccepted(t *testing.T) {
	c := testEngine(t)
	host := testRegistry(t)
	suffix := randomName(t)
	controller := pulledImage(t, c, host, "occ-test/controller-"+suffix, map[string]string{RevisionLabel: testCommit})
	runtime := pulledImage(t, c, host, "occ-test/runtime-"+suffix, map[string]string{RevisionLabel: testCommit})

	got, err := PrepareControlPlaneImages(context.Background(), engineOver(c), engineOver(c), ImageOptions{
		Selection: ImageSelection{Controller: controller, Runtime: runtime}, Commit: testCommit,
	})
	if err != nil {
		t.Fatalf("PrepareControlPlaneImages: %v", err)
	}
	if !got.Selected || got.Controller.Reference != controller || got.Runtime.Reference != runtime {
		t.Fatalf("images = %+v", got)
	}
	for _, img := range []LocalImage{got.Controller, got.Runtime} {
		info, err := c.ImageInspect(context.Background(), img.Reference)
		if err != nil {
			t.Fatal(err)
		}
		if img.ID != info.ID || !strings.HasPrefix(img.ID, "sha256:") {
			t.Errorf("%s: ID %q, engine says %q", img.Reference, img.ID, info.ID)
		}
	}
}

// A developer selects images built from another commit (or built locally without the label):
// the reference refuses with "selected image revision does not match checkout", naming the image.
func TestSelectedImageRevisionMismatch(t *testing.T) {
	c := testEngine(t)
	host := testRegistry(t)
	suffix := randomName(t)
	unlabelled := pulledImage(t, c, host, "occ-test/controller-"+suffix, map[string]string{"other": "label"})
	stale := pulledImage(t, c, host, "occ-test/runtime-"+suffix, map[string]string{RevisionLabel: otherCommit})

	_, err := VerifySelectedImages(context.Background(), engineOver(c), ImageSelection{Controller: unlabelled, Runtime: stale}, testCommit)
	if err == nil {
		t.Fatal("images of another revision were accepted")
	}
	msg := err.Error()
	for _, want := range []string{
		"selected image revision does not match checkout " + testCommit + ": " + unlabelled,
		"selected image revision does not match checkout " + testCommit + ": " + stale,
		"has no " + RevisionLabel + " label",
		`is "` + otherCommit + `"`,
		EnvControllerImage, EnvRuntimeImage,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not contain %q:\n%s", want, msg)
		}
	}
}

// A developer selects digests they never pulled: occ does not pull selected images, it refuses
// with the reference's "must already exist locally" for each missing one.
func TestSelectedImageMissingLocally(t *testing.T) {
	c := testEngine(t)
	suffix := randomName(t)
	controller := "127.0.0.1:1/occ-test/absent-controller-" + suffix + "@" + testDigest
	runtime := "127.0.0.1:1/occ-test/absent-runtime-" + suffix + "@" + testDigest
	_, err := VerifySelectedImages(context.Background(), engineOver(c), ImageSelection{Controller: controller, Runtime: runtime}, testCommit)
	if err == nil {
		t.Fatal("absent images were accepted")
	}
	for _, want := range []string{
		"explicitly selected controller image must already exist locally: " + controller,
		"explicitly selected runtime image must already exist locally: " + runtime,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not contain %q:\n%v", want, err)
		}
	}
}

// nodeBase builds a stand-in for the Node base image: busybox as /bin/sh on scratch (no base
// image exists on the test machine), enough for RUN steps.
func nodeBase(t *testing.T, c *client.Client) string {
	t.Helper()
	bb, err := os.ReadFile("/bin/busybox")
	if err != nil {
		t.Fatalf("the stand-in Node base needs a static busybox at /bin/busybox (Debian busybox-static): %v", err)
	}
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"Dockerfile": "FROM scratch\nCOPY busybox /bin/busybox\nCOPY busybox /bin/sh\n"})
	if err := os.WriteFile(filepath.Join(dir, "busybox"), bb, 0o755); err != nil {
		t.Fatal(err)
	}
	tag := "occ-test/node-base-" + randomName(t) + ":24"
	removeImageAtEnd(t, c, tag)
	if _, err := BuildImage(context.Background(), engineOver(c), engine.BuildRequest{ContextDir: dir, Dockerfile: "Dockerfile", Tag: tag, NetworkMode: "none"}); err != nil {
		t.Fatalf("build the stand-in Node base: %v", err)
	}
	return tag
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// fixtureCheckoutDockerfile mirrors the shape of the OCE root Dockerfile that matters to the
// build: NODE_BASE_IMAGE without default, a dependencies stage with the optional npmrc secret
// mount (BuildKit-only syntax), a development stage last, and the runtime target before it.
const fixtureCheckoutDockerfile = `ARG NODE_BASE_IMAGE
FROM ${NODE_BASE_IMAGE} AS dependencies
RUN --mount=type=secret,id=npmrc,target=/root/.npmrc,required=false echo installing dependencies
COPY . /app/

FROM ${NODE_BASE_IMAGE} AS runtime
ARG NODE_BASE_IMAGE
COPY --from=dependencies /app /app
LABEL occ.test/stage=runtime occ.test/node-base=${NODE_BASE_IMAGE}

FROM dependencies AS development
LABEL occ.test/stage=development
`

type lines struct {
	mu  sync.Mutex
	all []string
}

func (l *lines) add(s string) { l.mu.Lock(); l.all = append(l.all, s); l.mu.Unlock() }
func (l *lines) text() string { l.mu.Lock(); defer l.mu.Unlock(); return strings.Join(l.all, "\n") }

// Without a selection, `up` builds the controller (root Dockerfile, target runtime,
// NODE_BASE_IMAGE) and the Agent runtime (deploy/runtime/Dockerfile) from the checkout through
// the engine API, honouring .dockerignore, and streams the build output as progress.
func TestBuildControlPlaneImagesFromCheckout(t *testing.T) {
	c := testEngine(t)
	base := nodeBase(t, c)
	checkout := t.TempDir()
	writeFiles(t, checkout, map[string]string{
		"Dockerfile":                fixtureCheckoutDockerfile,
		".dockerignore":             ".git\nsecret.env\nDockerfile\n",
		"package.json":              `{"name":"openclaw-enterprise"}`,
		"secret.env":                "NOT_FOR_THE_IMAGE=1\n",
		".git/HEAD":                 "ref: refs/heads/main\n",
		"deploy/runtime/Dockerfile": "FROM scratch\nCOPY package.json /opt/oce/package.json\nLABEL occ.test/image=runtime\n",
	})
	suffix := randomName(t)
	tags := ImageTags{Controller: "occ-test/controller-" + suffix + ":kubernetes-quickstart", Runtime: "occ-test/runtime-" + suffix + ":kubernetes-quickstart"}
	removeImageAtEnd(t, c, tags.Controller)
	removeImageAtEnd(t, c, tags.Runtime)
	var progress lines

	got, err := PrepareControlPlaneImages(context.Background(), engineOver(c), engineOver(c), ImageOptions{
		Checkout: checkout, Commit: testCommit, ControllerArgs: map[string]string{NodeBaseImageArg: base}, Tags: tags,
		Progress: progress.add, NetworkMode: "none",
	})
	if err != nil {
		t.Fatalf("PrepareControlPlaneImages: %v", err)
	}
	if got.Selected || got.Controller.Reference != tags.Controller || got.Runtime.Reference != tags.Runtime {
		t.Fatalf("images = %+v", got)
	}
	ctrl, err := c.ImageInspect(context.Background(), tags.Controller)
	if err != nil {
		t.Fatal(err)
	}
	if ctrl.ID != got.Controller.ID {
		t.Errorf("controller ID %s, engine says %s", got.Controller.ID, ctrl.ID)
	}
	if l := ctrl.Config.Labels; l["occ.test/stage"] != "runtime" || l["occ.test/node-base"] != base {
		t.Errorf("controller labels %v: want the runtime target built on NODE_BASE_IMAGE=%s", l, base)
	}
	if _, ok := ctrl.Config.Labels[RevisionLabel]; ok {
		t.Errorf("a local build carries %s, which only CI sets", RevisionLabel)
	}
	rt, err := c.ImageInspect(context.Background(), tags.Runtime)
	if err != nil {
		t.Fatal(err)
	}
	if rt.Config.Labels["occ.test/image"] != "runtime" {
		t.Errorf("runtime labels %v: not built from %s", rt.Config.Labels, RuntimeDockerfile)
	}

	files := imageFiles(t, c, tags.Controller)
	for _, want := range []string{"app/package.json", "app/Dockerfile", "app/deploy/runtime/Dockerfile"} {
		if !files[want] {
			t.Errorf("the build context lacks %s (files: %v)", want, files)
		}
	}
	for _, unwanted := range []string{"app/secret.env", "app/.git/HEAD"} {
		if files[unwanted] {
			t.Errorf("%s reached the image although .dockerignore excludes it", unwanted)
		}
	}
	out := progress.text()
	for _, want := range []string{"[dependencies", "installing dependencies", "[runtime"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress lacks %q:\n%s", want, out)
		}
	}
}

// A step of the checkout's Dockerfile fails (a broken dependency install): the error carries
// BuildKit's message and the failing step's last output lines, where the cause is.
func TestBuildFailureCarriesTheStepOutput(t *testing.T) {
	c := testEngine(t)
	base := nodeBase(t, c)
	checkout := t.TempDir()
	writeFiles(t, checkout, map[string]string{
		"Dockerfile": "ARG NODE_BASE_IMAGE\nFROM ${NODE_BASE_IMAGE} AS runtime\nRUN echo resolving packages; echo ERR_PNPM_FETCH_404 openclaw@0.0.0; exit 3\n",
	})
	tag := "occ-test/broken-" + randomName(t) + ":1"
	removeImageAtEnd(t, c, tag)
	_, err := BuildImage(context.Background(), engineOver(c), engine.BuildRequest{
		ContextDir: checkout, Dockerfile: "Dockerfile", Target: "runtime",
		Args: map[string]string{NodeBaseImageArg: base}, Tag: tag, NetworkMode: "none",
	})
	if err == nil {
		t.Fatal("a failing RUN step built")
	}
	msg := err.Error()
	for _, want := range []string{"build " + tag + " from Dockerfile (target runtime)", "exit code: 3", "failing step [2/2] RUN echo resolving packages", "ERR_PNPM_FETCH_404 openclaw@0.0.0", "resolving packages"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if _, ierr := c.ImageInspect(context.Background(), tag); ierr == nil {
		t.Errorf("the failed build left the tag %s", tag)
	}
}

// engineOver is the Docker engine api reaches, in occ's own verbs, as a connection hands it out.
func engineOver(api docker.API) engine.Engine {
	return (&docker.Engine{API: api, Identity: engine.Identity{Kind: engine.Docker}}).Verbs()
}

// PrepareControlPlaneImages returns the selected images after checking them in selected, or
// builds both from the checkout through eng, as the profiles do (Validate, then
// VerifySelectedImages or CheckBuilds and BuildImage per request). Nothing is built when the
// selection is invalid.
func PrepareControlPlaneImages(ctx context.Context, eng engine.Engine, selected ImageInspector, opts ImageOptions) (ControlPlaneImages, error) {
	if err := opts.Selection.Validate(); err != nil {
		return ControlPlaneImages{}, err
	}
	if opts.Selection.Selected() {
		return VerifySelectedImages(ctx, selected, opts.Selection, opts.Commit)
	}
	if err := opts.CheckBuilds(); err != nil {
		return ControlPlaneImages{}, err
	}
	creq, rreq := BuildRequests(opts)
	controller, err := BuildImage(ctx, eng, creq)
	if err != nil {
		return ControlPlaneImages{}, fmt.Errorf("build the controller image: %w", err)
	}
	runtime, err := BuildImage(ctx, eng, rreq)
	if err != nil {
		return ControlPlaneImages{}, fmt.Errorf("build the Agent runtime image: %w", err)
	}
	return ControlPlaneImages{Controller: controller, Runtime: runtime}, nil
}
