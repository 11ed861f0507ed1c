package controlplane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"
	"github.com/moby/go-archive"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"

	"github.com/openclaw/occ/internal/occdev/docker/engineapi"
)

// What the Kubernetes-only profile builds from the checkout when no images are selected: the
// controller from the root Dockerfile's runtime target with the Node base as NODE_BASE_IMAGE,
// and the Agent runtime from deploy/runtime/Dockerfile with its own defaults.
const (
	ControllerDockerfile = "Dockerfile"
	ControllerTarget     = "runtime"
	RuntimeDockerfile    = "deploy/runtime/Dockerfile"
	NodeBaseImageArg     = "NODE_BASE_IMAGE"

	// DefaultControllerTag and DefaultRuntimeTag are the reference launcher's tags.
	DefaultControllerTag = "openclaw-enterprise-controller:kubernetes-quickstart"
	DefaultRuntimeTag    = "openclaw-enterprise-runtime:kubernetes-quickstart"
)

// ImageEngine is the part of the Docker API an image build needs; the engine's docker.API has
// all of it. A build stays on the Docker API: it drives BuildKit's session and progress stream
// behind the engine's build endpoint, which only the Docker API serves.
type ImageEngine interface {
	ImageInspect(ctx context.Context, ref string, opts ...engineapi.ImageInspectOption) (image.InspectResponse, error)
	ImageBuild(ctx context.Context, buildContext io.Reader, options build.ImageBuildOptions) (build.ImageBuildResponse, error)
	// DialHijack opens the BuildKit session connection (see startBuildSession).
	DialHijack(ctx context.Context, url, proto string, meta map[string][]string) (net.Conn, error)
}

// BuildRequest is one image build from a directory.
type BuildRequest struct {
	// ContextDir is the absolute build context directory; its .dockerignore is honoured.
	ContextDir string
	// Dockerfile is the Dockerfile's slash-separated path inside ContextDir.
	Dockerfile string
	// Target is the stage to build; empty builds the last stage.
	Target string
	// Args are the build arguments.
	Args map[string]string
	// Tag names the result in the engine.
	Tag string
	// Progress receives the build output line by line; nil discards it.
	Progress func(line string)
	// NetworkMode is the network of RUN steps; empty is the engine's default. A test engine
	// without the default bridge network needs "none".
	NetworkMode string
}

// BuildImage builds req through the engine's BuildKit builder and returns the tagged image.
//
// BuildKit, not the classic builder: the OCE root Dockerfile uses `RUN --mount=type=secret`,
// which the classic builder refuses ("the --mount option requires BuildKit"). BuildKit resolves
// even an optional secret mount through a client session, so a session is opened for every
// build (it offers no secrets: the optional npmrc secret is then skipped, as in a build without
// one). The build context is sent as a tar of ContextDir.
func BuildImage(ctx context.Context, engine ImageEngine, req BuildRequest) (LocalImage, error) {
	what := fmt.Sprintf("build %s from %s", req.Tag, req.Dockerfile)
	if req.Target != "" {
		what += " (target " + req.Target + ")"
	}
	if req.Tag == "" {
		return LocalImage{}, fmt.Errorf("%s: no tag given", what)
	}
	tarball, err := buildContext(req.ContextDir, req.Dockerfile)
	if err != nil {
		return LocalImage{}, fmt.Errorf("%s: %w", what, err)
	}
	defer tarball.Close()

	sessionID, stop, err := startBuildSession(ctx, engine)
	if err != nil {
		return LocalImage{}, fmt.Errorf("%s: %w", what, err)
	}
	defer stop()

	args := make(map[string]*string, len(req.Args))
	for k, v := range req.Args {
		args[k] = &v
	}
	resp, err := engine.ImageBuild(ctx, tarball, build.ImageBuildOptions{
		Version:     build.BuilderBuildKit,
		SessionID:   sessionID,
		Dockerfile:  req.Dockerfile,
		Target:      req.Target,
		BuildArgs:   args,
		Tags:        []string{req.Tag},
		NetworkMode: req.NetworkMode,
		Remove:      true,
		ForceRemove: true,
	})
	if err != nil {
		return LocalImage{}, fmt.Errorf("%s: %w", what, err)
	}
	defer resp.Body.Close()
	progress := req.Progress
	if progress == nil {
		progress = func(string) {}
	}
	id, err := readBuildStream(resp.Body, progress)
	if err != nil {
		return LocalImage{}, fmt.Errorf("%s: %w", what, err)
	}
	info, err := engine.ImageInspect(ctx, req.Tag)
	if err != nil {
		return LocalImage{}, fmt.Errorf("%s: inspect the result: %w", what, err)
	}
	if id != "" && info.ID != id {
		return LocalImage{}, fmt.Errorf("%s: the engine built %s but %s now names %s: another build replaced the tag meanwhile; retry", what, id, req.Tag, info.ID)
	}
	return LocalImage{Reference: req.Tag, ID: info.ID}, nil
}

// buildMessage is one JSON message of the engine's build stream.
type buildMessage struct {
	Stream      string                    `json:"stream"`
	Error       string                    `json:"error"`
	ErrorDetail *struct{ Message string } `json:"errorDetail"`
	ID          string                    `json:"id"`
	Aux         json.RawMessage           `json:"aux"`
}

