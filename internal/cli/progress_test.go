package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw/occ/internal/progress"
	"github.com/openclaw/occ/internal/syncbuf"
)

// fakeClock advances only when told, so rendered elapsed times are exact.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// screen replays what a terminal would show for the escape sequences the printer writes:
// "\x1b[nF" (cursor up n lines, to column 0), "\x1b[J" (clear to the end of the screen) and
// newlines. It fails on anything else, so a stray sequence is caught.
func screen(t *testing.T, out string) []string {
	t.Helper()
	var lines []string
	row := 0
	seq := regexp.MustCompile(`^\x1b\[(\d*)([FJ])`)
	for len(out) > 0 {
		if m := seq.FindStringSubmatch(out); m != nil {
			switch m[2] {
			case "F":
				n, _ := strconv.Atoi(m[1])
				row -= n
			case "J":
				lines = lines[:row]
			}
			out = out[len(m[0]):]
			continue
		}
		if strings.HasPrefix(out, "\x1b") {
			t.Fatalf("unexpected escape sequence in %q", out)
		}
		i := strings.IndexAny(out, "\n\x1b")
		if i < 0 {
			i = len(out)
		}
		text := out[:i]
		out = out[i:]
		for len(lines) <= row {
			lines = append(lines, "")
		}
		lines[row] += text
		if strings.HasPrefix(out, "\n") {
			row++
			out = out[1:]
		}
	}
	return lines
}

// A developer pipes `occ dev up` into a CI log while two lanes run side by side: every
// finished step is one plain line with its own time and lane, nothing is redrawn, a
// transfer leaves no trace, and the lane stopped by the other's failure says "cancelled".
func TestProgressPlainLinesOfConcurrentLanes(t *testing.T) {
	var buf bytes.Buffer
	p := newProgressPrinterFor(&buf, false)
	ev := func(k progress.Kind, step, lane string, d time.Duration, err error) {
		p.Event(progress.Event{Kind: k, Step: step, Lane: lane, Elapsed: d, Err: err})
	}
	ev(progress.Begin, "Prepare", "", 0, nil)
	ev(progress.Begin, "Fetch the archive", "artifacts", 0, nil)
	ev(progress.Begin, "Connect to the cluster", "cluster", 0, nil)
	p.Event(progress.Event{Kind: progress.Note, Step: "Fetch the archive", Lane: "artifacts", Transfer: &progress.Transfer{Done: 1, Total: 2}})
	ev(progress.End, "Connect to the cluster", "cluster", 1234*time.Microsecond, errors.New("refused"))
	ev(progress.End, "Fetch the archive", "artifacts", 2345*time.Millisecond, fmt.Errorf("fetch: %w", context.Canceled))
	ev(progress.End, "Prepare", "", 2400*time.Millisecond, errors.New("refused"))
	want := " ✗ Connect to the cluster [cluster] (1ms)\n ✗ Fetch the archive [artifacts] cancelled (2.3s)\n ✗ Prepare (2.4s)\n"
	if buf.String() != want {
		t.Fatalf("plain output:\n%q\nwant\n%q", buf.String(), want)
	}
}

// `occ sandbox provision` waits for a Pod and reports each state it passes: in a log each
// note is its own line, and the finished step follows.
func TestProgressPlainNotes(t *testing.T) {
	var buf bytes.Buffer
	p := newProgressPrinterFor(&buf, false)
	p.Event(progress.Event{Kind: progress.Begin, Step: "wait for Harness Pod"})
	p.Event(progress.Event{Kind: progress.Note, Step: "wait for Harness Pod", Message: "Pending", Elapsed: 300 * time.Millisecond})
	p.Event(progress.Event{Kind: progress.End, Step: "wait for Harness Pod", Elapsed: 1500 * time.Millisecond})
	want := "   wait for Harness Pod: Pending (+300ms)\n ✓ wait for Harness Pod (1.5s)\n"
	if buf.String() != want {
		t.Fatalf("got %q, want %q", buf.String(), want)
	}
}

