package dockerbed

import (
	"bytes"
	"context"
	"fmt"
	"io"
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
	return e.ExecInput(ctx, containerID, privileged, nil, cmd...)
}

// ExecInput is Exec with stdin streamed to the command (closed at its end), as an image stream
// is piped into `ctr image import -` in a node. A nil stdin attaches none. As in occ's own exec,
// the exit code decides: input the command did not read before it exited is not an error (ctr
// stops at a tar archive's end marker and may exit before the half-close of the input lands).
func (e *Engine) ExecInput(ctx context.Context, containerID string, privileged bool, stdin io.Reader, cmd ...string) (ExecResult, error) {
	created, err := e.API.ContainerExecCreate(ctx, containerID, container.ExecOptions{
		Cmd: cmd, Privileged: privileged, AttachStdin: stdin != nil, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return ExecResult{}, fmt.Errorf("exec %q in %s: %w", cmd, containerID, err)
	}
	att, err := e.API.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return ExecResult{}, fmt.Errorf("exec %q in %s: attach: %w", cmd, containerID, err)
	}
	defer att.Close()
	copied := make(chan struct{})
	if stdin != nil {
		go func() {
			defer close(copied)
			if _, err := io.Copy(att.Conn, stdin); err == nil {
				_ = att.CloseWrite()
			}
		}()
	} else {
		close(copied)
	}
	var stdout, stderr bytes.Buffer
	if _, err := stdcopy.StdCopy(&stdout, &stderr, att.Reader); err != nil {
		return ExecResult{}, fmt.Errorf("exec %q in %s: read output: %w", cmd, containerID, err)
	}
	// The output ends when the command exits; a command that exits before reading all its input
	// leaves the writer blocked until the connection closes.
	att.Close()
	<-copied
	// The output stream ends when the process exits, but the engine records the exit code a
	// moment later; inspect until it reports the process as finished.
	for {
		ins, err := e.API.ContainerExecInspect(ctx, created.ID)
		if err != nil {
			return ExecResult{}, fmt.Errorf("exec %q in %s: inspect: %w", cmd, containerID, err)
		}
		if !ins.Running {
			// A failed command says why in its output.
			return ExecResult{Stdout: stdout.String(), Stderr: stderr.String(), ExitCode: ins.ExitCode}, nil
		}
		select {
		case <-ctx.Done():
			return ExecResult{}, fmt.Errorf("exec %q in %s: %w", cmd, containerID, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}
