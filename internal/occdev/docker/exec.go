package docker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/openclaw/occ/internal/occdev/engine"
)

// execute runs cmd in the running container through the engine's exec API and waits for it to
// end (engine.Engine.Exec). The command's exit code and output decide the result: input it did
// not read before it exited is not an error (a command may stop at its input's own end marker,
// as `ctr image import` does at a tar archive's), and a command that failed says why in its
// output.
func execute(ctx context.Context, api API, containerName string, in engine.ExecInput, cmd []string) (engine.ExecResult, error) {
	what := fmt.Sprintf("exec %q in container %s", strings.Join(cmd, " "), containerName)
	created, err := api.ContainerExecCreate(ctx, containerName, container.ExecOptions{Cmd: cmd, Env: in.Env, AttachStdin: in.Stdin != nil, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return engine.ExecResult{}, fmt.Errorf("%s: %w", what, err)
	}
	att, err := api.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return engine.ExecResult{}, fmt.Errorf("%s: attach: %w", what, err)
	}
	defer att.Close()
	if in.Stdin != nil {
		go func() {
			// The half-close is the end of the command's input; the output stays readable.
			if _, err := io.Copy(att.Conn, in.Stdin); err == nil {
				_ = att.CloseWrite()
			}
		}()
	}
	// A cancelled ctx closes the hijacked connection, which a command reading its input sees
	// end; the process in the node is left to finish on its own (the engine cannot kill an
	// exec).
	stdout, stderr, err := readOutput(ctx, att, what)
	if err != nil {
		return engine.ExecResult{}, err
	}
	// The output ends when the process exits; closing the connection ends a copy of its input
	// that is still writing.
	att.Close()
	// The engine records the exit code a moment after the stream ends: inspect until it reports
	// the process finished, with a short bounded backoff.
	delay := 5 * time.Millisecond
	for {
		ins, err := api.ContainerExecInspect(ctx, created.ID)
		if err != nil {
			return engine.ExecResult{}, fmt.Errorf("%s: inspect: %w", what, err)
		}
		if !ins.Running {
			return engine.ExecResult{Stdout: stdout, Stderr: stderr, ExitCode: ins.ExitCode}, nil
		}
		select {
		case <-ctx.Done():
			return engine.ExecResult{}, fmt.Errorf("%s: %w", what, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}

// readOutput reads the demultiplexed stdout and stderr of a hijacked stream until it ends. A
// cancelled ctx closes the connection, which ends the copy, and returns ctx's error.
func readOutput(ctx context.Context, att types.HijackedResponse, what string) (stdout, stderr string, err error) {
	var out, errOut bytes.Buffer
	copied := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(&out, &errOut, att.Reader)
		copied <- err
	}()
	select {
	case err := <-copied:
		if err != nil {
			return "", "", fmt.Errorf("%s: read output: %w", what, err)
		}
		return out.String(), errOut.String(), nil
	case <-ctx.Done():
		att.Close()
		<-copied
		return "", "", fmt.Errorf("%s: %w", what, ctx.Err())
	}
}
