package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/charmbracelet/lipgloss"
	"golang.org/x/term"

	"github.com/openclaw/occ/internal/occdev/artifacts"
)

// stepPrinter renders `occ dev up` progress as one status line per step, in the manner of
// kind: on a terminal a styled "• step …" line is replaced by "✓ step (1.2s)" or "✗ step";
// elsewhere (a pipe, a CI log) only the plain final line is written.
type stepPrinter struct {
	w   io.Writer
	tty bool
	// current is the running step, redrawn with a download bar while an artifact downloads.
	current string

	ok, fail, running, faint lipgloss.Style
}

func newStepPrinter(w io.Writer) *stepPrinter {
	p := &stepPrinter{w: w, tty: isTerminal(w)}
	if p.tty {
		r := lipgloss.NewRenderer(w)
		p.ok = r.NewStyle().Foreground(lipgloss.Color("2")).Bold(true)
		p.fail = r.NewStyle().Foreground(lipgloss.Color("1")).Bold(true)
		p.running = r.NewStyle().Foreground(lipgloss.Color("4"))
		p.faint = r.NewStyle().Faint(true)
	}
	return p
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func (p *stepPrinter) StepStarted(index, total int, name string) {
	p.current = name
	if p.tty {
		fmt.Fprintf(p.w, " %s %s %s", p.running.Render("•"), name, p.faint.Render("…"))
	}
}

func (p *stepPrinter) StepFinished(index, total int, name string, elapsed time.Duration, err error) {
	mark, style := "✓", p.ok
	if err != nil {
		mark, style = "✗", p.fail
	}
	took := fmt.Sprintf("(%s)", roundDuration(elapsed))
	if p.tty {
		// Erase the running line and write the final one in its place.
		fmt.Fprintf(p.w, "\r\x1b[2K %s %s %s\n", style.Render(mark), name, p.faint.Render(took))
		return
	}
	fmt.Fprintf(p.w, " %s %s %s\n", mark, name, took)
}

// roundDuration keeps durations readable: milliseconds below a second, tenths above.
func roundDuration(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}

// Download redraws the running step's line with a progress bar while an artifact downloads. Only
// a terminal gets it; a log file would fill with redraws.
func (p *stepPrinter) Download(pr artifacts.Progress) {
	if !p.tty {
		return
	}
	const width = 24
	bar, amount := "", fmt.Sprintf("%.1f MB", float64(pr.Received)/1e6)
	if pr.Total > 0 {
		done := int(int64(width) * pr.Received / pr.Total)
		if done > width {
			done = width
		}
		bar = " [" + strings.Repeat("#", done) + strings.Repeat(".", width-done) + "]"
		amount = fmt.Sprintf("%.1f / %.1f MB", float64(pr.Received)/1e6, float64(pr.Total)/1e6)
	}
	fmt.Fprintf(p.w, "\r\x1b[2K %s %s%s %s", p.running.Render("•"), p.current, bar, p.faint.Render(amount))
}
