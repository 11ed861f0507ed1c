package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/docker/docker/api/types/build"
	"github.com/moby/go-archive"
	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"

	"github.com/openclaw/occ/internal/occdev/engine"
)

// Build builds req through the engine's BuildKit builder and returns the tagged image's ID.
//
// BuildKit, not the classic builder: the OCE root Dockerfile uses `RUN --mount=type=secret`,
// which the classic builder refuses ("the --mount option requires BuildKit"). BuildKit resolves
// even an optional secret mount through a client session, so a session is opened for every
// build (it offers no secrets: the optional npmrc secret is then skipped, as in a build without
// one). The build context is sent as a tar of ContextDir.
func (a apiEngine) Build(ctx context.Context, req engine.BuildRequest) (engine.BuildResult, error) {
	what := fmt.Sprintf("build %s from %s", req.Tag, req.Dockerfile)
	if req.Target != "" {
		what += " (target " + req.Target + ")"
	}
	if req.Tag == "" {
		return engine.BuildResult{}, fmt.Errorf("%s: no tag given", what)
	}
	tarball, err := buildContext(req.ContextDir, req.Dockerfile)
	if err != nil {
		return engine.BuildResult{}, fmt.Errorf("%s: %w", what, err)
	}
	defer tarball.Close()

	sessionID, stop, err := startBuildSession(ctx, a.api)
	if err != nil {
		return engine.BuildResult{}, fmt.Errorf("%s: %w", what, err)
	}
	defer stop()

	tags, result := []string{req.Tag}, req.Tag
	if req.Hold != "" {
		tags, result = append(tags, req.Hold), req.Hold
	}
	args := make(map[string]*string, len(req.Args))
	for k, v := range req.Args {
		args[k] = &v
	}
	resp, err := a.api.ImageBuild(ctx, tarball, build.ImageBuildOptions{
		Version:     build.BuilderBuildKit,
		SessionID:   sessionID,
		Dockerfile:  req.Dockerfile,
		Target:      req.Target,
		BuildArgs:   args,
		Tags:        tags,
		NetworkMode: req.NetworkMode,
		Remove:      true,
		ForceRemove: true,
	})
	if err != nil {
		return engine.BuildResult{}, fmt.Errorf("%s: %w", what, err)
	}
	defer resp.Body.Close()
	progress := req.Progress
	if progress == nil {
		progress = func(string) {}
	}
	id, err := readBuildStream(resp.Body, progress)
	if err != nil {
		return engine.BuildResult{}, fmt.Errorf("%s: %w", what, err)
	}
	info, err := a.api.ImageInspect(ctx, result)
	if err != nil {
		return engine.BuildResult{}, fmt.Errorf("%s: inspect the result: %w", what, err)
	}
	if id != "" && info.ID != id {
		return engine.BuildResult{}, fmt.Errorf("%s: the engine built %s but %s now names %s: another build replaced the tag meanwhile; retry", what, id, result, info.ID)
	}
	return engine.BuildResult{ID: info.ID}, nil
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