// readBuildStream follows the build until it ends, passing output to progress, and returns the
// built image ID. A failed build returns the engine's error together with the output of the
// failing step, which is where the cause is.
func readBuildStream(r io.Reader, progress func(string)) (string, error) {
	dec := json.NewDecoder(r)
	trace := newBuildTrace(progress)
	imageID := ""
	for {
		var m buildMessage
		if err := dec.Decode(&m); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return "", fmt.Errorf("read the build output: %w", err)
		}
		switch {
		case m.Error != "" || m.ErrorDetail != nil:
			msg := m.Error
			if msg == "" {
				msg = m.ErrorDetail.Message
			}
			return "", trace.failure(msg)
		case m.ID == "moby.buildkit.trace":
			var raw []byte
			if err := json.Unmarshal(m.Aux, &raw); err != nil {
				return "", fmt.Errorf("read the build progress: %w", err)
			}
			if err := trace.add(raw); err != nil {
				return "", fmt.Errorf("read the build progress: %w", err)
			}
		case m.ID == "moby.image.id":
			var aux struct{ ID string }
			if err := json.Unmarshal(m.Aux, &aux); err != nil {
				return "", fmt.Errorf("read the built image ID: %w", err)
			}
			imageID = aux.ID
		case m.Stream != "":
			for _, line := range strings.Split(strings.TrimRight(m.Stream, "\n"), "\n") {
				progress(line)
			}
		}
	}
	if imageID == "" {
		return "", errors.New("the build ended without reporting an image ID")
	}
	return imageID, nil
}

// buildContext tars dir as the engine's build context, leaving out what dir/.dockerignore
// excludes, as `docker build` does: the Dockerfile and the .dockerignore itself are always sent,
// and every file is owned by root in the tar.
func buildContext(dir, dockerfile string) (io.ReadCloser, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("build context %q must be an absolute directory", dir)
	}
	if dockerfile == "" || path.IsAbs(dockerfile) || path.Clean(dockerfile) != dockerfile || strings.HasPrefix(dockerfile, "../") {
		return nil, fmt.Errorf("Dockerfile path %q must be a clean relative path inside the build context %s", dockerfile, dir)
	}
	fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(dockerfile)))
	if err != nil {
		return nil, fmt.Errorf("the checkout %s has no %s: %w; point occ at an OCE checkout", dir, dockerfile, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s in %s is not a regular file", dockerfile, dir)
	}
	excludes, err := dockerignore(dir)
	if err != nil {
		return nil, err
	}
	for _, keep := range []string{dockerfile, ".dockerignore"} {
		if excluded, err := patternmatcher.MatchesOrParentMatches(keep, excludes); err != nil {
			return nil, fmt.Errorf("%s/.dockerignore: %w", dir, err)
		} else if excluded {
			excludes = append(excludes, "!"+keep)
		}
	}
	tarball, err := archive.TarWithOptions(dir, &archive.TarOptions{
		ExcludePatterns: excludes,
		ChownOpts:       &archive.ChownOpts{UID: 0, GID: 0},
	})
	if err != nil {
		return nil, fmt.Errorf("pack the build context %s: %w", dir, err)
	}
	return tarball, nil
}

// dockerignore reads dir/.dockerignore; a missing file excludes nothing.
func dockerignore(dir string) ([]string, error) {
	f, err := os.Open(filepath.Join(dir, ".dockerignore"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s/.dockerignore: %w", dir, err)
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("read %s/.dockerignore: %w", dir, err)
	}
	return patterns, nil
}

// ImageTags name the images built from the checkout.
type ImageTags struct {
	Controller string
	Runtime    string
}

// DefaultImageTags are the reference launcher's tags.
func DefaultImageTags() ImageTags {
	return ImageTags{Controller: DefaultControllerTag, Runtime: DefaultRuntimeTag}
}

// ImageOptions say how the control-plane images are obtained.
type ImageOptions struct {
	// Selection is the developer's selection; empty builds both images.
	Selection ImageSelection
	// Checkout is the absolute path of the OCE checkout (the build context).
	Checkout string
	// Commit is the checkout's 40-hex commit, which selected images' revision labels must match.
	Commit string
	// ControllerArgs and RuntimeArgs are the build arguments of the two builds: the controller
	// needs NODE_BASE_IMAGE (the root Dockerfile gives it no default); each base comes in by the
	// digest occ pulled (PlannedBuild.WithResolved).
	ControllerArgs map[string]string
	RuntimeArgs    map[string]string
	// Tags name built images; zero values take DefaultImageTags.
	Tags ImageTags
	// Progress receives the build output; nil discards it.
	Progress func(line string)
	// NetworkMode is passed to the builds (see BuildRequest).
	NetworkMode string
}

// BuildRequests are the controller and Agent runtime builds the profiles make from
// opts (the one definition of them, which `occ dev reload` records and repeats).
func BuildRequests(opts ImageOptions) (controller, runtime BuildRequest) {
	tags := opts.Tags
	defaults := DefaultImageTags()
	if tags.Controller == "" {
		tags.Controller = defaults.Controller
	}
	if tags.Runtime == "" {
		tags.Runtime = defaults.Runtime
	}
	controller = BuildRequest{
		ContextDir: opts.Checkout, Dockerfile: ControllerDockerfile, Target: ControllerTarget,
		Args: opts.ControllerArgs, Tag: tags.Controller,
		Progress: opts.Progress, NetworkMode: opts.NetworkMode,
	}
	runtime = BuildRequest{
		ContextDir: opts.Checkout, Dockerfile: RuntimeDockerfile, Tag: tags.Runtime, Args: opts.RuntimeArgs,
		Progress: opts.Progress, NetworkMode: opts.NetworkMode,
	}
	return controller, runtime
}

// CheckBuilds refuses build options the controller build cannot start from: it needs its Node
// base image.
func (o ImageOptions) CheckBuilds() error {
	if o.ControllerArgs[NodeBaseImageArg] == "" {
		return fmt.Errorf("no Node base image for the controller build: pass the pinned one or %s", EnvNodeBaseImage)
	}
	return nil
}
