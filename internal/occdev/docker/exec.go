package docker

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
)

// ExecResult is what a command run in a container printed and how it ended.
type ExecResult struct {
	Stdout   string
	Stderr   string
	ExitCode int
}

// Exec runs cmd in the running container through the engine's exec API and waits for it to end.
// A non-zero exit is not an error here: callers decide what an exit code means, and get the
// output to say why.
func Exec(ctx context.Context, api client.APIClient, containerName string, cmd ...string) (ExecResult, error) {
	what := fmt.Sprintf("exec %q in container %s", strings.Join(cmd, " "), containerName)
	created, err := api.ContainerExecCreate(ctx, containerName, container.ExecOptions{Cmd: cmd, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return ExecResult{}, fmt.Errorf("%s: %w", what, err)
	}
	att, err := api.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return ExecResult{}, fmt.Errorf("%s: attach: %w", what, err)
	}
	defer att.Close()
	var stdout, stderr bytes.Buffer
	copied := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(&stdout, &stderr, att.Reader)
		copied <- err
	}()
	select {
	case err := <-copied:
		if err != nil {
			return ExecResult{}, fmt.Errorf("%s: read output: %w", what, err)
		}
	case <-ctx.Done():
		// Closing the hijacked connection ends the copy; the process in the node is left to
		// finish on its own (the engine cannot kill an exec).
		att.Close()
		<-copied
		return ExecResult{}, fmt.Errorf("%s: %w", what, ctx.Err())
	}
	// The stream ends when the process exits, but the engine records the exit code a moment
	// later: inspect until it reports the process finished, with a short bounded backoff.
	delay := 5 * time.Millisecond
	for {
		ins, err := api.ContainerExecInspect(ctx, created.ID)
		if err != nil {
			return ExecResult{}, fmt.Errorf("%s: inspect: %w", what, err)
		}
		if !ins.Running {
			return ExecResult{Stdout: stdout.String(), Stderr: stderr.String(), ExitCode: ins.ExitCode}, nil
		}
		select {
		case <-ctx.Done():
			return ExecResult{}, fmt.Errorf("%s: %w", what, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}
