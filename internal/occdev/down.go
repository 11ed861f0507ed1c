package occdev

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

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

// DownResult says what `down` did.
type DownResult struct {
	StateDirectory string   `json:"stateDirectory"`
	Removed        []string `json:"removed"`
	// NothingRecorded is true when no state directory existed: there was nothing to remove.
	NothingRecorded bool `json:"nothingRecorded,omitempty"`
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
		return &DownResult{StateDirectory: dir, NothingRecorded: true}, nil
	}
	if err != nil {
		return nil, err
	}
	res := &DownResult{StateDirectory: d.Path()}
	before := d.State().Objects
	cerr := cleanup(ctx, d, log)
	after := map[string]bool{}
	for _, o := range d.State().Objects {
		after[o.String()] = true
	}
	for _, o := range before {
		if !after[o.String()] {
			res.Removed = append(res.Removed, o.String())
		}
	}
	if cerr == nil {
		cerr = d.Remove()
	}
	if cerr != nil {
		_ = d.Close()
		return res, fmt.Errorf("cleanup incomplete; preserving %s for recovery: %w\nretry with: %s", d.Path(), cerr, DownCommand(opts.OCCCommand, d.Path()))
	}
	return res, nil
}

// cleanup removes the recorded objects in reverse creation order and forgets each once it is
// gone, so a partial cleanup leaves a record of exactly what remains. Failures are collected
// and cleanup continues with the next object. The cluster itself is released last, and only
// by a provider that created it.
func cleanup(ctx context.Context, d *state.Dir, log io.Writer) error {
	st := d.State()
	if len(st.Objects) == 0 {
		return nil
	}
	prov, err := lookupProvider(st.Cluster.Provider)
	if err != nil {
		return fmt.Errorf("recorded cluster provider: %w", err)
	}
	conn, err := connect(st.Cluster, ownerID(st), d)
	if err != nil {
		return err
	}
	if err := conn.verifyIdentity(ctx); err != nil {
		return err
	}
	var errs []error
	for i := len(st.Objects) - 1; i >= 0; i-- {
		o := st.Objects[i]
		var note string
		var err error
		if o.Type == state.TypeHelmRelease {
			note, err = removeRelease(st.Cluster, o, ownerID(st))
		} else {
			note, err = conn.objects.remove(ctx, o)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if note != "" {
			fmt.Fprintln(log, note)
		} else {
			fmt.Fprintf(log, "removed %s\n", o)
		}
		if err := d.Forget(o); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		if err := prov.Release(ctx, st.Cluster); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
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

// removeRelease uninstalls a recorded Helm release if it is still the one this state installed
// (it carries the state's ownership label); a missing release counts as gone.
func removeRelease(access ClusterAccess, o Object, owner string) (string, error) {
	rel, err := releaseStatus(access, o.Namespace, o.Name)
	if err != nil {
		return "", err
	}
	if rel == nil {
		return "", nil
	}
	if rel.Labels[LabelDevState] != owner {
		return fmt.Sprintf("left %s alone: %v (the release does not carry this state's label)", o, errNotOurs), nil
	}
	return "", uninstallRelease(access, o.Namespace, o.Name, time.Minute)
}
