package docker

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/docker/docker/api/types/container"

	"github.com/openclaw/occ/internal/occdev/engine"
)

// runOnce runs s and returns what it printed and its exit code, as `docker run --rm` does: the
// container is created to be removed by the engine when it exits (so an occ stopped half-way
// leaves nothing running behind), attached before it starts (so no output is lost), and removed
// here if it never started.
func runOnce(ctx context.Context, api API, s engine.OneShot) (engine.ExecResult, error) {
	what := fmt.Sprintf("run %q in a throwaway container of %s", strings.Join(append(append([]string{}, s.Entrypoint...), s.Cmd...), " "), s.Image)
	host := &container.HostConfig{AutoRemove: true, NetworkMode: container.NetworkMode(s.Network), Binds: s.Binds}
	if s.Confined {
		host.CapDrop, host.CapAdd = []string{"ALL"}, s.CapAdd
		host.ReadonlyRootfs, host.SecurityOpt = true, []string{"no-new-privileges"}
	}
	created, err := api.ContainerCreate(ctx,
		&container.Config{Image: s.Image, Entrypoint: s.Entrypoint, Cmd: s.Cmd, User: s.User, AttachStdout: true, AttachStderr: true}, host, nil, nil, "")
	if err != nil {
		return engine.ExecResult{}, fmt.Errorf("%s: %w", what, err)
	}
	started := false
	defer func() {
		if !started {
			// A container that never started is not removed by the engine.
			_ = api.ContainerRemove(context.WithoutCancel(ctx), created.ID, container.RemoveOptions{Force: true})
		}
	}()
	att, err := api.ContainerAttach(ctx, created.ID, container.AttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		return engine.ExecResult{}, fmt.Errorf("%s: attach: %w", what, err)
	}
	defer att.Close()
	// Waiting for the container's removal (after its exit, with its exit code) is registered
	// before the start, so a command that ends at once is not missed, and nothing of it is left
	// when RunOnce returns.
	waited, waitErr := api.ContainerWait(ctx, created.ID, container.WaitConditionRemoved)
	if err := api.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		return engine.ExecResult{}, fmt.Errorf("%s: start: %w", what, err)
	}
	started = true
	stdout, stderr, err := readOutput(ctx, att, what)
	if err != nil {
		return engine.ExecResult{}, err
	}
	select {
	case w := <-waited:
		if w.Error != nil && w.Error.Message != "" {
			return engine.ExecResult{}, fmt.Errorf("%s: wait: %s", what, w.Error.Message)
		}
		return engine.ExecResult{Stdout: stdout, Stderr: stderr, ExitCode: int(w.StatusCode)}, nil
	case err := <-waitErr:
		if err == nil {
			err = errors.New("the engine ended the wait without an exit code")
		}
		return engine.ExecResult{}, fmt.Errorf("%s: wait: %w", what, err)
	case <-ctx.Done():
		return engine.ExecResult{}, fmt.Errorf("%s: %w", what, ctx.Err())
	}
}
