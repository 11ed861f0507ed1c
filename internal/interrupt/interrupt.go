// Package interrupt turns Ctrl-C (SIGINT) and SIGTERM into the two stages a long command needs,
// as Docker Compose and Helm do: the first signal cancels the command's context (its waits stop
// and its own rollback begins, on a context of its own); a second signal cancels that rollback
// too, so a user who insists gets their terminal back at once, with the state kept for `occ dev
// down`. A command that must not stop half-way (`down`) defers the first signal to the second.
//
// The process's exit code after a signal is 128 plus the signal's number (130 for SIGINT, 143
// for SIGTERM), as shells report it.
package interrupt

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// Signals are the signals Watch handles.
var Signals = []os.Signal{os.Interrupt, syscall.SIGTERM}

// Interrupts records the signals a process received and the contexts they cancel.
type Interrupts struct {
	mu       sync.Mutex
	received []os.Signal
	// deferFirst, when set, is called for a first signal instead of cancelling the command.
	deferFirst func(os.Signal)

	cancelCommand, cancelAbort context.CancelFunc
	abort                      context.Context
}

type key struct{}

// New returns a command context and the Interrupts that cancel it; deliver signals with Deliver.
// It does not listen to the process's signals (Watch does): tests drive it directly.
func New(parent context.Context) (context.Context, *Interrupts) {
	in := &Interrupts{}
	in.abort, in.cancelAbort = context.WithCancel(context.WithoutCancel(parent))
	ctx, cancel := context.WithCancel(parent)
	in.cancelCommand = cancel
	return context.WithValue(ctx, key{}, in), in
}

// Watch is New, listening to SIGINT and SIGTERM until stop is called.
func Watch(parent context.Context) (ctx context.Context, in *Interrupts, stop func()) {
	ctx, in = New(parent)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, Signals...)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-ch:
				in.Deliver(s)
			case <-done:
				return
			}
		}
	}()
	return ctx, in, func() {
		signal.Stop(ch)
		close(done)
		in.cancelCommand()
		in.cancelAbort()
	}
}

// Deliver handles one signal: the first cancels the command's context (or goes to the deferring
// function a command installed), the second cancels the command and its rollback.
func (in *Interrupts) Deliver(s os.Signal) {
	in.mu.Lock()
	in.received = append(in.received, s)
	n, deferred := len(in.received), in.deferFirst
	in.mu.Unlock()
	if n == 1 && deferred != nil {
		deferred(s)
		return
	}
	in.cancelCommand()
	if n >= 2 {
		in.cancelAbort()
	}
}

// From returns the Interrupts behind ctx, or nil for a context New did not make.
func From(ctx context.Context) *Interrupts {
	in, _ := ctx.Value(key{}).(*Interrupts)
	return in
}

// DeferFirst makes the first signal call note instead of cancelling the command; the second
// cancels it. A nil Interrupts ignores the call.
func (in *Interrupts) DeferFirst(note func(os.Signal)) {
	if in == nil {
		return
	}
	in.mu.Lock()
	in.deferFirst = note
	in.mu.Unlock()
}

// Abort is cancelled by a second signal: a rollback that runs after the first one derives its
// own bounded context from it. For a nil Interrupts (no signal handling) it is never cancelled.
func (in *Interrupts) Abort() context.Context {
	if in == nil {
		return context.Background()
	}
	return in.abort
}

// AbortContext is From(ctx).Abort(): the parent for work that must outlive a first signal.
func AbortContext(ctx context.Context) context.Context { return From(ctx).Abort() }

// Signal is the first signal received, or nil.
func (in *Interrupts) Signal() os.Signal {
	if in == nil {
		return nil
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.received) == 0 {
		return nil
	}
	return in.received[0]
}

// ExitCode is the process's exit code for a command that ended with code: a failure after a
// signal is 128 plus the signal's number; anything else is code.
func (in *Interrupts) ExitCode(code int) int {
	s, ok := in.Signal().(syscall.Signal)
	if code == 0 || !ok {
		return code
	}
	return 128 + int(s)
}
