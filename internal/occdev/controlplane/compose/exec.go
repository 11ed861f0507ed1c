package compose

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/openclaw/occ/internal/occdev/controlplane"
)

// WorkerReadyCommand is OCE's worker readiness probe: it exits 0 when the worker reported a
// healthy database observation in the last 15 s.
var WorkerReadyCommand = []string{"node", "scripts/production-healthcheck.mjs", "worker", "ready"}

// WorkerReady runs the readiness probe in the worker-kubernetes container through the Docker
// exec API, the equivalent of `compose exec -T worker-kubernetes node
// scripts/production-healthcheck.mjs worker ready`. nil means ready.
func (s Stack) WorkerReady(ctx context.Context) error {
	id, err := s.oneContainer(ctx, ServiceWorker)
	if err != nil {
		return err
	}
	if id == "" {
		return fmt.Errorf("%s has no container yet", ServiceWorker)
	}
	code, out, err := s.exec(ctx, id, WorkerReadyCommand)
	if err != nil {
		return fmt.Errorf("%s readiness probe: %w", ServiceWorker, err)
	}
	if code != 0 {
		return fmt.Errorf("%s readiness probe exited with %d%s", ServiceWorker, code, tail("", out, s.Redact))
	}
	return nil
}

// ReadinessCheck is the worker probe as an extra check of controlplane.WaitReady.
func (s Stack) ReadinessCheck() controlplane.ReadinessCheck {
	return controlplane.ReadinessCheck{Name: ServiceWorker + " readiness", Check: s.WorkerReady}
}

// exec runs cmd in the container without a TTY or stdin and returns its exit code and combined
// output (bounded).
func (s Stack) exec(ctx context.Context, id string, cmd []string) (int, []byte, error) {
	created, err := s.Engine.ContainerExecCreate(ctx, id, container.ExecOptions{Cmd: cmd, AttachStdout: true, AttachStderr: true})
	if err != nil {
		return 0, nil, fmt.Errorf("create exec: %w", err)
	}
	att, err := s.Engine.ContainerExecAttach(ctx, created.ID, container.ExecAttachOptions{})
	if err != nil {
		return 0, nil, fmt.Errorf("attach exec: %w", err)
	}
	defer att.Close()
	var buf bytes.Buffer
	w := &limitBuffer{buf: &buf, left: 16 << 10}
	// The attach stream ends when the process exits; a cancelled context closes it via Close.
	done := make(chan error, 1)
	go func() { _, err := stdcopy.StdCopy(w, w, att.Reader); done <- err }()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, nil, fmt.Errorf("read exec output: %w", err)
		}
	case <-ctx.Done():
		att.Close()
		<-done
		return 0, nil, ctx.Err()
	}
	// The output ends when the process exits, but the engine records the exit code a moment
	// later: inspect until it reports the process finished.
	for delay := 5 * time.Millisecond; ; delay = min(2*delay, 200*time.Millisecond) {
		info, err := s.Engine.ContainerExecInspect(ctx, created.ID)
		if err != nil {
			return 0, nil, fmt.Errorf("inspect exec: %w", err)
		}
		if !info.Running {
			return info.ExitCode, buf.Bytes(), nil
		}
		select {
		case <-ctx.Done():
			return 0, nil, ctx.Err()
		case <-time.After(delay):
		}
	}
}

// BootstrapKeySource reads the service key bootstrap wrote into its volume, through the Docker
// archive API on the (exited) bootstrap container: the file must be the one regular file of the
// archive, at most 64 KiB. It is a controlplane.KeySource.
func (s Stack) BootstrapKeySource() controlplane.KeySource {
	return func(ctx context.Context, w io.Writer) error {
		id, err := s.oneContainer(ctx, ServiceBootstrap)
		if err != nil || id == "" {
			return errors.Join(errors.New("could not identify bootstrap container"), err)
		}
		rc, _, err := s.Engine.CopyFromContainer(ctx, id, controlplane.BootstrapKeyPath)
		if err != nil {
			return fmt.Errorf("copy %s from the bootstrap container: %w", controlplane.BootstrapKeyPath, err)
		}
		defer rc.Close()
		tr := tar.NewReader(rc)
		want := path.Base(controlplane.BootstrapKeyPath)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("the bootstrap container's archive of %s holds no file %s", controlplane.BootstrapKeyPath, want)
			}
			if err != nil {
				return fmt.Errorf("read archive of %s: %w", controlplane.BootstrapKeyPath, err)
			}
			if strings.TrimSuffix(h.Name, "/") != want {
				continue
			}
			// A symlink planted in the volume must not make occ read something else.
			if h.Typeflag != tar.TypeReg {
				return fmt.Errorf("%s in the bootstrap volume is not a regular file (tar type %q); refusing it", controlplane.BootstrapKeyPath, h.Typeflag)
			}
			if h.Size > 64<<10 {
				return fmt.Errorf("%s in the bootstrap volume is %d bytes; it is not a key file", controlplane.BootstrapKeyPath, h.Size)
			}
			_, err = io.Copy(w, tr)
			return err
		}
	}
}
