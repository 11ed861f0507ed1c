package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/lipgloss"
	"golang.org/x/term"

	"github.com/openclaw/occ/internal/progress"
)

// progressPrinter renders the progress events of both command groups (one contract, one
// printer), in the manner of kind's status lines.
//
// On a terminal the steps that are running form a live region at the bottom, one "• step …"
// line each with its own elapsed time (and a bar while it transfers data); concurrent steps of
// different lanes are shown together. When a step ends its line leaves the region as
// "✓ step (1.2s)" or "✗ step (1.2s)", and notes are printed above the region as they come.
//
// Elsewhere (a pipe, a CI log) nothing is ever redrawn: each note with a message and each
// finished step is printed once, as a plain line whose wording does not depend on timing.
// Steps of lanes carry their lane's name, so interleaved lines of concurrent lanes still say
// which lane they belong to.
type progressPrinter struct {
	mu  sync.Mutex
	w   io.Writer
	tty bool
	now func() time.Time

	// running are the steps that have begun and not ended, in the order they began.
	running []*runningStep
	// drawn is how many lines of the live region are on the screen below the cursor's row.
	drawn int
	// tick, when set, redraws the live region this often while steps run, so a long step (a
	// cluster's creation, a pull without progress events) shows its time passing; ticking says
	// the redrawing goroutine runs. It stops once no step runs.
	tick    time.Duration
	ticking bool

	ok, fail, active, faint lipgloss.Style
}

type runningStep struct {
	step, lane string
	start      time.Time
	transfer   *progress.Transfer
}

func newProgressPrinter(w io.Writer) *progressPrinter {
	p := newProgressPrinterFor(w, isTerminal(w))
	p.tick = time.Second
	return p
}

func newProgressPrinterFor(w io.Writer, tty bool) *progressPrinter {
	p := &progressPrinter{w: w, tty: tty, now: time.Now}
	if tty {
		r := lipgloss.NewRenderer(w)
		p.ok = r.NewStyle().Foreground(lipgloss.Color("2")).Bold(true)
		p.fail = r.NewStyle().Foreground(lipgloss.Color("1")).Bold(true)
		p.active = r.NewStyle().Foreground(lipgloss.Color("4"))
		p.faint = r.NewStyle().Faint(true)
	}
	return p
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Sink is the printer as a progress.Sink (for occdev; compute converts it to its Progress).
func (p *progressPrinter) Sink() progress.Sink { return p.Event }

// Event renders one progress event. It is safe for concurrent use.
func (p *progressPrinter) Event(e progress.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var permanent []string
	switch e.Kind {
	case progress.Begin:
		p.running = append(p.running, &runningStep{step: e.Step, lane: e.Lane, start: p.now()})
	case progress.Note:
		if r := p.find(e); r != nil && e.Transfer != nil {
			t := *e.Transfer
			r.transfer = &t
		}
		if e.Message != "" {
			permanent = append(permanent, fmt.Sprintf("   %s%s: %s (+%s)", e.Step, laneSuffix(e.Lane), e.Message, roundDuration(e.Elapsed)))
		}
	case progress.End:
		for i, r := range p.running {
			if r.step == e.Step && r.lane == e.Lane {
				p.running = append(p.running[:i], p.running[i+1:]...)
				break
			}
		}
		permanent = append(permanent, p.finishedLine(e))
	}
	if !p.tty {
		for _, l := range permanent {
			fmt.Fprintln(p.w, l)
		}
		return
	}
	p.redraw(permanent)
	if p.tick > 0 && len(p.running) > 0 && !p.ticking {
		p.ticking = true
		go p.ticker(p.tick)
	}
}

// ticker redraws the running steps every d until none runs.
func (p *progressPrinter) ticker(d time.Duration) {
	t := time.NewTicker(d)
	defer t.Stop()
	for range t.C {
		p.mu.Lock()
		if len(p.running) == 0 {
			p.ticking = false
			p.mu.Unlock()
			return
		}
		p.redraw(nil)
		p.mu.Unlock()
	}
}

func (p *progressPrinter) find(e progress.Event) *runningStep {
	for _, r := range p.running {
		if r.step == e.Step && r.lane == e.Lane {
			return r
		}
	}
	return nil
}

// finishedLine is the one line a finished step leaves: its mark, name, lane and elapsed time.
// A step stopped because another lane failed says so instead of looking like the failure.
func (p *progressPrinter) finishedLine(e progress.Event) string {
	mark, style := "✓", p.ok
	var note string
	if e.Err != nil {
		mark, style = "✗", p.fail
		if errors.Is(e.Err, context.Canceled) {
			note = " cancelled"
		}
	}
	took := fmt.Sprintf("(%s)", roundDuration(e.Elapsed))
	if p.tty {
		took = p.faint.Render(took)
		mark = style.Render(mark)
	}
	return fmt.Sprintf(" %s %s%s%s %s", mark, e.Step, laneSuffix(e.Lane), note, took)
}

func laneSuffix(lane string) string {
	if lane == "" {
		return ""
	}
	return " [" + lane + "]"
}

// redraw erases the live region, prints the permanent lines where it was, and draws the
// running steps again below them.
func (p *progressPrinter) redraw(permanent []string) {
	var b strings.Builder
	if p.drawn > 0 {
		// Cursor to the start of the region's first line, then clear to the end of the screen.
		fmt.Fprintf(&b, "\x1b[%dF\x1b[J", p.drawn)
	}
	for _, l := range permanent {
		b.WriteString(l + "\n")
	}
	for _, r := range p.running {
		b.WriteString(p.runningLine(r) + "\n")
	}
	p.drawn = len(p.running)
	_, _ = io.WriteString(p.w, b.String())
}

func (p *progressPrinter) runningLine(r *runningStep) string {
	line := fmt.Sprintf(" %s %s%s %s", p.active.Render("•"), r.step, laneSuffix(r.lane), p.faint.Render("…"))
	if t := r.transfer; t != nil {
		line += transferBar(*t)
	}
	return line + " " + p.faint.Render(fmt.Sprintf("(%s)", roundDuration(p.now().Sub(r.start)).Truncate(time.Second)))
}

// transferBar is " [####....] 5.0 / 10.0 MB", or just the amount when the size is unknown.
func transferBar(t progress.Transfer) string {
	const width = 24
	if t.Total <= 0 {
		return fmt.Sprintf(" %.1f MB", float64(t.Done)/1e6)
	}
	done := int(int64(width) * t.Done / t.Total)
	done = min(max(done, 0), width)
	return fmt.Sprintf(" [%s%s] %.1f / %.1f MB", strings.Repeat("#", done), strings.Repeat(".", width-done), float64(t.Done)/1e6, float64(t.Total)/1e6)
}

// roundDuration keeps durations readable: milliseconds below a second, tenths above.
func roundDuration(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}
