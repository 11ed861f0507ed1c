package images

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/openclaw/occ/internal/occdev/engine"
)

// Archive is a pinned image taken from a file instead of its registry (`up --bundle`): an image
// archive the engine loads, holding the pinned index and one platform's content.
type Archive struct {
	// From names the file for messages ("bundle occ-bundle-….tar").
	From string
	// Size is the bytes Write writes, for progress.
	Size int64
	// Write writes the archive.
	Write func(w io.Writer) error
}

// OfflineError is an image `up --offline` would have had to pull.
type OfflineError struct {
	Image string
}

func (e *OfflineError) Error() string {
	return fmt.Sprintf("--offline: image %s is neither in the engine nor in a bundle, and pulling it would reach its registry; give a bundle that holds it (--bundle, OCC_DEVELOPMENT_BUNDLE), pull it while online, or drop --offline", e.Image)
}

// load loads the archive into the engine and inspects the image under the pin's digest
// reference: an engine that keeps the pinned index (Docker's containerd store, Podman) holds it
// there as a pull by digest would. The load is recorded before it starts, as a pull is.
func load(ctx context.Context, opts PresentOptions, emit func(Event)) error {
	a := opts.Archive
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(a.Write(&countingWriter{w: pw, report: func(n int64) {
			emit(Event{Status: "loading from " + a.From, Current: n, Total: a.Size})
		}}))
	}()
	if err := opts.Engine.Load(ctx, pr); err != nil {
		pr.CloseWithError(err)
		return fmt.Errorf("load image %s from %s: %w", opts.Image, a.From, err)
	}
	pr.CloseWithError(errors.New("the engine's load ended"))
	return nil
}

// loadedInspect is the loaded image under its digest reference, or the reason the engine does
// not keep it there.
func loadedInspect(ctx context.Context, opts PresentOptions) (Local, error) {
	pin := opts.Image
	l, err := inspect(ctx, opts.Engine, pin, pin.DigestReference(), opts.Platform)
	if engine.IsNotFound(err) {
		return Local{}, fmt.Errorf("the %s engine loaded image %s from %s but does not hold it under %s: an engine on Docker's classic image store names a loaded image by its config alone; switch the containerd image store on (daemon.json \"features\": {\"containerd-snapshotter\": true}; Docker Desktop: Settings → General → Use containerd for pulling and storing images), or run up without --bundle",
			engineName(opts.EngineName), pin, opts.Archive.From, pin.DigestReference())
	}
	return l, err
}

// countingWriter counts what passes and reports every loadProgressStep bytes.
type countingWriter struct {
	w       io.Writer
	n, last int64
	report  func(int64)
}

// loadProgressStep is how many bytes pass between progress reports of a load.
const loadProgressStep = 4 << 20

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	if c.n-c.last >= loadProgressStep {
		c.last = c.n
		c.report(c.n)
	}
	return n, err
}
