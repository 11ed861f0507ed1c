package occdev

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/openclaw/occ/internal/occdev/state"
)

// DownOptions are the settings of `occ dev down`.
type DownOptions struct {
	// StateDir is the state directory `up` used (--state-dir, OCC_DEVELOPMENT_STATE_DIRECTORY).
	StateDir string
	// OCCCommand is how the user runs occ, for the printed retry command; default "occ".
	OCCCommand string
	// Log receives one line per removed object and notes on objects left alone.
	Log io.Writer
}

// DownResult says what `down` did. The lists are never null in JSON.
type DownResult struct {
	StateDirectory string `json:"stateDirectory"`
	// Removed lists the recorded objects that are gone now (removed, or already gone).
	Removed []string `json:"removed"`
	// LeftAlone lists recorded names that now belong to something occ did not create; their
	// records were dropped and the objects not touched.
	LeftAlone []string `json:"leftAlone"`
	// NothingRecorded is true when no state directory existed: there was nothing to remove.
	NothingRecorded bool `json:"nothingRecorded,omitempty"`
	// DirectoryKept is true when the state directory existed before `up` claimed it: it was
	// emptied and left in place, since occ did not make it.
	DirectoryKept bool `json:"directoryKept,omitempty"`
}

// Down removes exactly what the recorded state says `up` created, in reverse order, reading
// nothing but the record (the kubeconfig and context it names, never the current ones). It
// keeps going past failures and deletes the state directory only when every recorded object
// is gone; otherwise the directory stays and the error carries the command that retries.
func Down(ctx context.Context, opts DownOptions) (*DownResult, error) {
	dir, err := state.ResolveDir(opts.StateDir)
	if err != nil {
		return nil, err
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	d, err := state.Open(dir)
	if errors.Is(err, state.ErrNotExist) {
		return &DownResult{StateDirectory: dir, Removed: []string{}, LeftAlone: []string{}, NothingRecorded: true}, nil
	}
	if err != nil {
		return nil, err
	}
	// The engine is checked through the connections the cleanup then uses: one connection.
	rec := connectRecorded(d.State())
	defer rec.close()
	if err := rec.sameEngine(ctx, d.Path()); err != nil {
		_ = d.Close()
		return nil, err
	}
	res, cerr := cleanupWith(ctx, d, rec, log, func(state.Object) bool { return false })
	res.DirectoryKept = d.State().Adopted
	if cerr == nil {
		cerr = d.Remove()
	}
	if cerr != nil {
		_ = d.Close()
		return res, fmt.Errorf("cleanup incomplete; preserving %s for recovery: %w\nretry with: %s", d.Path(), cerr, DownCommand(opts.OCCCommand, d.Path()))
	}
	return res, nil
}

// DownCommand is the exact command that finishes a cleanup, shell-quoted.
func DownCommand(occ, dir string) string {
	if occ == "" {
		occ = "occ"
	}
	return shellQuote(occ) + " dev down --state-dir " + shellQuote(dir)
}

// shellQuote quotes s for a POSIX shell when it holds anything but safe characters.
func shellQuote(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+=:,@%", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
