package cli

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/charmbracelet/lipgloss"
	"golang.org/x/term"
)

// stepPrinter renders `occ dev up` progress as one status line per step, in the manner of
// kind: on a terminal a styled "• step …" line is replaced by "✓ step (1.2s)" or "✗ step";
// elsewhere (a pipe, a CI log) only the plain final line is written.
type stepPrinter struct {
	w   io.Writer
	tty bool

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
