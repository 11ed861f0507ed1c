package occdev

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/openclaw/occ/internal/occdev/observe"
	"github.com/openclaw/occ/internal/occdev/recorded"
	"github.com/openclaw/occ/internal/occdev/state"
	"github.com/openclaw/occ/internal/occdev/step"
)

// DownOptions are the settings of `occ dev down`.
type DownOptions struct {
	// StateDir is the state directory `up` used (--state-dir, OCC_DEVELOPMENT_STATE_DIRECTORY).
	StateDir string
	// Environment names the environment (--name, OCC_DEVELOPMENT_ENVIRONMENT); empty is the
	// default one.
	Environment string
	// OCCCommand is how the user runs occ, for the printed retry command; default "occ".
	OCCCommand string
	// Log receives one line per removed object and notes on objects left alone.
	Log io.Writer
	// OCCVersion is occ's version as `occ version` prints it, for the debug bundle.
	OCCVersion string
	// NoDiagnose skips the debug bundle a failed down writes beside the state directory it
	// keeps (--no-diagnose).
	NoDiagnose bool
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
// is gone; otherwise the directory stays and the error carries the command that retries, and a
// debug bundle of what is left is written beside it.
func Down(ctx context.Context, opts DownOptions) (*DownResult, error) {
	loc, err := state.Locate(opts.StateDir, opts.Environment)
	if err != nil {
		return nil, err
	}
	dir := loc.Dir
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	d, err := loc.Open()
	if errors.Is(err, state.ErrNotExist) {
		return &DownResult{StateDirectory: dir, Removed: []string{}, LeftAlone: []string{}, NothingRecorded: true}, nil
	}
	if err != nil {
		return nil, err
	}
	defer d.Close()
	// The engine is checked through the connections the cleanup then uses: one connection.
	rec := recorded.Connect(d.State())
	defer rec.Close()
	// Down has no steps: what it removed and left alone, as it logged it, is the bundle's account
	// of the run; state.json then holds what is left.
	var removals bytes.Buffer
	if !opts.NoDiagnose {
		log = &step.SyncWriter{W: io.MultiWriter(log, &removals)}
	}
	adopted := d.State().Adopted
	removed, err := recorded.RemoveAll(ctx, d, rec, log, opts.OCCCommand)
	var res *DownResult
	if removed != nil {
		res = &DownResult{StateDirectory: d.Path(), Removed: removed.Removed, LeftAlone: removed.LeftAlone, DirectoryKept: adopted}
	}
	if err != nil {
		bundle := observe.FailureBundle(ctx, observe.FailedRun{
			BundleInput: observe.BundleInput{Dir: d.Path(), State: d.State(), Env: rec, Version: opts.OCCVersion, Cause: err, Log: removals.Bytes()},
			Command:     "down", Collected: "Collected after the cleanup stopped: state.json holds what is left.", Off: opts.NoDiagnose,
		})
		if bundle != "" {
			err = fmt.Errorf("%w\n%s", err, bundle)
		}
	}
	return res, err
}

// DownCommand is the exact command that finishes a cleanup, shell-quoted (recorded.DownCommand).
func DownCommand(occ, dir string) string { return recorded.DownCommand(occ, dir) }