// On a terminal, two lanes run at once: both running lines are on the screen with their own
// elapsed time and the download bar on the one that downloads; when one ends, its final line
// replaces the region and the other keeps running below it.
func TestProgressTerminalShowsConcurrentRunningLines(t *testing.T) {
	var buf bytes.Buffer
	clock := &fakeClock{t: time.Unix(0, 0)}
	p := newProgressPrinterFor(&buf, true)
	p.now = clock.now
	p.Event(progress.Event{Kind: progress.End, Step: "Claim the private state directory", Elapsed: 3 * time.Millisecond})
	p.Event(progress.Event{Kind: progress.Begin, Step: "Fetch the archive", Lane: "artifacts"})
	clock.t = clock.t.Add(2 * time.Second)
	p.Event(progress.Event{Kind: progress.Begin, Step: "Connect to the cluster", Lane: "cluster"})
	clock.t = clock.t.Add(3 * time.Second)
	p.Event(progress.Event{Kind: progress.Note, Step: "Fetch the archive", Lane: "artifacts", Transfer: &progress.Transfer{Done: 5_000_000, Total: 10_000_000}})
	got := screen(t, buf.String())
	want := []string{
		" ✓ Claim the private state directory (3ms)",
		" • Fetch the archive [artifacts] … [############............] 5.0 / 10.0 MB (5s)",
		" • Connect to the cluster [cluster] … (3s)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("screen while both lanes run:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	p.Event(progress.Event{Kind: progress.End, Step: "Connect to the cluster", Lane: "cluster", Elapsed: 3 * time.Second})
	got = screen(t, buf.String())
	want = []string{
		" ✓ Claim the private state directory (3ms)",
		" ✓ Connect to the cluster [cluster] (3s)",
		" • Fetch the archive [artifacts] … [############............] 5.0 / 10.0 MB (5s)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("screen after one lane ended:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	p.Event(progress.Event{Kind: progress.End, Step: "Fetch the archive", Lane: "artifacts", Elapsed: 6 * time.Second})
	if got := screen(t, buf.String()); len(got) != 3 || got[2] != " ✓ Fetch the archive [artifacts] (6s)" {
		t.Fatalf("final screen: %q", got)
	}
}

// safeClock is a fakeClock the ticker may read while the test moves it.
type safeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *safeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *safeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// A k3d cluster takes many seconds to start and reports nothing meanwhile: on a terminal its
// running line still shows its time passing (the region is redrawn on a tick, not only on
// events), and the redrawing stops once no step runs.
func TestProgressTerminalTicksWhileAStepRuns(t *testing.T) {
	var buf syncbuf.Buffer
	clock := &safeClock{t: time.Unix(0, 0)}
	p := newProgressPrinterFor(&buf, true)
	p.now, p.tick = clock.now, 5*time.Millisecond
	p.Event(progress.Event{Kind: progress.Begin, Step: "Create k3d cluster occ-dev-x", Lane: "k3d"})
	clock.add(7 * time.Second)
	want := " • Create k3d cluster occ-dev-x [k3d] … (7s)"
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := screen(t, buf.String())
		if len(got) == 1 && got[0] == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the running line never showed its time passing: %q, want %q", got, want)
		}
		runtime.Gosched()
	}
	p.Event(progress.Event{Kind: progress.End, Step: "Create k3d cluster occ-dev-x", Lane: "k3d", Elapsed: 7 * time.Second})
	for {
		p.mu.Lock()
		ticking := p.ticking
		p.mu.Unlock()
		if !ticking {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the ticker kept running after the last step ended")
		}
		runtime.Gosched()
	}
	if got := screen(t, buf.String()); len(got) != 1 || got[0] != " ✓ Create k3d cluster occ-dev-x [k3d] (7s)" {
		t.Fatalf("final screen: %q", got)
	}
}
