package cli

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// run is Execute in a goroutine, bounded: a command that blocks on its input fails the test
// instead of hanging it.
func runBounded(t *testing.T, ctx context.Context, stdin io.Reader, args ...string) (int, string) {
	t.Helper()
	type result struct {
		code int
		out  string
	}
	done := make(chan result, 1)
	go func() {
		var out bytes.Buffer
		code := Execute(ctx, args, stdin, &out, &out)
		done <- result{code, out.String()}
	}()
	select {
	case r := <-done:
		return r.code, r.out
	case <-time.After(30 * time.Second):
		t.Fatalf("occ %s still runs after 30 s: it blocks on its input", strings.Join(args, " "))
		return 0, ""
	}
}

// A named pipe given where occ reads a file (the pin file of `dev pins`, an Installation, a
// revision file, an Agent configuration) is refused at once, naming what it is, where opening
// it used to wait for a writer that no signal could interrupt.
func TestANamedPipeInputIsRefusedAtOnce(t *testing.T) {
	dir := isolate(t)
	fifo := filepath.Join(dir, "input.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"dev", "pins", "show", "--pin-file", fifo},
		{"dev", "pins", "verify", "--pin-file", fifo},
		{"sandbox", "validate", fifo},
		{"sandbox", "render", "--installation", "../../testdata/installation/dev.yaml", "--revision", fifo},
	} {
		code, out := runBounded(t, context.Background(), strings.NewReader(""), args...)
		if code == 0 || !strings.Contains(out, fifo+" is not a regular file (a named pipe)") {
			t.Errorf("occ %s: exit %d\n%s\nwant it refused as a named pipe", strings.Join(args, " "), code, out)
		}
	}
}

// `occ sandbox validate -` typed at a terminal waits for standard input; Ctrl-C (or SIGTERM)
// ends it at once, saying so, instead of leaving only kill -9.
func TestASignalEndsAReadOfStandardInput(t *testing.T) {
	isolate(t)
	pr, pw := io.Pipe() // a terminal nobody types into
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel) // the user presses Ctrl-C
	code, out := runBounded(t, ctx, pr, "sandbox", "validate", "-")
	if code == 0 || !strings.Contains(out, "interrupted while reading standard input") {
		t.Fatalf("validate - after Ctrl-C: exit %d\n%s", code, out)
	}
	// A piped Installation is still read whole.
	code, out = runBounded(t, context.Background(), strings.NewReader("not: [an installation"), "sandbox", "validate", "-")
	if code == 0 || strings.Contains(out, "interrupted") {
		t.Fatalf("validate - of piped input: exit %d\n%s", code, out)
	}
}

// --revision - reads the revision from standard input, as --installation - reads the
// Installation; both at once are refused, since standard input holds one document.
func TestRevisionFromStandardInput(t *testing.T) {
	isolate(t)
	const inst, rev = "../../testdata/installation/dev.yaml", "../../testdata/revisions/codex.yaml"
	data, err := os.ReadFile(rev)
	if err != nil {
		t.Fatal(err)
	}
	fromFile, outFile := runBounded(t, context.Background(), strings.NewReader(""), "sandbox", "render", "--installation", inst, "--revision", rev, "-o", "json")
	fromStdin, outStdin := runBounded(t, context.Background(), strings.NewReader(string(data)), "sandbox", "render", "--installation", inst, "--revision", "-", "-o", "json")
	if fromFile != 0 || fromStdin != 0 || outFile != outStdin {
		t.Fatalf("render of the revision file (exit %d) and of it on standard input (exit %d) differ:\n%s\n---\n%s", fromFile, fromStdin, outFile, outStdin)
	}
	code, out := runBounded(t, context.Background(), strings.NewReader(string(data)), "sandbox", "render", "--installation", "-", "--revision", "-")
	if code != 2 || !strings.Contains(out, "both read standard input") {
		t.Fatalf("both on standard input: exit %d\n%s", code, out)
	}
}
