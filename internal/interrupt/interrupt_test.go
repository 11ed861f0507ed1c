package interrupt

import (
	"context"
	"os"
	"syscall"
	"testing"
)

// The first signal cancels the command and not its rollback; the second cancels both.
func TestTwoStages(t *testing.T) {
	ctx, in := New(context.Background())
	if From(ctx) != in || in.Signal() != nil || in.ExitCode(1) != 1 {
		t.Fatalf("a fresh Interrupts: from %p (want %p), signal %v, exit %d", From(ctx), in, in.Signal(), in.ExitCode(1))
	}
	in.Deliver(os.Interrupt)
	if ctx.Err() == nil || in.Abort().Err() != nil {
		t.Fatalf("after one signal: command %v (want cancelled), rollback %v (want running)", ctx.Err(), in.Abort().Err())
	}
	in.Deliver(syscall.SIGTERM)
	if in.Abort().Err() == nil {
		t.Fatal("a second signal left the rollback running")
	}
	if in.Signal() != os.Interrupt || in.ExitCode(1) != 130 || in.ExitCode(0) != 0 {
		t.Fatalf("signal %v, exit codes %d/%d, want SIGINT, 130 for a failure and 0 for a success", in.Signal(), in.ExitCode(1), in.ExitCode(0))
	}
}

// A command that defers the first signal hears about it and keeps running; the second stops it.
func TestDeferFirst(t *testing.T) {
	ctx, in := New(context.Background())
	var heard []os.Signal
	From(ctx).DeferFirst(func(s os.Signal) { heard = append(heard, s) })
	in.Deliver(syscall.SIGTERM)
	if ctx.Err() != nil || len(heard) != 1 || heard[0] != syscall.SIGTERM {
		t.Fatalf("after a deferred first signal: command %v, heard %v", ctx.Err(), heard)
	}
	in.Deliver(syscall.SIGTERM)
	if ctx.Err() == nil || in.Abort().Err() == nil || len(heard) != 1 {
		t.Fatalf("after the second: command %v, rollback %v, heard %v", ctx.Err(), in.Abort().Err(), heard)
	}
	if in.ExitCode(1) != 143 {
		t.Fatalf("exit code after SIGTERM %d, want 143", in.ExitCode(1))
	}
}

// Without signal handling (a library caller's context), nothing is deferred or aborted.
func TestWithoutInterrupts(t *testing.T) {
	ctx := context.Background()
	From(ctx).DeferFirst(func(os.Signal) { t.Fatal("called") })
	if AbortContext(ctx).Done() != nil {
		t.Fatal("the abort context of a plain context can be cancelled")
	}
	var in *Interrupts
	if in.Signal() != nil || in.ExitCode(2) != 2 {
		t.Fatal("a nil Interrupts reports a signal")
	}
}
