package compose

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/openclaw/occ/internal/occdev/controlplane"
	"github.com/openclaw/occ/internal/occdev/engine"
)

// WorkerReadyCommand is OCE's worker readiness probe: it exits 0 when the worker reported a
// healthy database observation in the last 15 s.
var WorkerReadyCommand = []string{"node", "scripts/production-healthcheck.mjs", "worker", "ready"}

// WorkerReady runs the readiness probe in the worker-kubernetes container through the engine's
// Exec, the equivalent of `compose exec -T worker-kubernetes node
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

// exec runs cmd in the container without a TTY or stdin and returns its exit code and output
// (its stdout, then its stderr), bounded.
func (s Stack) exec(ctx context.Context, id string, cmd []string) (int, []byte, error) {
	res, err := s.Engine.Exec(ctx, id, engine.ExecInput{}, cmd...)
	if err != nil {
		if ctx.Err() != nil {
			// A probe cut short says only that, as the wait that bounds it reports it.
			return 0, nil, ctx.Err()
		}
		return 0, nil, err
	}
	out := []byte(res.Stdout + res.Stderr)
	return res.ExitCode, out[:min(len(out), 16<<10)], nil
}

// BootstrapKeySource reads the service key bootstrap wrote into its volume, through the engine's
// archive of the path (CopyFrom) in the (exited) bootstrap container: the file must be the one
// regular file of the archive, at most 64 KiB. It is a controlplane.KeySource.
func (s Stack) BootstrapKeySource() controlplane.KeySource {
	return func(ctx context.Context, w io.Writer) error {
		id, err := s.oneContainer(ctx, ServiceBootstrap)
		if err != nil || id == "" {
			return errors.Join(errors.New("could not identify bootstrap container"), err)
		}
		rc, err := s.Engine.CopyFrom(ctx, id, controlplane.BootstrapKeyPath)
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
