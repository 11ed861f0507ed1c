package cli

import (
	"context"
	"errors"
	"io"
	"sync"
)

// errInterrupted ends a read of standard input that a signal (Ctrl-C, SIGTERM) cancelled.
var errInterrupted = errors.New("interrupted while reading standard input")

// interruptibleStdin is standard input as the commands read it: a read blocked on a terminal
// (`occ sandbox validate -` typed without a pipe) ends with errInterrupted once ctx ends, so a
// signal ends every command promptly. The real input is read by a goroutine started on the first
// Read only, so a command that never reads standard input leaves it untouched.
type interruptibleStdin struct {
	ctx  context.Context
	in   io.Reader
	once sync.Once
	pr   *io.PipeReader
}

func newInterruptibleStdin(ctx context.Context, in io.Reader) io.Reader {
	if in == nil {
		return nil
	}
	return &interruptibleStdin{ctx: ctx, in: in}
}

func (s *interruptibleStdin) Read(p []byte) (int, error) {
	s.once.Do(func() {
		pr, pw := io.Pipe()
		s.pr = pr
		go func() {
			_, err := io.Copy(pw, s.in)
			pw.CloseWithError(err)
		}()
		// Closing the writing end ends the read waiting on the reading end.
		context.AfterFunc(s.ctx, func() { pw.CloseWithError(errInterrupted) })
	})
	return s.pr.Read(p)
}
