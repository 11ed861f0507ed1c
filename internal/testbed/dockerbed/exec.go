package dockerbed

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
)

// ExecResult is what a command run in a container printed and how it ended.
type ExecResult struct {
	Stdout, Stderr string
	ExitCode       int
}

// Exec runs cmd in a running container through the exec API (as k3d does, privileged when
// asked) and waits for it to finish.
func (e *Engine) Exec(ctx context.Context, containerID string, privileged bool, cmd ...string) (ExecResult, error) {
	created, err := e.API.ContainerExecCreate(ctx, containerID, container.ExecOptions{
		Cmd: cmd, Privileged: privileged, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return ExecResult{}, fmt.Errorf("exec %q in %s: %w", cmd, containerID, err)
	}
	att, err := e.API.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return ExecResult{}, fmt.Errorf("exec %q in %s: attach: %w", cmd, containerID, err)
	}
	defer att.Close()
	var stdout, stderr bytes.Buffer
	if _, err := stdcopy.StdCopy(&stdout, &stderr, att.Reader); err != nil {
		return ExecResult{}, fmt.Errorf("exec %q in %s: read output: %w", cmd, containerID, err)
	}
	// The output stream ends when the process exits, but the engine records the exit code a
	// moment later; inspect until it reports the process as finished.
	for {
		ins, err := e.API.ContainerExecInspect(ctx, created.ID)
		if err != nil {
			return ExecResult{}, fmt.Errorf("exec %q in %s: inspect: %w", cmd, containerID, err)
		}
		if !ins.Running {
			return ExecResult{Stdout: stdout.String(), Stderr: stderr.String(), ExitCode: ins.ExitCode}, nil
		}
		select {
		case <-ctx.Done():
			return ExecResult{}, fmt.Errorf("exec %q in %s: %w", cmd, containerID, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
